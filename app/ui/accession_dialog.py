"""Public data: what an accession (or a list of them) resolves to, shown before anything starts.

The archive is asked on a worker thread (``app.accessions.plans``, the code ``labferry copy ena:…`` uses), so
the window never waits on the network; the answer comes back through a queued signal. The dialog shows the
runs, the files with their sizes, what has no files of the kind asked and what the archive has nothing for,
and the total against the free space of the folder chosen. Fetch queues one job for it all.
"""

from __future__ import annotations

import copy
import threading
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
)

from app.accessions import ena
from app.accessions.choose import free_space, narrow, parse_filters
from app.accessions.plans import build_plan, words_of
from app.units import counted, format_bytes
from backends.core.errors import TransferError

from .dialogs import with_browse

KIND_LABELS = (("FASTQ (ENA's reads)", "fastq"), ("Submitted files (as the authors sent them)", "submitted"),
               ("SRA files", "sra"))
#: where runs come from (``--source``)
SOURCE_LABELS = (("ENA, and NCBI's .sra for runs ENA lacks", "auto"), ("ENA only", "ena"),
                 ("NCBI (.sra, converted to FASTQ)", "ncbi"))
#: the samplesheet written when the files are in (``--samplesheet``): each pipeline's own layout
SHEET_LABELS = (("nf-core/fetchngs' layout", "fetchngs"), ("nf-core/rnaseq", "rnaseq"), ("nf-core/sarek", "sarek"),
                ("nf-core/scrnaseq", "scrnaseq"), ("nf-core/taxprofiler", "taxprofiler"), ("no samplesheet", "none"))


