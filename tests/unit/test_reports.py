"""Reports: every figure in the HTML, CSV, JSON and PDF matches the store; hostile names stay inert."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser

import pytest

from app.reports import gather, write_report
from app.reports.tabular import CSV_COLUMNS, safe_cell
from app.store import Store
from app.ui.report_pdf import renderers

HOSTILE = '<script>alert(1)</script>=HYPERLINK("http://evil")&amp;.bam'


def fill(store: Store) -> list[int]:
    """A month of realistic history: two sites, successes and a failure, notes and TCP settings."""
    now = time.time()
    tcp = json.dumps({"available": True, "congestion": "cubic", "rmem_max": 212992,
                      "tcp_rmem": [4096, 131072, 6291456]})
    rows = [
        dict(source="sftp://jdoe@dtn.genome.example/data/run42/sample_1.bam", dest="/data/sample_1.bam",
             backend="ssh", outcome="done", bytes=53_687_091_200, seconds=512.25, throughput_mbps=838.4, streams=16,
             retries=1, sha256="ab" * 32, verified=1, verify_method="sha256 computed by the server matched",
             peer_host="dtn.genome.example", rtt_ms=48.7, notes=json.dumps(["16 streams for 49 ms"]), tcp=tcp,
             started=now - 86400 * 3, finished=now - 86400 * 3 + 512),
        dict(source="https://files.lab.example/ref/hg38.fa.gz", dest=f"/data/{HOSTILE}", backend="https",
             outcome="done", bytes=983_000_000, seconds=9.5, throughput_mbps=827.8, streams=32, retries=0,
             sha256="cd" * 32, verified=0, verify_method="sha256 computed; size checked",
             peer_host="files.lab.example", rtt_ms=101.2, tcp=tcp, started=now - 86400, finished=now - 86400 + 10),
        dict(source=f"sftp://jdoe@dtn.genome.example/data/{HOSTILE}", dest="/data/x", backend="ssh",
             outcome="failed", bytes=1000, seconds=3.0, retries=3, error="-cmd|' /C calc'!A0 The server refused.",
             error_kind="permission-denied", peer_host="dtn.genome.example", started=now - 3600, finished=now - 3590),
        dict(source="https://old.example/x", dest="/data/old", backend="https", outcome="done", bytes=10,
             seconds=1.0, throughput_mbps=0.0, streams=1, peer_host="old.example", started=now - 86400 * 90,
             finished=now - 86400 * 90 + 1),
    ]
    ids = [store.history.add(**r) for r in rows]
    store.benchmarks.add(job_id=None, backend="ssh", peer_host="dtn.genome.example", streams=16,
                         bytes=53_687_091_200, seconds=512.25, rtt_ms=48.7, started=now - 86400 * 3)
    store.conn.execute("INSERT INTO sites (name, protocol, host, user, created, updated) VALUES (?,?,?,?,?,?)",
                       ("genome-center", "sftp", "dtn.genome.example", "jdoe", now, now))
    return ids


class Cells(HTMLParser):
    """Collects ``data-f`` cells by row id, ``data-k`` cells, all text, and any live markup."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[int, dict[str, str]] = {}
        self.keys: dict[str, str] = {}
        self.tags: list[str] = []
        self._row, self._field, self._key = None, None, None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "tr" and "data-id" in a:
            self._row = int(a["data-id"])
            self.rows[self._row] = {}
        if tag == "td":
            self._field, self._key = a.get("data-f"), a.get("data-k")

    def handle_data(self, data):
        if self._field and self._row is not None:
            self.rows[self._row][self._field] = self.rows[self._row].get(self._field, "") + data
        if self._key:
            self.keys[self._key] = self.keys.get(self._key, "") + data

    def handle_endtag(self, tag):
        if tag == "td":
            self._field = self._key = None


@pytest.fixture()
def store(tmp_path):
    with Store(tmp_path / "ferry.sqlite3") as s:
        fill(s)
        yield s


def test_html_figures_match_the_store(store, tmp_path):
    data = gather(store, since=time.time() - 86400 * 30)
    path = write_report(data, "html", tmp_path / "r.html", **renderers())
    text = path.read_text()
    parser = Cells()
    parser.feed(text)
    rows = {r["id"]: r for r in store.history.full_rows() if r["finished"] >= data.since}
    assert set(parser.rows) == set(rows) and len(rows) == 3  # the 90-day-old row is outside the period
    for rid, row in rows.items():
        cells = parser.rows[rid]
        assert int(cells["bytes"].replace(",", "")) == row["bytes"]
        assert float(cells["seconds"].replace(",", "")) == pytest.approx(row["seconds"], abs=0.005)
        if row["throughput_mbps"] is not None:
            assert float(cells["throughput_mbps"].replace(",", "")) == pytest.approx(row["throughput_mbps"], abs=0.05)
        assert int(cells["retries"]) == row["retries"]
    assert int(parser.keys["transfers"]) == 3 and int(parser.keys["failed"]) == 1
    assert int(parser.keys["bytes"].replace(",", "")) == 53_687_091_200 + 983_000_000
    assert "genome-center" in text and "Streams recommended" in text
    assert "net.ipv4.tcp_rmem" in text or "enough for this path" in text
    assert text.count("data:image/png;base64,") == 4  # two charts for each of the two sites
    # hostile names are text, never markup; user names are gone; nothing secret
    assert "script" not in parser.tags and "<script>" not in text and "&lt;script&gt;" in text
    assert "jdoe@" not in text and "jdoe" not in text


