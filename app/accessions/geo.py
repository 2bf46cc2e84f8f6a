"""GEO series and samples (GSE…, GSM…) to the SRA accessions ENA's report takes, through NCBI's E-utilities.

GEO keeps the reads of a series in SRA. ``esearch`` (database ``gds``, the accession in the ``ACCN`` field and
the entry type in ``ETYP``) gives the GEO entry's id; ``esummary`` of it lists, under ``extrelations``, the SRA
object GEO links: the study (SRP…) of a series, the experiment (SRX…) of a sample. ENA mirrors SRA, so that
accession then goes to ENA's portal as any other. A series with no SRA link (processed data only, or a
SuperSeries whose reads sit under its sub-series) is said so in a sentence with the sub-series to ask for.
The endpoint is ``LABFERRY_NCBI_EUTILS`` (default NCBI's). Calls are paced to E-utilities' limit, 3 a second,
or 10 with an API key in ``NCBI_API_KEY`` (sent as ``api_key``); a 429 with ``Retry-After`` is waited out.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass

from backends.core.errors import BadRequest, Transient

from .ids import Accession, parse
from .services import ask

EUTILS = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
SERVICE = "NCBI's E-utilities"


@dataclass
class GeoLinks:
    geo: str
    sra: list[Accession]  # what ENA is asked for instead
    subseries: list[str]  # a SuperSeries' own series, when it links no reads itself


def endpoint() -> str:
    return os.environ.get("LABFERRY_NCBI_EUTILS", EUTILS).rstrip("/")


def sra_for(accession: Accession, *, ca_file: str | None = None, sleep=time.sleep) -> GeoLinks:
    """The SRA accessions GEO links to a series or sample (none: ``GeoLinks.sra`` is empty)."""
    entry = "gse" if accession.kind == "geo-series" else "gsm"
    found = _json("esearch.fcgi", {"db": "gds", "term": f"{accession.text}[ACCN] AND {entry}[ETYP]",
                                   "retmode": "json"}, accession, ca_file, sleep)
    ids = (found.get("esearchresult") or {}).get("idlist") or []
    if not ids:
        return GeoLinks(accession.text, [], [])
    summary = _json("esummary.fcgi", {"db": "gds", "id": ",".join(ids), "retmode": "json"}, accession, ca_file,
                    sleep).get("result") or {}
    sra: list[Accession] = []
    subseries: list[str] = []
    for uid in summary.get("uids") or ids:
        doc = summary.get(uid) or {}
        if str(doc.get("accession", "")).upper() != accession.text:
            continue  # a search may also match entries that only mention the accession
        for link in doc.get("extrelations") or []:
            target = str(link.get("targetobject", "")).strip()
            if str(link.get("relationtype", "")).upper() == "SRA" and target:
                try:
                    found_accession = parse(target)
                except BadRequest:
                    continue  # GEO links something ENA does not take (an SRA search URL): left out
                if found_accession not in sra:
                    sra.append(found_accession)
        subseries += [str(r.get("targetobject")) for r in doc.get("relations") or []
                      if str(r.get("relationtype", "")).lower() == "superseries of" and r.get("targetobject")]
    return GeoLinks(accession.text, sra, subseries)


#: E-utilities' limits: 3 requests a second from one address, 10 with an API key (``NCBI_API_KEY``)
RATE_WITHOUT_KEY, RATE_WITH_KEY = 3.0, 10.0
_pace_lock = threading.Lock()
_next_call = 0.0


def pace(sleep=time.sleep, clock=time.monotonic) -> float:
    """Wait until E-utilities may be asked again (its limit, shared by every thread of this process); returns the
    wait. NCBI blocks an address that asks faster."""
    global _next_call
    gap = 1.0 / (RATE_WITH_KEY if os.environ.get("NCBI_API_KEY") else RATE_WITHOUT_KEY)
    with _pace_lock:
        now = clock()
        wait = max(0.0, _next_call - now)
        _next_call = max(now, _next_call) + gap
    if wait:
        sleep(wait)
    return wait


def _json(tool: str, params: dict, accession: Accession, ca_file, sleep) -> dict:
    key = os.environ.get("NCBI_API_KEY", "").strip()
    query = urllib.parse.urlencode({**params, "tool": "labferry", **({"api_key": key} if key else {})})
    pace(sleep)
    body = ask(f"{endpoint()}/{tool}?{query}", SERVICE, accession.text, "LABFERRY_NCBI_EUTILS", ca_file=ca_file,
               sleep=sleep)
    try:
        return json.loads(body or b"{}")
    except ValueError:
        raise Transient(f"{SERVICE} answered {accession.text} with something that is not JSON. Try again later, or "
                        "set LABFERRY_NCBI_EUTILS to a mirror.") from None
