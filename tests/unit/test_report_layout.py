"""The report for IT is readable at 1280 px and on paper: no heading, route, figure or error is cut inside a word.

Thirteen columns once shared the width, so at 1280 px and on an A4 page a route came out as ``sample_000`` /
``123_R1.fast`` / ``q.gz`` and an error as a dozen letters a line. The HTML is laid out here by Qt's own text
engine (the one that prints the PDF) at a browser's 1280 px and at the page's width, and every line break that
falls between two letters or digits is a cut.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from app.reports import gather, write_report
from app.reports.html import render
from app.store import Store
from app.ui.report_pdf import renderers

ERROR = ("The server files.ebi.example.org closed the connection 5 times while sending "
         "sample_000123_R1.fastq.gz; check the site's status page, then press Retry.")
SOURCE = "https://files.ebi.example.org/pub/databases/cohort_2026/batch_0042/sample_000123_R1.fastq.gz"
DEST = "/scratch/users/jdoe/cohort_2026/batch_0042/sample_000123_R1.fastq.gz"


@pytest.fixture()
def data(tmp_path):
    now = time.time()
    with Store(tmp_path / "ferry.sqlite3") as store:
        store.history.add(source=SOURCE, dest=DEST, backend="https", outcome="failed", bytes=5_368_709_120,
                          seconds=3.0, retries=5, streams=16, error=ERROR, error_kind="transient",
                          peer_host="files.ebi.example.org", started=now - 100, finished=now - 50)
        store.history.add(source="sftp://dtn.genome.example/data/run42/sample_1.bam", dest="/data/sample_1.bam",
                          backend="ssh", outcome="done", bytes=53_687_091_200, seconds=512.25, throughput_mbps=838.4,
                          streams=16, retries=1, sha256="ab" * 32, verified=1,
                          verify_method="sha256 computed by the server matched", peer_host="dtn.genome.example",
                          rtt_ms=48.7, started=now - 3000, finished=now - 2488)
        yield gather(store)


def _cuts(markup: str, width: float) -> list[str]:
    """Every line of the laid-out report that ends between two letters or digits, with its neighbours."""
    from app.ui import report_charts

    report_charts.ensure_gui()  # the same offscreen GUI the PDF is printed with
    from PySide6.QtGui import QTextDocument

    document = QTextDocument()
    document.setHtml(markup)
    document.setTextWidth(width)
    document.size()  # lays the whole document out, table cells included
    cuts: list[str] = []
    block = document.begin()
    while block.isValid():
        text, layout = block.text(), block.layout()
        for i in range(layout.lineCount() - 1):
            end = layout.lineAt(i).textStart() + layout.lineAt(i).textLength()
            if 0 < end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
                cuts.append(f"{text[max(0, end - 12):end]}|{text[end:end + 12]}")
        block = block.next()
    return cuts


def test_no_word_is_cut_at_1280_px_nor_at_the_width_of_an_a4_page(data):
    markup = render(data)
    assert _cuts(markup, 1280) == []
    assert _cuts(markup, 1290) == []  # A4 landscape at the PDF's 120 dpi less its 12 mm margins: 1290 px


def test_the_printed_report_keeps_the_error_and_the_route_whole(data, tmp_path):
    if not shutil.which("pdftotext"):
        pytest.fail("pdftotext is not installed; run tests/system-deps.sh (poppler-utils).", pytrace=False)
    path = write_report(data, "pdf", tmp_path / "r.pdf", **renderers())
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    words = " ".join(text.split())
    assert ERROR in words.replace("ﬁ", "fi")
    for piece in ("sample_000123_R1.fastq.gz", "files.ebi.example.org", "Verification", "Streams", "Retries"):
        assert piece in text.replace("ﬁ", "fi"), piece
