"""History → report: the *Report…* button writes an HTML/PDF/CSV/JSON report of the selected rows.

Gathering and drawing run on a worker thread (QPainter on a QImage and QPdfWriter are
safe off the GUI thread); the finished path comes back through a queued signal, so the
window never waits on the database or the PDF printer.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from app.store import HistoryFilter

FILTERS = {"HTML report (*.html)": "html", "PDF report (*.pdf)": "pdf", "CSV for spreadsheets (*.csv)": "csv",
           "JSON for scripts (*.json)": "json"}


class ReportExporter(QObject):
    finished = Signal(str)  # the written file
    failed = Signal(str)  # a sentence for the user

    def __init__(self, db_path: Path, parent: QWidget) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.parent_widget = parent
        self.thread: threading.Thread | None = None

    def ask_and_export(self, filt: HistoryFilter) -> None:
        """Ask where to save, then write the rows ``filt`` selects in the background."""
        path, chosen = QFileDialog.getSaveFileName(self.parent_widget, "Save a transfer report",
                                                   str(Path.home() / "ferry-report.html"), ";;".join(FILTERS))
        if path:
            self.export(Path(path), FILTERS.get(chosen) or Path(path).suffix.lstrip(".") or "html", filt)

    def export(self, path: Path, fmt: str, filt: HistoryFilter) -> None:
        if fmt not in FILTERS.values():
            fmt = "html"
        if not path.suffix:
            path = path.with_suffix("." + fmt)
        self.thread = threading.Thread(target=self._work, args=(path, fmt, filt), name="ferry-report", daemon=True)
        self.thread.start()

    def _work(self, path: Path, fmt: str, filt: HistoryFilter) -> None:
        from app.reports import gather, write_report
        from app.store import Store

        from .report_pdf import renderers

        try:
            with Store(self.db_path, readonly=True) as store:
                data = gather(store, filt=filt)
            write_report(data, fmt, path, **renderers())
        except OSError as exc:
            self.failed.emit(f"Could not write the report to {path}: {exc.strerror}. Choose another folder.")
            return
        except Exception as exc:  # noqa: BLE001 — a thread's exception would vanish, and the window never hear
            self.failed.emit(f"Could not write the report to {path} ({type(exc).__name__}: {exc}); "
                             "try again, and send Ferry's log to its developers if it happens again.")
            return
        self.finished.emit(str(path))