def test_csv_and_json_match_the_store_and_defuse_formulas(store, tmp_path):
    data = gather(store)
    rows = list(csv.DictReader(io.StringIO(write_report(data, "csv", tmp_path / "r.csv").read_text())))
    stored = {r["id"]: r for r in store.history.full_rows()}
    assert tuple(rows[0].keys()) == CSV_COLUMNS and len(rows) == len(stored) == 4
    for row in rows:
        truth = stored[int(row["id"])]
        assert int(row["bytes"]) == truth["bytes"] and int(row["retries"]) == truth["retries"]
        assert float(row["seconds"]) == pytest.approx(truth["seconds"], abs=0.001)
        assert row["sha256"] == (truth["sha256"] or "")
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@")), cell
    failed = next(r for r in rows if r["outcome"] == "failed")
    assert failed["error"].startswith("'-cmd") and "jdoe" not in failed["source"]
    assert any(r["dest"].endswith(HOSTILE) for r in rows)  # a cell inside is fine: it does not start one
    report = json.loads(write_report(data, "json", tmp_path / "r.json").read_text())
    assert report["schema"] == 1 and report["totals"]["transfers"] == 4
    assert {t["id"]: t["bytes"] for t in report["transfers"]} == {k: v["bytes"] for k, v in stored.items()}
    site = next(s for s in report["sites"] if s["host"] == "dtn.genome.example")
    assert site["name"] == "genome-center" and site["streams_recommended"] == 16 and site["rtt_ms"] == 48.7
    assert site["bdp_bytes"] == int(838.4e6 / 8 * 0.0487)
    assert safe_cell("=1+1") == "'=1+1" and safe_cell(5) == 5 and safe_cell("ok") == "ok"


def test_user_names_only_when_agreed_and_site_filter(store):
    data = gather(store, include_users=True, site="genome-center")
    assert {t.peer_host for t in data.transfers} == {"dtn.genome.example"}
    assert all("jdoe@" in t.source for t in data.transfers)


def test_pdf_reads_back_with_the_same_figures(store, tmp_path):
    if not shutil.which("pdftotext"):
        pytest.fail("pdftotext is not installed; run tests/system-deps.sh (poppler-utils).", pytrace=False)
    path = write_report(gather(store), "pdf", tmp_path / "r.pdf", **renderers())
    assert path.read_bytes().startswith(b"%PDF")
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    for figure in ("53,687,091,200", "983,000,000", "838.4", "827.8", "512.25", "genome-center"):
        assert figure in text, figure
    assert "<script>" in text  # shown as text in the PDF too


def test_cli_report_and_bad_input(store, tmp_path, monkeypatch):
    env_home = tmp_path
    out = tmp_path / "week.csv"
    ok = subprocess.run([sys.executable, "-m", "app", "report", "--since", "2000-01-01", "-o", str(out)],
                        capture_output=True, text=True, env={"LABFERRY_HOME": str(env_home), "PATH": "/usr/bin:/bin"})
    assert ok.returncode == 0, ok.stderr
    assert len(list(csv.DictReader(out.open()))) == 4
    for args, words in ((["--since", "yesterday", "-o", str(out)], "not a date"),
                        (["-o", str(tmp_path / "r.txt")], "--format"),
                        (["-o", str(tmp_path / "missing" / "r.html")], "does not exist"),
                        (["--format", "pdf", "-o", str(tmp_path) + "/"], "is a folder"),
                        (["--format", "pdf", "-o", str(tmp_path)], "is a folder")):
        bad = subprocess.run([sys.executable, "-m", "app", "report", *args], capture_output=True, text=True,
                             env={"LABFERRY_HOME": str(env_home), "PATH": "/usr/bin:/bin"})
        assert bad.returncode == 2 or bad.returncode == 5, bad.stderr
        assert words in bad.stderr and "Traceback" not in bad.stderr and "wrote" not in bad.stderr


@pytest.mark.qt_log_ignore("QPainter::begin")  # the failure this test provokes on purpose
def test_a_pdf_qt_could_not_write_is_an_error_not_a_report(store, tmp_path, monkeypatch):
    """Qt only warns ("QPainter::begin(): Returned false") when it cannot open the file: the CLI said "wrote"."""
    import pytest

    from app.reports import gather, write_report

    target = tmp_path / "gone" / "r.pdf"  # a folder Qt cannot open a file in, past the CLI's own checks
    with pytest.raises(OSError):
        write_report(gather(store), "pdf", target, **renderers())
    assert not target.exists()


def test_the_latest_preflight_of_a_site_is_in_the_report(store, tmp_path):
    host = store.history.full_rows()[0]["peer_host"]
    store.preflights.add({"host": host, "backend": "https", "url": f"https://{host}/big.bin", "rtt_ms": 48.2,
                          "bottleneck_mbps": 910.0, "bdp_bytes": 5_480_000, "loss_estimate": 3e-4,
                          "loss_note": "loss limits single streams", "recommended_streams": 16,
                          "streams_why": "16 streams reached 900 Mbit/s", "sweep": {"1": 190.0, "16": 900.0},
                          "measured_at": time.time() - 60})
    data = gather(store)
    site = next(s for s in data.sites if s.host == host)
    assert site.preflight["recommended_streams"] == 16 and site.preflight["sweep"] == {"1": 190.0, "16": 900.0}
    text = write_report(data, "html", tmp_path / "r.html", **renderers()).read_text()
    assert "Latest preflight" in text and "16 streams reached 900 Mbit/s" in text and "1: 190, 16: 900" in text
    out = json.loads(write_report(data, "json", tmp_path / "r.json").read_text())
    assert next(s for s in out["sites"] if s["host"] == host)["preflight"]["rtt_ms"] == 48.2
