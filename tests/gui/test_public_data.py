"""Public data in the window: an accession dropped on it resolves in a dialog (runs, files, total size) before
anything starts, Fetch queues one job for the study, its row opens into its files, History lists it once, and the
folder gets its samplesheet. The archive is the stand-in portal of tests/servers/ena_portal.py, the files a real
nginx."""

from __future__ import annotations

import csv
import random

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt
from PySide6.QtGui import QDropEvent

from app.engine import JobState
from tests.integration.conftest import MiB

from .test_window import job, select


@pytest.fixture
def archive(nginx, monkeypatch):
    from tests.servers.ena_portal import Portal

    portal = Portal(nginx.data).start()
    portal.add_run("ERR0007001", experiment="ERX0007001", layout="PAIRED", sample="SAMEA0007001", study="ERP000777",
                   project="PRJEB7777", fastq=[("ERR0007001_1.fastq.gz", random.Random(1).randbytes(MiB)),
                                               ("ERR0007001_2.fastq.gz", random.Random(2).randbytes(MiB))])
    portal.add_run("ERR0007002", experiment="ERX0007002", layout="SINGLE", sample="SAMEA0007002", study="ERP000777",
                   project="PRJEB7777", fastq=[("ERR0007002.fastq.gz", random.Random(3).randbytes(20 * MiB))],
                   wrong_md5="ERR0007002.fastq.gz")
    monkeypatch.setenv("LABFERRY_ENA_PORTAL", portal.url)
    monkeypatch.setenv("LABFERRY_NCBI_SDL", portal.sdl)
    monkeypatch.setenv("LABFERRY_ENA_FILES", f"http://127.0.0.1:{nginx.http_port}")
    yield portal
    portal.stop()


def drop_text(widget, text: str) -> None:
    mime = QMimeData()
    mime.setText(text)
    widget.dropEvent(QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier))


def test_a_dropped_accession_resolves_then_arrives_as_one_job(qtbot, window, archive, tmp_path, monkeypatch):
    import app.ui.public_data as public_data
    from app.ui.accession_dialog import AccessionDialog

    seen = {}

    class Answering(AccessionDialog):
        """The real dialog, answered as a user would once the archive has: Fetch, into a folder of the test's."""

        def exec(self) -> int:
            self.show()
            qtbot.waitUntil(lambda: self.plan is not None, timeout=20_000)
            seen["summary"], seen["rows"] = self.summary.text(), self.table.rowCount()
            self.dest.setText(str(tmp_path / "study"))
            return 1

    monkeypatch.setattr(public_data, "AccessionDialog", Answering)
    drop_text(window, "PRJEB7777\n")
    assert "ena:PRJEB7777: 2 runs, 3 fastq files, 22.0 MiB in all." in seen["summary"] and seen["rows"] == 3
    qtbot.waitUntil(lambda: job(window, "PRJEB7777") is not None, timeout=10_000)
    qtbot.waitUntil(lambda: job(window, "PRJEB7777").state == JobState.FAILED, timeout=60_000)
    view = job(window, "PRJEB7777")
    assert sum(1 for v in window.queue_model.views() if "PRJEB7777" in v.source) == 1  # one row for the study
    assert {name: state for name, (state, *_) in view.files.items()} == {
        "ERR0007001_1.fastq.gz": "fetched", "ERR0007001_2.fastq.gz": "fetched", "ERR0007002.fastq.gz": "failed"}
    select(window, view)
    text = window.details.toPlainText()
    assert "Files (3: 1 failed, 2 fetched)" in text and "ERR0007002.fastq.gz" in text and "md5" in text
    assert "ENA → this computer" in window.queue_model.data(window.queue_model.index(
        window.queue_model.row_of(view.id), 1))
    qtbot.waitUntil(lambda: (tmp_path / "study" / "samplesheet.csv").exists(), timeout=10_000)
    with open(tmp_path / "study" / "samplesheet.csv") as sheet:
        assert [r["run_accession"] for r in csv.DictReader(sheet)] == ["ERR0007001"]  # the verified run only
    assert not (tmp_path / "study" / "ERR0007002.fastq.gz").exists()
    qtbot.waitUntil(lambda: window.history_model.rowCount() >= 1, timeout=5_000)
    rows = [window.history_model.row_at(i) for i in range(window.history_model.rowCount())]
    assert [(r["source"], r["outcome"]) for r in rows if "PRJEB7777" in r["source"]] == [("ena:PRJEB7777", "failed")]


