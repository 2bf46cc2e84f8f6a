"""The Queue view's model: one row per job the engine knows, in queue order."""

from __future__ import annotations

from urllib.parse import urlsplit

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionProgressBar,
    QTableView,
)

from app.engine import JobState, JobView
from app.sites import protocol_name
from app.units import format_bytes, format_duration, format_rate

from .icons import KINDS, icon, kind_of
from .words import file_name, for_window

COLUMNS = ("Name", "Route", "Protocol", "Size", "Progress", "Rate", "ETA", "Streams", "State")
PROGRESS = COLUMNS.index("Progress")
#: what each column usually holds, measured for its width (``columns.NameFirst``); the name takes the rest
QUEUE_SAMPLES = {"Route": "collab-lab → this computer", "Protocol": "HTTPS", "Size": "999.9 MiB",
                 "Progress": "100.0 %  ", "Rate": "999.9 Mbit/s", "ETA": "59 min", "Streams": "Streams",
                 "State": "running (retry 5)"}
JobRole = Qt.ItemDataRole.UserRole + 1


def display_name(view: JobView) -> str:
    return file_name(view.source)


def route(view: JobView, here: str = "this computer") -> str:
    """Where a job goes from and to; ``here`` names the machine that runs it (a DTN's for an agent's job). The
    server's end is its site's name when the job came from one (matched by profile, never by address)."""
    def place(location: str) -> str:
        if "://" in location:
            return view.site or f"{urlsplit(location).hostname}"
        if location.startswith("ena:"):
            return "ENA"
        return here

    return f"{place(view.source)} → {place(view.dest)}"


def selected_views(table) -> list[JobView]:
    """The jobs selected in ``table`` (a view of a ``QueueModel``), in row order."""
    model = table.model()
    rows = sorted({i.row() for i in table.selectionModel().selectedRows()})
    return [v for v in (model.view_at(r) for r in rows) if v is not None]


class QueueModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._rows: list[JobView] = []
        self._index: dict[int, int] = {}
        self._icons: dict[str, object] = {}  # kind → icon, drawn once per theme
        self.here = "this computer"  # the machine that runs these jobs (the Agents tab: a site's host)

    def refresh_icons(self) -> None:
        """Forget the drawn icons (the theme changed) and let the view ask again."""
        self._icons.clear()
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, 0),
                                  [Qt.ItemDataRole.DecorationRole])

    # -- Qt model interface -----------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        view = self._rows[index.row()]
        if role == JobRole:
            return view
        if role == Qt.ItemDataRole.DecorationRole and index.column() == 0:
            kind = kind_of(view.source, view.dest)
            if kind not in self._icons:
                self._icons[kind] = icon(KINDS[kind])
            return self._icons[kind]
        if role == Qt.ItemDataRole.ToolTipRole:
            if view.state.active and (view.attempts or view.waiting) and view.notes:  # why it retries or waits
                return for_window(view.notes[-1])
            return for_window(view.error) or f"{view.source}\n→ {view.dest}"
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        column = COLUMNS[index.column()]
        active = view.state.active
        return {
            "Name": display_name(view),
            "Route": route(view, self.here),
            "Protocol": protocol_name(view.backend, view.source if "://" in view.source else view.dest),
            "Size": format_bytes(view.bytes_total) if view.bytes_total is not None else "",
            "Progress": self.fraction(view),
            "Rate": format_rate(view.rate) if active and view.rate else "",
            "ETA": format_duration(view.eta) if active and view.eta is not None else "",
            "Streams": str(view.streams) if active and view.streams else "",
            "State": f"waiting for {view.waiting}" if view.waiting and active
            else view.state.value + (f" (retry {view.attempts})" if view.attempts and active else ""),
        }[column]

    @staticmethod
    def fraction(view: JobView) -> float:
        if view.state == JobState.DONE:
            return 1.0
        return view.bytes_done / view.bytes_total if view.bytes_total else 0.0

    # -- updates from the bridge --------------------------------------------------------
    def reset(self, views: list[JobView]) -> None:
        self.beginResetModel()
        self._rows = list(views)
        self._reindex()
        self.endResetModel()

    def apply(self, changed: dict[int, JobView]) -> None:
        for job_id, view in changed.items():
            row = self._index.get(job_id)
            if row is None:
                self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows))
                self._rows.append(view)
                self._index[job_id] = len(self._rows) - 1
                self.endInsertRows()
            else:
                self._rows[row] = view
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def remove(self, job_id: int) -> None:
        row = self._index.get(job_id)
        if row is None:
            return
        self.beginRemoveRows(QModelIndex(), row, row)
        del self._rows[row]
        self._reindex()
        self.endRemoveRows()

    def view_at(self, row: int) -> JobView | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def row_of(self, job_id: int) -> int | None:
        return self._index.get(job_id)

    def views(self) -> list[JobView]:
        return list(self._rows)

    def _reindex(self) -> None:
        self._index = {view.id: i for i, view in enumerate(self._rows)}


def progress_text(view: JobView | None, fraction: float) -> str:
    """The words on a row's bar: its share, and for a failed job that it failed (a failed study's full bar once
    read as done)."""
    if view is not None and view.state == JobState.FAILED:
        return f"failed at {fraction * 100:.0f}%"
    return f"{fraction * 100:.1f}%"


class ProgressDelegate(QStyledItemDelegate):
    """Paints the Progress column as a native progress bar."""

    def paint(self, painter, option, index) -> None:
        fraction = index.data(Qt.ItemDataRole.DisplayRole) or 0.0
        bar = QStyleOptionProgressBar()
        bar.rect = option.rect.adjusted(2, 3, -2, -3)
        bar.minimum, bar.maximum = 0, 1000
        bar.progress = int(fraction * 1000)
        bar.text = progress_text(index.data(JobRole), fraction)
        bar.textVisible = True
        QApplication.style().drawControl(QStyle.ControlElement.CE_ProgressBar, bar, painter)


def queue_table(model: QueueModel, parent) -> QTableView:
    """The Queue tab's table: whole rows selected, a progress bar in its column, the name first (``NameFirst``),
    a context menu (the window's) and drops (links, files) accepted."""
    from .columns import NameFirst

    view = QTableView(parent)
    view.setTabKeyNavigation(False)  # Tab leaves the table (arrows move inside it)
    view.setModel(model)
    view.setItemDelegateForColumn(PROGRESS, ProgressDelegate(view))
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    view.verticalHeader().hide()
    view.columns = NameFirst(view, QUEUE_SAMPLES, optional=("Streams", "ETA", "Protocol"))  # type: ignore[attr-defined]
    view.setAcceptDrops(True)
    view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    return view
