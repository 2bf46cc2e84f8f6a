"""ENA's Portal API: what an accession holds, as the archive reports it.

``GET {portal}/filereport?accession=ACC&result=read_run&fields=…&format=tsv`` answers one row per run with its
files (``fastq_ftp``: ``ftp.sra.ebi.ac.uk/vol1/…``, several joined by ``;``), their MD5s and byte counts, and
the accessions and titles around it; ``204 No Content`` when nothing public matches. A report path is fetched
from ``$LABFERRY_ENA_FILES`` (default ``https://ftp.sra.ebi.ac.uk``) plus the path after the host, over HTTPS.
The portal is asked with a few retries: it answers 5xx and resets now and then.
"""

from __future__ import annotations

import contextlib
import contextvars
import csv
import io
import os
import posixpath
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

from backends.core.errors import BadAnswer

from .ids import Accession
from .services import ask

PORTAL = "https://www.ebi.ac.uk/ena/portal/api"
FILES = "https://ftp.sra.ebi.ac.uk"
FTP_FILES = "ftp://ftp.sra.ebi.ac.uk"
ROUTES = ("https", "ftp")
#: the report's columns Ferry asks for: the files of each kind, and what a samplesheet and its reader need
FIELDS = ("run_accession", "experiment_accession", "sample_accession", "secondary_sample_accession",
          "study_accession", "secondary_study_accession", "submission_accession", "tax_id", "scientific_name",
          "instrument_platform", "instrument_model", "library_layout", "library_strategy", "library_source",
          "library_selection", "library_name", "read_count", "base_count", "sample_title", "experiment_title",
          "study_title", "fastq_ftp", "fastq_md5", "fastq_bytes", "submitted_ftp", "submitted_md5",
          "submitted_bytes", "sra_ftp", "sra_md5", "sra_bytes")
KINDS = ("fastq", "submitted", "sra")
#: rows of a report told as they arrive (``rows_arriving``), and the longest line looked at for them
ROWS_AHEAD = 64
LINE_MOST = 64 * 1024
_ARRIVING: contextvars.ContextVar[Callable[[dict], None] | None] = contextvars.ContextVar("arriving", default=None)


@dataclass(frozen=True)
class RemoteFile:
    run: str
    name: str  # ENA's file name: RUN_1.fastq.gz, RUN_2.fastq.gz, RUN.fastq.gz
    url: str
    md5: str
    size: int
    read: int | None  # 1 or 2 for paired reads, None for a single file
    other_url: str = ""  # the same file by the other route (ftp:// for https://, and the other way round)
    source: str = "ena"  # ena, or ncbi (a run's .sra located by NCBI's SRA Data Locator: ``ncbi.py``)


@dataclass
class Plan:
    label: str  # the accession, or the list it came from
    kind: str  # fastq | submitted | sra
    route: str = "https"  # which of ROUTES is tried first; the other when it fails for a file
    rows: list[dict] = field(default_factory=list)  # the whole report, for metadata.tsv
    files: list[RemoteFile] = field(default_factory=list)
    without_files: list[str] = field(default_factory=list)  # runs that have no file of this kind
    nothing_for: list[str] = field(default_factory=list)  # accessions ENA has nothing public for (204)
    #: GEO accessions and what they were asked as in ENA (GSE1 → SRP1); a GEO accession linking no reads, to []
    geo: dict[str, list[str]] = field(default_factory=dict)
    subseries: dict[str, list[str]] = field(default_factory=dict)  # a GEO SuperSeries without reads: its series
    source: str = "auto"  # auto (ENA, then NCBI for what ENA lacks), ena, or ncbi (``ncbi.py``)
    from_ncbi: list[str] = field(default_factory=list)  # runs whose .sra comes from NCBI
    notes: list[str] = field(default_factory=list)  # sentences to say before fetching (a service that failed)
    converted: dict[str, list[RemoteFile]] = field(default_factory=dict)  # run → its FASTQ made from its .sra

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def runs(self) -> int:
        return len({r.get("run_accession") for r in self.rows})

    def files_by_run(self) -> dict[str, list[RemoteFile]]:
        """Each run's files, in the plan's order (a plain address from a list under "")."""
        by_run: dict[str, list[RemoteFile]] = {}
        for f in self.files:
            by_run.setdefault(f.run, []).append(f)
        return by_run

    def add(self, rows: list[dict], *, with_files: bool = True) -> None:
        """A report's rows and their files of this plan's kind (a run two accessions share, once); without
        ``with_files`` (``--source ncbi``) every run is one whose file comes from NCBI."""
        bases = route_bases(self.route)
        known = {r.get("run_accession") for r in self.rows}
        for row in rows:
            run = row.get("run_accession", "")
            if run in known:
                continue
            known.add(run)
            self.rows.append(row)
            files = kind_files(row, self.kind) if with_files else []
            if not files:
                self.without_files.append(run)
                continue
            for path, md5, size in files:
                name = posixpath.basename(path)
                self.files.append(RemoteFile(
                    run=run, name=name, url=files_url(bases[0], path), md5=md5, size=size,
                    read=_read_number(name, run) if len(files) > 1 else None, other_url=files_url(bases[1], path)))

    def add_url(self, url: str) -> None:
        """A plain address from a list: fetched as it is, checked by size and what the server publishes."""
        self.files.append(RemoteFile(run="", name=posixpath.basename(urllib.parse.urlsplit(url).path), url=url,
                                     md5="", size=0, read=None))