def test_only_a_list_of_accessions_opens_the_dialog():
    from app.ui.public_data import accessions_in

    assert accessions_in("PRJEB7777\nSRR1234567  # the control\n") == ["PRJEB7777", "SRR1234567"]
    assert accessions_in("GSE147507") == ["GSE147507"]
    assert accessions_in("https://host/file.bin") == [] and accessions_in("PRJEB7777 https://host/x") == []
    assert accessions_in("") == [] and accessions_in("hello world") == []


def test_part_of_a_study_with_the_sheet_rnaseq_reads(qtbot, window, archive, tmp_path):
    """Ctrl+Shift+P, the accession typed, only the paired runs, nf-core/rnaseq's sheet with relative paths: the
    dialog's choices are the command line's --filter, --samplesheet and --sheet-paths."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QPlainTextEdit

    from .test_driving import when_modal

    folder = tmp_path / "paired-only"
    seen = {}

    def fill(dialog) -> None:
        QTest.keyClicks(dialog.findChild(QPlainTextEdit), "PRJEB7777")
        QTest.keyClicks(dialog.only, "library_layout=PAIRED")
        QTest.keyClick(dialog.only, Qt.Key.Key_Tab)  # leaving the field applies it
        QTest.mouseClick(dialog.look, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.plan is not None, timeout=20_000)
        seen["summary"], seen["rows"] = dialog.summary.text(), dialog.table.rowCount()
        dialog.sheet.setCurrentIndex(dialog.sheet.findData("rnaseq"))
        dialog.relative.setFocus()
        QTest.keyClick(dialog.relative, Qt.Key.Key_Space)  # ticked from the keyboard, as Tab then Space do
        assert dialog.relative.isChecked()
        dialog.dest.setText(str(folder))
        QTest.mouseClick(dialog.fetch, Qt.MouseButton.LeftButton)

    when_modal(fill, window)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert "1 run, 2 fastq files" in seen["summary"] and seen["rows"] == 2, seen  # the single-end run left out
    qtbot.waitUntil(lambda: (v := job(window, "PRJEB7777")) is not None and v.state.terminal, timeout=60_000)
    assert job(window, "PRJEB7777").state == JobState.DONE, job(window, "PRJEB7777").error
    qtbot.waitUntil(lambda: (folder / "samplesheet.csv").exists(), timeout=10_000)
    with open(folder / "samplesheet.csv") as sheet:
        rows = list(csv.DictReader(sheet))
    assert rows == [{"sample": "SAMEA0007001", "fastq_1": "ERR0007001_1.fastq.gz", "fastq_2": "ERR0007001_2.fastq.gz",
                     "strandedness": "auto", "seq_platform": "ILLUMINA"}]
    assert not (folder / "ERR0007002.fastq.gz").exists() and QApplication.activeModalWidget() is None


def test_a_run_only_at_ncbi_arrives_converted_in_its_samples_folder(qtbot, window, archive, nginx, tmp_path):
    """A study whose run ENA has no FASTQ for: the dialog says it comes from NCBI as .sra, "A folder for each
    sample" is ticked from the keyboard, and when the job ends the .sra is converted (fasterq-dump, in a worker
    thread) and the rnaseq sheet points into the sample's folder."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QPlainTextEdit

    from tests.integration.test_ncbi_source import PAIRED, make_sra, sequences_of

    from .test_driving import when_modal

    archive.add_run("ERR0007003", experiment="ERX0007003", layout="PAIRED", sample="SAMEA0007003", study="ERP000778",
                    project="PRJEB7778", fastq=[])
    archive.add_ncbi_run("ERR0007003", make_sra(tmp_path / "sra", "ERR0007003", *PAIRED),
                         f"http://127.0.0.1:{nginx.http_port}")
    folder = tmp_path / "from-ncbi"
    seen = {}

    def fill(dialog) -> None:
        QTest.keyClicks(dialog.findChild(QPlainTextEdit), "PRJEB7778")
        QTest.mouseClick(dialog.look, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.plan is not None, timeout=20_000)
        seen["summary"] = dialog.summary.text()
        seen["file"] = dialog.table.item(0, 1).text()
        dialog.sheet.setCurrentIndex(dialog.sheet.findData("rnaseq"))
        for box in (dialog.relative, dialog.by_sample):
            box.setFocus()
            QTest.keyClick(box, Qt.Key.Key_Space)
        dialog.dest.setText(str(folder))
        QTest.mouseClick(dialog.fetch, Qt.MouseButton.LeftButton)

    when_modal(fill, window)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert "1 run from NCBI as .sra, converted to FASTQ" in seen["summary"], seen
    assert seen["file"] == "ERR0007003.sra (from NCBI)"
    qtbot.waitUntil(lambda: (v := job(window, "PRJEB7778")) is not None and v.state.terminal, timeout=60_000)
    assert job(window, "PRJEB7778").state == JobState.DONE, job(window, "PRJEB7778").error
    qtbot.waitUntil(lambda: (folder / "samplesheet.csv").exists(), timeout=60_000)
    with open(folder / "samplesheet.csv") as sheet:
        rows = list(csv.DictReader(sheet))
    assert [(r["fastq_1"], r["fastq_2"]) for r in rows] == [
        ("SAMEA0007003/ERR0007003_1.fastq.gz", "SAMEA0007003/ERR0007003_2.fastq.gz")]
    assert sequences_of(folder / rows[0]["fastq_2"]) == PAIRED[1]


