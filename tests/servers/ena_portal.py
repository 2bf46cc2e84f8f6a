"""A stand-in for ENA's Portal API (a public service the tests must not reach), with the files on a real nginx.

It answers ``/filereport?accession=…&result=read_run&fields=…&format=tsv|json`` as ENA documents it: one row
per run with the fields asked for, in that order (TSV with a header line, or a JSON list of objects), ``204 No
Content`` when nothing matches, and for an accession of a study, project, sample or experiment every run that
belongs to it. It also stands in for NCBI's E-utilities (``/entrez/eutils/esearch.fcgi`` and ``esummary.fcgi``
on database ``gds``, JSON as NCBI documents it): ``add_geo`` makes a GEO series or sample whose summary links an
SRA study or experiment under ``extrelations``, or a SuperSeries whose ``relations`` name its series.
``fail_first[ACC] = N`` makes the first N queries for ACC answer 503, as the portal does now and then
(``retry_after`` seconds in a ``Retry-After`` header, when set); ``slow[ACC] = S`` makes every query for ACC
answer after S seconds, as the portal does for a project of thousands of runs. The files themselves are
written under ``nginx.data/vol1/…``, where the report's ``ftp.sra.ebi.ac.uk/vol1/…`` paths lead once
``LABFERRY_ENA_FILES`` names the nginx.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

HOST = "ftp.sra.ebi.ac.uk"


class Portal:
    def __init__(self, files_root: Path, listen: str = "127.0.0.1", port: int = 0) -> None:
        self.files_root, self.listen = files_root, listen
        self.runs: list[dict] = []
        self.fail_first: dict[str, int] = {}
        self.retry_after: int | None = None
        self.slow: dict[str, float] = {}
        #: accession → (pause after the column names, rows sent then, pause before the rest): an answer that
        #: arrives in parts, as a long path brings a large report; ``rows_sent`` is set before the last pause
        self.trickle: dict[str, tuple[float, int, float]] = {}
        self.rows_sent = threading.Event()
        self.queries: list[str] = []
        self.geo: dict[str, dict] = {}  # GEO accession → its esummary document
        self.sra: dict[str, dict] = {}  # run → its file entry in NCBI's SRA Data Locator
        self.sdl_fail_first: dict[str, int] = {}  # run → how many SDL queries answer 429 first
        self.sdl_queries: list[str] = []
        self.eutils_asked: list[dict] = []  # every E-utilities query, whole (its api_key, say)
        self.server = ThreadingHTTPServer((listen, port), self._handler())
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.listen}:{self.port}/ena/portal/api"

    @property
    def eutils(self) -> str:
        return f"http://{self.listen}:{self.port}/entrez/eutils"

    @property
    def sdl(self) -> str:
        return f"http://{self.listen}:{self.port}/sdl/2/retrieve"

    def add_ncbi_run(self, run: str, data: bytes, files_base: str, *, lite: bool = False,
                     wrong_md5: bool = False) -> None:
        """A run NCBI's SRA Data Locator knows: its .sra (``data``) written where nginx (``files_base``) serves
        it, as NCBI's own service (``sra-ncbi``) would, beside a paid cloud copy Ferry must not take."""
        rel = f"sos1/sra-pub-run-1/{run}/{run}.1"
        target = self.files_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        if os.geteuid() == 0:
            for folder in self.files_root.rglob("*"):
                os.chmod(folder, 0o755 if folder.is_dir() else 0o644)
        md5 = "0" * 32 if wrong_md5 else hashlib.md5(data).hexdigest()
        self.sra[run] = {
            "object": f"srapub|{run}", "accession": run, "type": "sra", "name": f"{run}.lite" if lite else run,
            "size": len(data), "md5": md5, "modificationDate": "2026-01-01T00:00:00Z", "noqual": lite,
            "locations": [
                {"link": f"https://sra-pub-run-odp.s3.amazonaws.invalid/sra/{run}/{run}", "service": "s3",
                 "region": "us-east-1", "payRequired": True},
                {"link": f"{files_base.rstrip('/')}/{rel}", "service": "sra-ncbi", "region": "be-md"},
            ]}

    def add_geo(self, accession: str, *, sra: str | None = None, superseries_of: list[str] = ()) -> None:
        """A GEO entry; ``sra``: the SRA study (series) or experiment (sample) it links."""
        uid = str(200000000 + len(self.geo) + 1) if accession.startswith("GSE") else str(300000000 + len(self.geo))
        self.geo[accession] = {
            "uid": uid, "accession": accession, "entrytype": accession[:3], "title": f"GEO entry {accession}",
            "extrelations": [{"relationtype": "SRA", "targetobject": sra,
                              "targetftplink": f"ftp://ftp-trace.ncbi.nlm.nih.gov/sra/sra-instant/reads/{sra}/"}]
            if sra else [],
            "relations": [{"relationtype": "SuperSeries of", "targetobject": s} for s in superseries_of],
        }

    def start(self) -> Portal:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_run(self, run: str, *, experiment: str, sample: str, study: str, project: str, layout: str,
                fastq: list[tuple[str, bytes]], submitted: list[tuple[str, bytes]] = (), wrong_md5: str | None = None,
                title: str = "", fields: dict | None = None) -> None:
        """A run and its files (name, content), written where nginx serves them; ``wrong_md5``: the name of
        a file whose published MD5 is not its content's (a damaged archive copy, or a stale report); ``fields``:
        report fields other than the defaults (``read_count``, ``base_count``, ``library_source``, …)."""
        row = {"run_accession": run, "experiment_accession": experiment, "sample_accession": sample,
               "secondary_sample_accession": sample.replace("SAMEA", "ERS"), "study_accession": project,
               "secondary_study_accession": study, "submission_accession": "ERA0000001", "tax_id": "9606",
               "scientific_name": "Homo sapiens", "instrument_platform": "ILLUMINA",
               "instrument_model": "Illumina NovaSeq 6000", "library_layout": layout, "library_strategy": "WGS",
               "library_source": "GENOMIC", "library_selection": "RANDOM", "library_name": f"lib-{run}",
               "read_count": "1000", "base_count": "150000", "sample_title": title or f"sample of {run}",
               "experiment_title": f"experiment of {run}", "study_title": "A stand-in study", **(fields or {})}
        for kind, files in (("fastq", fastq), ("submitted", submitted)):
            paths, md5s, sizes = [], [], []
            for name, data in files:
                rel = f"vol1/{kind}/{run[:6]}/{run}/{name}"
                target = self.files_root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                paths.append(f"{HOST}/{rel}")
                md5 = hashlib.md5(data).hexdigest()
                md5s.append("0" * 32 if name == wrong_md5 else md5)
                sizes.append(str(len(data)))
            row |= {f"{kind}_ftp": ";".join(paths), f"{kind}_md5": ";".join(md5s), f"{kind}_bytes": ";".join(sizes)}
        row |= {"sra_ftp": "", "sra_md5": "", "sra_bytes": ""}
        self.runs.append(row)
        if os.geteuid() == 0:
            for folder in self.files_root.rglob("*"):
                os.chmod(folder, 0o755 if folder.is_dir() else 0o644)

    def matching(self, accession: str) -> list[dict]:
        keys = ("run_accession", "experiment_accession", "sample_accession", "secondary_sample_accession",
                "study_accession", "secondary_study_accession")
        return [r for r in self.runs if accession in (r.get(k) for k in keys)]

    def _handler(self):
        portal = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path.startswith("/entrez/eutils/"):
                    return self._eutils(parts.path.rsplit("/", 1)[-1], query)
                if parts.path == "/sdl/2/retrieve":
                    return self._sdl(query)
                if not parts.path.endswith("/filereport") or query.get("result") != "read_run":
                    return self._send(400, b"unsupported query", "text/plain")
                accession = query.get("accession", "")
                portal.queries.append(accession)
                if portal.fail_first.get(accession, 0) > 0:
                    portal.fail_first[accession] -= 1
                    later = {"Retry-After": str(portal.retry_after)} if portal.retry_after is not None else {}
                    return self._send(503, b"Service Unavailable", "text/plain", later)
                if accession in portal.slow:
                    time.sleep(portal.slow[accession])
                rows = portal.matching(accession)
                if not rows:
                    return self._send(204, b"", "text/plain")
                fields = [f for f in query.get("fields", "run_accession").split(",") if f]
                if "run_accession" not in fields:
                    fields.insert(0, "run_accession")
                if query.get("format") == "json":
                    body = json.dumps([{f: r.get(f, "") for f in fields} for r in rows]).encode()
                    return self._send(200, body, "application/json")
                lines = ["\t".join(fields)] + ["\t".join(r.get(f, "") for f in fields) for r in rows]
                if accession in portal.trickle:
                    return self._trickle(lines, *portal.trickle[accession])
                return self._send(200, ("\n".join(lines) + "\n").encode(), "text/plain")

            def _trickle(self, lines: list[str], first_pause: float, rows: int, last_pause: float) -> None:
                parts = [lines[:1], lines[1:1 + rows], lines[1 + rows:]]
                body = [("".join(line + "\n" for line in part)).encode() for part in parts]
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(sum(len(b) for b in body)))
                self.end_headers()
                for at, (part, pause) in enumerate(zip(body, (first_pause, last_pause, 0.0), strict=True)):
                    self.wfile.write(part)
                    self.wfile.flush()
                    if at == 1:
                        portal.rows_sent.set()
                    time.sleep(pause)

            def _sdl(self, query: dict) -> None:
                """SDL version 2: one result per accession, status 404 and no files when NCBI has no such run."""
                run = query.get("acc", "")
                portal.sdl_queries.append(run)
                if portal.sdl_fail_first.get(run, 0) > 0:
                    portal.sdl_fail_first[run] -= 1
                    return self._send(429, b"Too Many Requests", "text/plain", {"Retry-After": "1"})
                found = portal.sra.get(run)
                result = {"bundle": run, "status": 200, "msg": "ok", "files": [found]} if found else \
                    {"bundle": run, "status": 404, "msg": "No data at given location.rel"}
                body = json.dumps({"version": "2", "result": [result]}).encode()
                return self._send(200, body, "application/json")

            def _eutils(self, tool: str, query: dict) -> None:
                portal.eutils_asked.append(query)
                if query.get("db") != "gds" or query.get("retmode") != "json":
                    return self._send(400, b"unsupported query", "text/plain")
                if tool == "esearch.fcgi":  # TERM[ACCN] AND gse[ETYP]
                    term = query.get("term", "")
                    accession = term.split("[", 1)[0].strip()
                    portal.queries.append(accession)
                    doc = portal.geo.get(accession)
                    wanted = term.rsplit(" AND ", 1)[-1].split("[", 1)[0].strip().upper() if " AND " in term else None
                    ids = [doc["uid"]] if doc and (wanted is None or doc["entrytype"] == wanted) else []
                    body = {"header": {"type": "esearch", "version": "0.3"},
                            "esearchresult": {"count": str(len(ids)), "retmax": str(len(ids)), "retstart": "0",
                                              "idlist": ids}}
                elif tool == "esummary.fcgi":
                    uids = query.get("id", "").split(",")
                    docs = {d["uid"]: d for d in portal.geo.values() if d["uid"] in uids}
                    body = {"header": {"type": "esummary", "version": "0.3"}, "result": {"uids": list(docs), **docs}}
                else:
                    return self._send(400, b"unsupported tool", "text/plain")
                return self._send(200, json.dumps(body).encode(), "application/json")

            def _send(self, status: int, body: bytes, kind: str, headers: dict | None = None) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if status != 204:
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 204:
                    self.wfile.write(body)

        return Handler


def report_row(run: str, files: list[tuple[str, Path]], **fields: str) -> dict:
    """A run's report row for files already where nginx serves them (``rel`` path, local path), for benchmarks."""
    paths = [f"{HOST}/{rel}" for rel, _ in files]
    md5s = []
    for _, local in files:
        digest = hashlib.md5()
        with open(local, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
        md5s.append(digest.hexdigest())
    return {"run_accession": run, **fields, "fastq_ftp": ";".join(paths), "fastq_md5": ";".join(md5s),
            "fastq_bytes": ";".join(str(local.stat().st_size) for _, local in files)}


if __name__ == "__main__":  # python -m tests.servers.ena_portal ROWS.json HOST PORT: serve rows (benchmarks)
    import sys

    served = Portal(Path("."), listen=sys.argv[2], port=int(sys.argv[3]))
    served.runs = json.loads(Path(sys.argv[1]).read_text())
    served.server.serve_forever()