def kind_files(row: dict, kind: str) -> list[tuple[str, str, int]]:
    """A report row's files of ``kind``: (path as the report gives it, its MD5, its bytes; "" and 0 if not given)."""
    paths = [p for p in (row.get(f"{kind}_ftp") or "").split(";") if p]
    md5s = (row.get(f"{kind}_md5") or "").split(";")
    sizes = (row.get(f"{kind}_bytes") or "").split(";")
    return [(path, md5s[i] if i < len(md5s) else "", int(sizes[i]) if i < len(sizes) and sizes[i].isdigit() else 0)
            for i, path in enumerate(paths)]


@contextlib.contextmanager
def rows_arriving(on_row: Callable[[dict], None] | None):
    """While inside, ``on_row(row)`` is told each of the first ``ROWS_AHEAD`` rows of a report as its line
    arrives, before the whole answer is in (a thousand runs' report takes two more round trips on a long path):
    what the command can start meanwhile (``app/cli/accession``)."""
    token = _ARRIVING.set(on_row)
    try:
        yield
    finally:
        _ARRIVING.reset(token)


class _Rows:
    """A TSV report's first rows from its bytes as they arrive (the first line names the columns); a line
    longer than ``LINE_MOST`` ends the look, so a hostile answer costs no more than that."""

    def __init__(self, on_row: Callable[[dict], None]) -> None:
        self.on_row, self.rest, self.columns, self.told = on_row, b"", None, 0

    def __call__(self, part: bytes) -> None:
        if self.told >= ROWS_AHEAD:
            return
        lines = (self.rest + part).split(b"\n")
        self.rest = lines.pop()  # not whole yet
        for line in lines:
            if len(line) > LINE_MOST:
                self.told = ROWS_AHEAD
                return
            cells = line.rstrip(b"\r").decode("utf-8", "replace").split("\t")
            if self.columns is None:
                self.columns = cells
            elif self.told < ROWS_AHEAD:
                self.told += 1
                self.on_row(dict(zip(self.columns, cells, strict=False)))  # a short line: its fields only
        if len(self.rest) > LINE_MOST:
            self.told = ROWS_AHEAD


def portal_base() -> str:
    return os.environ.get("LABFERRY_ENA_PORTAL", PORTAL).rstrip("/")


def route_bases(first: str) -> tuple[str, str]:
    """The files' two routes, ``first`` (https or ftp) first: ``LABFERRY_ENA_FILES`` for HTTPS and
    ``LABFERRY_ENA_FTP`` for FTP (ENA serves the same tree both ways)."""
    https = os.environ.get("LABFERRY_ENA_FILES", FILES).rstrip("/")
    ftp = os.environ.get("LABFERRY_ENA_FTP", FTP_FILES).rstrip("/")
    return (https, ftp) if first == "https" else (ftp, https)


def report(accession: Accession, *, ca_file: str | None = None, sleep=time.sleep) -> list[dict]:
    """The portal's rows for ``accession`` (an empty list when it answered 204: nothing public matches)."""
    portal = portal_base()
    query = urllib.parse.urlencode({"accession": accession.text, "result": "read_run", "fields": ",".join(FIELDS),
                                    "format": "tsv", "limit": 0})
    on_row = _ARRIVING.get()
    body = ask(f"{portal}/filereport?{query}", "ENA's portal", accession.text, "LABFERRY_ENA_PORTAL",
               ca_file=ca_file, sleep=sleep, arriving=(lambda: _Rows(on_row)) if on_row else None)
    if not body:
        return []
    try:
        return parse_tsv(body.decode("utf-8"))
    except (UnicodeDecodeError, csv.Error) as exc:  # not ENA's report: a sentence, not a traceback
        raise BadAnswer(f"ENA's portal answered {accession.text} with a report Ferry cannot read ({exc}). Try "
                        "again later; if it goes on, set LABFERRY_ENA_PORTAL to a mirror.") from None


def parse_tsv(text: str) -> list[dict]:
    return [dict(row) for row in csv.DictReader(io.StringIO(text), delimiter="\t")]


def files_url(base: str, path: str) -> str:
    """``ftp.sra.ebi.ac.uk/vol1/fastq/…`` (as the report gives it, host first) under ``base``."""
    parsed = urllib.parse.urlsplit(path if "://" in path else f"//{path}")
    return base + urllib.parse.quote(parsed.path)


def _read_number(name: str, run: str) -> int | None:
    for read in (1, 2):
        if name.startswith(f"{run}_{read}."):
            return read
    return None