def test_a_run_ena_serves_short_of_a_read_is_completed_from_ncbi_by_a_second_job(qtbot, window, archive, nginx,
                                                                                tmp_path):
    """ENA serves two of a single-cell run's three reads: when the study's job ends, the window queues a second
    one for the run's .sra from NCBI, and when that ends the run is converted with every read over ENA's names
    and the scrnaseq sheet maps the barcode and cDNA reads (the index left out of its reads)."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QPlainTextEdit

    from tests.integration.test_ncbi_source import SINGLE_CELL, fastq_gz, make_sra, sequences_of

    from .test_driving import when_modal

    archive.add_run("ERR0007004", experiment="ERX0007004", layout="PAIRED", sample="SAMEA0007004", study="ERP000779",
                    project="PRJEB7779", fields={"read_count": "50", "base_count": "6300"},
                    fastq=[("ERR0007004_1.fastq.gz", fastq_gz(SINGLE_CELL[1])),
                           ("ERR0007004_2.fastq.gz", fastq_gz(SINGLE_CELL[2]))])
    archive.add_ncbi_run("ERR0007004", make_sra(tmp_path / "sra", "ERR0007004", *SINGLE_CELL),
                         f"http://127.0.0.1:{nginx.http_port}")
    folder = tmp_path / "completed"

    def fill(dialog) -> None:
        QTest.keyClicks(dialog.findChild(QPlainTextEdit), "PRJEB7779")
        QTest.mouseClick(dialog.look, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.plan is not None, timeout=20_000)
        dialog.sheet.setCurrentIndex(dialog.sheet.findData("scrnaseq"))
        dialog.dest.setText(str(folder))
        QTest.mouseClick(dialog.fetch, Qt.MouseButton.LeftButton)

    when_modal(fill, window)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    second = "PRJEB7779 (every read, from NCBI)"
    qtbot.waitUntil(lambda: (v := job(window, second)) is not None and v.state.terminal, timeout=90_000)
    assert job(window, "PRJEB7779").state == JobState.DONE and job(window, second).state == JobState.DONE
    qtbot.waitUntil(lambda: (folder / "ERR0007004.fastq.md5").exists(), timeout=60_000)
    qtbot.waitUntil(lambda: "ERR0007004_3" in (folder / "samplesheet.csv").read_text(), timeout=30_000)
    assert [sequences_of(folder / f"ERR0007004_{n}.fastq.gz") for n in (1, 2, 3)] == list(SINGLE_CELL)
    with open(folder / "samplesheet.csv") as sheet:
        rows = list(csv.DictReader(sheet))
    assert [(r["fastq_1"].rsplit("/", 1)[-1], r["fastq_2"].rsplit("/", 1)[-1]) for r in rows] == [
        ("ERR0007004_2.fastq.gz", "ERR0007004_3.fastq.gz")]


def test_a_run_left_short_of_a_read_is_said_when_its_job_ends(qtbot, window, archive, nginx, tmp_path):
    """From "ENA only": the run ENA serves short of its index read stays as ENA serves it, and the window says
    so when the job ends (the CLI's note), with what would complete it."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QPlainTextEdit

    from tests.integration.test_ncbi_source import SINGLE_CELL, fastq_gz

    from .test_driving import when_modal

    archive.add_run("ERR0007005", experiment="ERX0007005", layout="PAIRED", sample="SAMEA0007005", study="ERP000780",
                    project="PRJEB7780", fields={"read_count": "50", "base_count": "6300"},
                    fastq=[("ERR0007005_1.fastq.gz", fastq_gz(SINGLE_CELL[1])),
                           ("ERR0007005_2.fastq.gz", fastq_gz(SINGLE_CELL[2]))])
    folder = tmp_path / "as-ena"

    def fill(dialog) -> None:
        QTest.keyClicks(dialog.findChild(QPlainTextEdit), "PRJEB7780")
        dialog.source.setCurrentIndex(dialog.source.findData("ena"))
        QTest.mouseClick(dialog.look, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.plan is not None and dialog.plan.source == "ena", timeout=20_000)
        dialog.dest.setText(str(folder))
        QTest.mouseClick(dialog.fetch, Qt.MouseButton.LeftButton)

    when_modal(fill, window)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: (v := job(window, "PRJEB7780")) is not None and v.state.terminal, timeout=60_000)
    assert job(window, "PRJEB7780").state == JobState.DONE
    qtbot.waitUntil(lambda: (window.last_notice or ("",))[0] == "Reads missing from ENA's files", timeout=30_000)
    _, text = window.last_notice  # after "Transfer finished": the samplesheet is written first
    assert "ERR0007005 (118 of 126 bases a spot)" in text, text
    assert "From \u201cENA, and NCBI's .sra for runs ENA lacks\u201d" in text and "--" not in text  # window words
    assert job(window, "PRJEB7780 (every read, from NCBI)") is None  # nothing asked of NCBI


