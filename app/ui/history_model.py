"""The History view's model: finished transfers from SQLite, fetched a page at a time.

100,000 rows open instantly because only what is scrolled to is read (``fetchMore``),
through a short read-only connection on the GUI thread (a page is a few milliseconds).
Filters and sorting re-run the query; the count comes from ``COUNT(*)`` with the filter.
"""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from app.sites import protocol_name
from app.store import HistoryFilter, Store
from app.units import format_bytes, format_duration

from .words import file_name, for_window

PAGE = 500
COLUMNS = (
    ("Finished", "finished"), ("Name", "name"), ("Outcome", "outcome"), ("Source", "source"), ("Destination", "dest"),
    ("Protocol", "backend"), ("Size", "bytes"), ("Duration", "seconds"), ("Mbit/s", "throughput_mbps"),
    ("Streams", "streams"), ("SHA-256", "sha256"), ("Error", "error"),
)
RowRole = Qt.ItemDataRole.UserRole + 2
#: the column a shown key sorts by, where it is not a column of its own (a name is the source's last part)
SORTED_AS = {"name": "source"}
#: the column that stretches: the file's name, which tells transfers apart
NAME = 1


class HistoryModel(QAbstractTableModel):
    def __init__(self, db_path, parent=None) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.filter = HistoryFilter()
        self.order = ("finished", True)  # column, descending
        self._rows: list[dict] = []
        self._total = 0

    def _store(self) -> Store:
        return Store(self.db_path, readonly=True)

    def refresh(self, filt: HistoryFilter | None = None) -> None:
        if filt is not None:
            self.filter = filt
        self.beginResetModel()
        with self._store() as store:
            self._total = store.history.count(self.filter)
            self._rows = store.history.query(self.filter, limit=PAGE, offset=0, order=self.order)
        self.endResetModel()

    @property
    def total(self) -> int:
        return self._total

    # -- Qt model interface -------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:
        return not parent.isValid() and len(self._rows) < self._total

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:
        with self._store() as store:
            more = store.history.query(self.filter, limit=PAGE, offset=len(self._rows), order=self.order)
        if more:
            self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows) + len(more) - 1)
            self._rows.extend(more)
            self.endInsertRows()

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0]
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        key = COLUMNS[column][1]
        self.order = (SORTED_AS.get(key, key), order == Qt.SortOrder.DescendingOrder)
        self.refresh()

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row = self._rows[index.row()]
        if role == RowRole:
            return row
        key = COLUMNS[index.column()][1]
        if role == Qt.ItemDataRole.ToolTipRole:
            return for_window(row.get("error")) or row.get("verify_method") or None
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if key == "name":
            return file_name(row.get("source") or "")
        value = row.get(key)
        if value is None:
            return ""
        if key == "backend":
            return protocol_name(value, row.get("source") or "")
        if key == "error":
            return for_window(value)
        if key == "finished":
            return datetime.fromtimestamp(value).strftime("%Y-%m-%d %H:%M")
        if key == "bytes":
            return format_bytes(value)
        if key == "seconds":
            return format_duration(value)
        if key == "throughput_mbps":
            return f"{value:.0f}"
        if key == "sha256":
            return value[:16] + "…"
        return str(value)

    def row_at(self, row: int) -> dict | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None