class AccessionDialog(QDialog):
    """Accessions in, a plan out: ``plan`` and ``folder`` once the user pressed Fetch."""

    answered = Signal(object, int)  # a Plan or the error's sentence, and the look-up it answers

    def __init__(self, parent=None, text: str = "", folder: str = "", ca_file: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Public data")
        self.resize(760, 520)
        self.ca_file = ca_file
        self.plan: ena.Plan | None = None
        self.asked = 0
        form = QFormLayout(self)
        self.words = QPlainTextEdit(text, self)
        self.words.setPlaceholderText("ENA/SRA/DDBJ or GEO accessions, one per line: PRJEB12345, SRP123456, "
                                      "SRR1234567, GSE147507 …")
        self.words.setFixedHeight(70)
        self.kind = QComboBox(self)
        for label, key in KIND_LABELS:
            self.kind.addItem(label, key)
        self.only = QLineEdit(self)
        self.only.setPlaceholderText("all runs; or only some: library_strategy=RNA-Seq, library_layout=PAIRED")
        self.only.setToolTip("Fields of ENA's report, FIELD=VALUE, separated by commas: runs must match every field "
                             "(several values of one field are alternatives). Press Enter to apply.")
        self.only.editingFinished.connect(self._narrowed)
        self.sheet = QComboBox(self)
        for label, key in SHEET_LABELS:
            self.sheet.addItem(label, key)
        self.relative = QCheckBox("Paths in the sheet relative to the folder", self)
        self.by_sample = QCheckBox("A folder for each sample", self)
        self.source = QComboBox(self)
        for label, key in SOURCE_LABELS:
            self.source.addItem(label, key)
        self.full: ena.Plan | None = None  # the look-up's answer, before the filter
        self._answer_area()
        self.dest = QLineEdit(folder, self)
        self._base = folder  # the download folder: a study goes into a folder of its own below it
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.fetch = self.buttons.addButton("Fetch", QDialogButtonBox.ButtonRole.AcceptRole)
        self.fetch.setEnabled(False)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow("Accessions", self.words)
        form.addRow("Files", self.kind)
        form.addRow("From", self.source)
        form.addRow("Only runs where", self.only)
        form.addRow("", self.look)
        form.addRow(self.summary)
        form.addRow(self.table)
        form.addRow("Into folder", with_browse(self.dest, True, self))
        form.addRow("Samplesheet for", self.sheet)
        form.addRow("", self.relative)
        form.addRow("", self.by_sample)
        form.addRow(self.buttons)
        self.answered.connect(self._show)
        self.kind.currentIndexChanged.connect(lambda _: self.look_up() if self.plan else None)
        self.source.currentIndexChanged.connect(lambda _: self.look_up() if self.plan else None)
        if words_of(text):
            self.look_up()

    def _answer_area(self) -> None:
        """Look up, the one-line summary of what the accessions hold, and the table of their runs' files."""
        self.look = QPushButton("Look up", self)
        self.look.clicked.connect(self.look_up)
        self.summary = QLabel("Give accessions and press Look up.", self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = QTableWidget(0, 4, self)
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next control, as everywhere else
        self.table.setHorizontalHeaderLabels(["Run", "File", "Size", "MD5"])
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

    @property
    def folder(self) -> Path:
        return Path(self.dest.text().strip()).expanduser()

    def look_up(self) -> None:
        words = words_of(self.words.toPlainText())
        if not words:
            self.summary.setText("Give at least one accession.")
            return
        self.asked += 1
        self.plan = None
        self.fetch.setEnabled(False)
        self.look.setEnabled(False)
        self.summary.setText(f"Asking the archive about {', '.join(words[:5])}{' …' if len(words) > 5 else ''}")
        label = words[0] if len(words) == 1 else f"{words[0]} and {len(words) - 1} more"
        label = label if label.startswith("ena:") else "ena:" + label
        threading.Thread(target=self._work, args=(words, label, self.kind.currentData(), self.asked,
                                                  self.source.currentData()),
                         name="ferry-accession", daemon=True).start()

    def _work(self, words: list[str], label: str, kind: str, asked: int, source: str) -> None:  # no Qt here
        try:
            answer: object = build_plan(words, label, kind, ca_file=self.ca_file, source=source)
        except TransferError as exc:
            answer = str(exc)
        except Exception as exc:  # an answer the archive should not give: said, never a traceback
            answer = f"The archive's answer could not be read ({type(exc).__name__}: {exc}). Try again later."
        self.answered.emit(answer, asked)

    def _show(self, answer, asked: int) -> None:
        if asked != self.asked:
            return  # an older look-up, overtaken by a newer one
        self.look.setEnabled(True)
        if isinstance(answer, str):
            self.summary.setText(answer)
            self.table.setRowCount(0)
            return
        self.full = answer
        try:
            answer = narrow(copy.deepcopy(answer), parse_filters(filters_in(self.only.text())))
        except TransferError as exc:
            self.summary.setText(str(exc))
            self.table.setRowCount(0)
            return
        self.plan = answer
        if self._base and self.dest.text().strip() in (self._base, getattr(self, "_suggested", None)):
            self._suggested = str(Path(self._base).expanduser() / own_folder(answer.label))
            self.dest.setText(self._suggested)  # one folder per accession, unless the user chose one
        self.summary.setText(describe(answer, self.folder))
        self.table.setRowCount(len(answer.files))
        for row, f in enumerate(answer.files):
            name = f"{f.name} (from NCBI)" if f.source == "ncbi" else f.name
            for column, text in enumerate((f.run, name, format_bytes(f.size) if f.size else "?", f.md5)):
                self.table.setItem(row, column, QTableWidgetItem(text))
        self.table.resizeColumnsToContents()
        self.fetch.setEnabled(bool(answer.files))

    @property
    def sheet_choice(self) -> tuple[str, str]:
        """(the pipeline whose samplesheet to write, absolute|relative paths), as ``--samplesheet``."""
        return self.sheet.currentData(), "relative" if self.relative.isChecked() else "absolute"

    @property
    def layout(self) -> str:
        """``--layout``: a folder for each sample, or every file in the folder."""
        return "sample" if self.by_sample.isChecked() else "flat"

    def _narrowed(self) -> None:
        """The filter changed: the same answer, narrowed again (the archive is not asked again)."""
        if self.full is not None:
            self._show(self.full, self.asked)

    def _accept(self) -> None:
        if self.plan is None or not self.plan.files:
            return
        if not self.dest.text().strip():
            self.summary.setText("Choose the folder the files go into.")
            return
        self.accept()


def filters_in(text: str) -> list[str]:
    """``"library_strategy=RNA-Seq, library_layout=PAIRED"`` → the CLI's ``--filter`` words."""
    return [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]


def own_folder(label: str) -> str:
    """The folder an accession's files go into below the download folder: ``PRJEB12345``, or
    ``PRJEB12345-and-2-more`` for a list (its name made safe for every OS)."""
    from backends.destination.names import portable_name

    name = label.removeprefix("ena:").replace(" and ", "-and-").replace(" more", "-more")
    return portable_name(name)[0]


def describe(plan: ena.Plan, folder: Path) -> str:
    """One paragraph: runs, files, total, what is missing, and whether the folder has the room."""
    text = (f"{plan.label}: {counted(plan.runs, 'run')}, {counted(len(plan.files), f'{plan.kind} file')}, "
            f"{format_bytes(plan.total_bytes)} in all.")
    for accession, linked in plan.geo.items():
        text += f" {accession} (GEO) is {', '.join(linked)} in SRA." if linked else \
            f" GEO links no SRA reads to {accession}."
    if plan.from_ncbi:
        text += f" {counted(len(plan.from_ncbi), 'run')} from NCBI as .sra" + \
                (", converted to FASTQ when they are in (fasterq-dump)." if plan.kind == "fastq" else ".")
    both = plan.source != "ena" and plan.kind != "submitted"  # NCBI was asked too
    if plan.without_files:
        text += f" No {plan.kind} files in {'ENA or NCBI' if both else 'ENA'} for " \
                f"{', '.join(plan.without_files[:8])}{' …' if len(plan.without_files) > 8 else ''}: try another " \
                "kind of files."
    if plan.nothing_for:
        text += f" {'ENA and NCBI have' if both else 'ENA has'} nothing public for {', '.join(plan.nothing_for)}."
    free = free_space(folder)
    if free is not None and free < plan.total_bytes:
        text += f" The folder's disk has only {format_bytes(free)} free: choose another folder or free space."
    return text