def test_a_run_whose_file_failed_is_named_as_left_out_of_the_samplesheet(qtbot, window, archive, tmp_path,
                                                                         monkeypatch):
    """The samplesheet left out a run whose file failed, and the window said nothing (the command line prints a
    note): the notice names the run and why."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QPlainTextEdit

    from tests.integration.test_ncbi_source import SINGLE_CELL, fastq_gz

    from .test_driving import when_modal

    archive.add_run("ERR0007011", experiment="ERX0007011", layout="SINGLE", sample="SAMEA0007011", study="ERP000781",
                    project="PRJEB7781", fastq=[("ERR0007011.fastq.gz", fastq_gz(SINGLE_CELL[1]))])
    archive.add_run("ERR0007012", experiment="ERX0007012", layout="SINGLE", sample="SAMEA0007012", study="ERP000781",
                    project="PRJEB7781", fastq=[("ERR0007012.fastq.gz", fastq_gz(SINGLE_CELL[2]))])
    for gone in archive.files_root.rglob("ERR0007012.fastq.gz"):
        gone.unlink()  # listed by the portal, missing on the file server: a 404 by either route
    folder = tmp_path / "with-a-gap"

    def fill(dialog) -> None:
        QTest.keyClicks(dialog.findChild(QPlainTextEdit), "PRJEB7781")
        QTest.mouseClick(dialog.look, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.plan is not None, timeout=20_000)
        dialog.dest.setText(str(folder))
        QTest.mouseClick(dialog.fetch, Qt.MouseButton.LeftButton)

    seen: list[tuple[str, str]] = []
    said = window.notify
    monkeypatch.setattr(window, "notify", lambda title, text: (seen.append((title, text)), said(title, text)))
    when_modal(fill, window)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    try:
        qtbot.waitUntil(lambda: any(t == "Runs left out of the samplesheet" for t, _ in seen), timeout=60_000)
    except Exception:
        raise AssertionError(seen) from None
    text = next(text for title, text in seen if title == "Runs left out of the samplesheet")
    assert "leaves out ERR0007012" in text, text
    assert "ERR0007011" in (folder / "samplesheet.csv").read_text()
