"""NCBI as a second source: a run's ``.sra`` file, located by NCBI's SRA Data Locator (SDL).

ENA mirrors SRA, but not always all of it: a run may not be mirrored yet, may lag NCBI by days, or may be
offered only as ``.sra``. ``prefetch`` asks the SRA Data Locator where a run's files are:
``GET {sdl}?acc=RUN&accept-alternate-locations=yes`` answers (version 2) one ``result`` per accession, with its
``status`` (200, or 404 when NCBI has no such run) and its ``files``: each with a ``type`` (``sra``), a
``name`` (``SRR1``, ``SRR1.lite`` for SRA Lite, without base qualities), ``size``, ``md5`` and ``locations``,
each a ``link`` with the ``service`` that holds it (``ncbi``, ``s3``, ``gs``) and whether it needs payment
(``payRequired``) or a restore from cold storage (``rehydrationRequired``). Ferry takes the normalized file
(with qualities) before the lite one, and a free link that needs no restore, NCBI's own first; the file then
comes with parallel ranges and is checked against that size and MD5 like ENA's. The endpoint is
``LABFERRY_NCBI_SDL`` (default NCBI's).
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse

from backends.core.errors import BadAnswer

from .ena import RemoteFile
from .services import ask

SDL = "https://locate.ncbi.nlm.nih.gov/sdl/2/retrieve"
SERVICE = "NCBI's SRA Data Locator"
SOURCES = ("auto", "ena", "ncbi")
#: the services whose links Ferry fetches, in the order it prefers them
SERVICES = ("ncbi", "sra-ncbi", "s3", "gs")


def endpoint() -> str:
    return os.environ.get("LABFERRY_NCBI_SDL", SDL).rstrip("/")


def locate(run: str, *, ca_file: str | None = None, sleep=time.sleep) -> RemoteFile | None:
    """The run's ``.sra`` file as NCBI serves it, or None when NCBI has no such run (or no free link to it)."""
    query = urllib.parse.urlencode({"acc": run, "accept-alternate-locations": "yes"})
    body = ask(f"{endpoint()}?{query}", SERVICE, run, "LABFERRY_NCBI_SDL", ca_file=ca_file, sleep=sleep)
    if not body:
        return None
    try:
        answer = json.loads(body)
    except ValueError:
        raise BadAnswer(f"{SERVICE} answered something that is not JSON about {run}; try again later, or set "
                        "LABFERRY_NCBI_SDL to a mirror.") from None
    return choose(answer, run)


def choose(answer: dict, run: str) -> RemoteFile | None:
    """The best ``.sra`` file of ``run`` in an SDL answer (normalized before lite, a free link, NCBI's first)."""
    if not isinstance(answer, dict) or str(answer.get("version", "")).split(".")[0] != "2":
        raise BadAnswer(f"{SERVICE} answered in a form Ferry does not know (not version 2) about {run}.")
    candidates = []
    for result in answer.get("result") or []:
        if str(result.get("status", "")) != "200":
            continue
        for f in result.get("files") or []:
            if f.get("type") != "sra" or not str(f.get("md5", "")) or not str(f.get("size", "")).isdigit():
                continue
            lite = bool(f.get("noqual")) or ".lite" in str(f.get("name", "")) or ".noqual" in str(f.get("name", ""))
            for where in f.get("locations") or []:
                link = str(where.get("link", ""))
                service = str(where.get("service", ""))
                if (not link.startswith(("https://", "http://")) or where.get("payRequired")
                        or where.get("rehydrationRequired")):
                    continue
                rank = SERVICES.index(service) if service in SERVICES else len(SERVICES)
                candidates.append((lite, rank, f, link))
    if not candidates:
        return None
    lite, _, f, link = min(candidates, key=lambda c: (c[0], c[1]))
    return RemoteFile(run=run, name=f"{run}.lite.sra" if lite else f"{run}.sra", url=link,
                      md5=str(f["md5"]).lower(), size=int(f["size"]), read=None, source="ncbi")
