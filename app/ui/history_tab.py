"""The History tab: search, filters (outcome, backend, host, period), sortable lazy table, reports.

A mixin of ``MainWindow`` (it uses the window's ``history_model``, ``reporter`` and
``status``), kept apart so the window's module stays short.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.store import HistoryFilter, Store

from .columns import NameFirst

#: what each column usually holds, measured for its width (``columns.NameFirst``)
HISTORY_SAMPLES = {
    "Finished": "2026-11-28 21:30", "Outcome": "cancelled", "Source": "sftp://dtn.lab/…/run42",
    "Destination": "/home/user/Downloads", "Protocol": "HTTPS", "Size": "999.9 MiB", "Duration": "59 min 59 s",
    "Mbit/s": "9999", "Streams": "Streams", "SHA-256": "0123456789abcdef…", "Error": "the server refused the login",
}

PERIODS = {"any time": 0, "last 24 hours": 1, "last 7 days": 7, "last 30 days": 30, "last year": 365}


class HistoryTab:
    def _history_tab(self) -> QWidget:
        page = QWidget(self)
        layout = QVBoxLayout(page)
        bar = QHBoxLayout()
        self.search = QLineEdit(page)
        self.search.setPlaceholderText("Search source or destination…")
        self.outcome = QComboBox(page)
        self.outcome.addItems(["any outcome", "done", "failed", "cancelled"])
        self.backend_filter = QComboBox(page)
        self.backend_filter.addItems(["any backend", "https", "ssh", "gridftp"])
        self.site_filter = QComboBox(page)
        self.site_filter.addItem("any host")
        self.period = QComboBox(page)
        self.period.addItems(list(PERIODS))
        self.history_count = QLabel(page)
        self.report_button = QPushButton("Report…", page)
        self.report_button.setToolTip("Write a report for IT (HTML, PDF, CSV or JSON) of the selected transfers, "
                                      "or of all shown when none is selected")
        self.report_button.clicked.connect(self.export_report)
        for widget in (self.search, self.outcome, self.backend_filter, self.site_filter, self.period,
                       self.history_count, self.report_button):
            bar.addWidget(widget)
        layout.addLayout(bar)
        self.history_view = QTableView(page)
        self.history_view.setTabKeyNavigation(False)  # Tab moves on to the next control
        self.history_view.setModel(self.history_model)
        self.history_view.setSortingEnabled(True)
        self.history_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.history_view.verticalHeader().hide()
        self.history_columns = NameFirst(self.history_view, HISTORY_SAMPLES, optional=(
            "Streams", "SHA-256", "Duration", "Protocol", "Destination", "Error"))
        layout.addWidget(self.history_view)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(250)
        self._search_timer.timeout.connect(self.apply_history_filter)
        self.search.textChanged.connect(self._search_timer.start)
        for combo in (self.outcome, self.backend_filter, self.site_filter, self.period):
            combo.currentIndexChanged.connect(self.apply_history_filter)
        self.history_model.modelReset.connect(self._history_counted)
        return page

    def apply_history_filter(self) -> None:
        outcome = self.outcome.currentText()
        backend = self.backend_filter.currentText()
        host = self.site_filter.currentText()
        days = PERIODS[self.period.currentText()]
        self.history_model.refresh(HistoryFilter(
            search=self.search.text().strip() or None,
            outcome=None if outcome.startswith("any") else outcome,
            backend=None if backend.startswith("any") else backend,
            peer_host=None if host.startswith("any") else host,
            since=time.time() - days * 86400 if days else None,
        ))
        self._refresh_hosts()

    def _refresh_hosts(self) -> None:
        """The host filter offers the hosts that appear in the history."""
        with Store(self.db_path, readonly=True) as store:
            hosts = [r[0] for r in store.conn.execute(
                "SELECT DISTINCT peer_host FROM history WHERE peer_host IS NOT NULL ORDER BY 1 LIMIT 200")]
        current = self.site_filter.currentText()
        if [self.site_filter.itemText(i) for i in range(1, self.site_filter.count())] != hosts:
            self.site_filter.blockSignals(True)
            self.site_filter.clear()
            self.site_filter.addItem("any host")
            self.site_filter.addItems(hosts)
            self.site_filter.setCurrentText(current)
            self.site_filter.blockSignals(False)

    def selected_history_ids(self) -> tuple[int, ...]:
        rows = {index.row() for index in self.history_view.selectionModel().selectedRows()}
        return tuple(r["id"] for r in (self.history_model.row_at(i) for i in sorted(rows)) if r)

    def report_filter(self) -> HistoryFilter:
        """The selected rows; with none selected, every row the filters match (not only those fetched yet)."""
        ids = self.selected_history_ids()
        return HistoryFilter(ids=ids) if ids else self.history_model.filter

    def export_report(self) -> None:
        self.reporter.ask_and_export(self.report_filter())

    def _report_written(self, path: str) -> None:
        self.status.setText(f"Report written to {path}")
        self.last_report = path

    def _history_counted(self) -> None:
        self.history_count.setText(f"{self.history_model.total} transfers")
