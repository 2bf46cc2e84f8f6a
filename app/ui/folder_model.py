"""One folder's entries as a table (name, size, modified, permissions), for a folder pane.

Entries arrive in batches (a remote listing as the server answers, a local one from a thread) and are
appended, never reset, so the view fills while a slow server is still talking. Sorting (folders first, then the
column clicked, names compared case-insensitively) and type-to-filter are the model's own.
A drag carries what the entries are, in words a drop can act on (``mime_of``): local files as file URLs (so the
desktop's file manager takes them too), remote ones as ``site:NAME/path`` lines of Ferry's own type.
"""

from __future__ import annotations

import stat as statmod
import time

from PySide6.QtCore import QAbstractTableModel, QMimeData, QModelIndex, Qt, QUrl

from app.units import format_bytes
from backends.core.abilities import FolderEntry

from .icons import icon

COLUMNS = ("Name", "Size", "Modified", "Permissions")
NAME, SIZE, MODIFIED, PERMISSIONS = range(4)
EntryRole = Qt.ItemDataRole.UserRole + 11
#: a drag of remote entries: one ``site:NAME/path`` per line (folders end in ``/``)
SITE_PATHS = "application/x-labferry-site-paths"


def permissions(mode: int | None, is_dir: bool) -> str:
    if mode is None:
        return ""
    return ("d" if is_dir else "-") + statmod.filemode(mode)[1:]


def sort_key(entry: FolderEntry, column: int, descending: bool) -> tuple:
    """Folders first in either direction, then the column's value, then the name (case-insensitive)."""
    group = entry.is_dir if descending else not entry.is_dir  # sorted in reverse when descending
    name = entry.name.lower()
    if column == SIZE:
        return group, entry.size or 0, name
    if column == MODIFIED:
        return group, entry.mtime or 0, name
    if column == PERMISSIONS:
        return group, entry.mode or 0, name
    return group, name


class FolderModel(QAbstractTableModel):
    """The entries shown (``entries``: filtered and sorted) and all of them (``every``). Sorting and filtering
    are the model's own, not a proxy model's per-pair ``lessThan`` calls back into Python (that stalled the
    window for 0.7 s on 10,000 rows, measured). Each shown entry's sort key is computed once (``keys``, in the
    same order) and a batch re-sorts indices by ``keys.__getitem__``: C comparisons only, on a list that is
    sorted but for its new tail (during a transfer the per-batch Python key calls alone had cost ~40 ms)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.every: list[FolderEntry] = []
        self.entries: list[FolderEntry] = []
        self.keys: list[tuple] = []
        self.sort_column, self.sort_order = NAME, Qt.SortOrder.AscendingOrder
        self.needle = ""
        self.mime_of = lambda entries: QMimeData()  # set by the pane, which knows where the entries are
        self._folder_icon, self._file_icon, self._link_icon = (icon("mdi6.folder-outline"),
                                                               icon("mdi6.file-outline"), icon("mdi6.link-variant"))

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008  (Qt's signature)
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: B008
        return len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        return self._value(self.entries[index.row()], index.column(), role)

    def multiData(self, index, span) -> None:
        """Every role a cell is painted with, in one call: the view asks for seven roles per cell, and each call
        from Qt into Python must take the GIL, which during a transfer the engine's threads hold (with seven
        calls per cell a repaint during a listing stalled the window for 100 ms and more, measured)."""
        if not index.isValid() or index.row() >= len(self.entries):
            return
        entry, column = self.entries[index.row()], index.column()
        for slot in span:  # every slot, an empty one cleared: the delegate reuses them from cell to cell
            value = self._value(entry, column, slot.role())
            if value is None:
                slot.clearData()
            else:
                slot.setData(value)

    def _value(self, entry: FolderEntry, column: int, role):
        if role == Qt.ItemDataRole.DisplayRole:
            if column == NAME:
                return entry.name
            if column == SIZE:
                return "" if entry.is_dir or entry.size is None else format_bytes(entry.size)
            if column == MODIFIED:
                return "" if entry.mtime is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.mtime))
            return permissions(entry.mode, entry.is_dir)
        if role == Qt.ItemDataRole.DecorationRole and column == NAME:
            return self._link_icon if entry.link and not entry.is_dir else (
                self._folder_icon if entry.is_dir else self._file_icon)
        if role == Qt.ItemDataRole.ToolTipRole and column == SIZE and entry.size is not None:
            return f"{entry.size:,} bytes"
        if role == Qt.ItemDataRole.TextAlignmentRole and column == SIZE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == EntryRole:
            return entry
        return None

    def flags(self, index):
        base = super().flags(index)
        if not index.isValid():
            return base | Qt.ItemFlag.ItemIsDropEnabled
        entry = self.entries[index.row()]
        extra = Qt.ItemFlag.ItemIsDragEnabled | (Qt.ItemFlag.ItemIsDropEnabled if entry.is_dir else Qt.ItemFlag(0))
        return base | extra

    # -- filling, sorting, filtering -------------------------------------------------------------
    def clear(self) -> None:
        self.beginResetModel()
        self.every, self.entries, self.keys = [], [], []
        self.endResetModel()

    def _passes(self, entry: FolderEntry) -> bool:
        return not self.needle or self.needle in entry.name.lower()

    def append(self, batch: list[FolderEntry]) -> None:
        """New entries: added at the end, then put in order (one ``layoutChanged`` per batch)."""
        self.every.extend(batch)
        shown = [e for e in batch if self._passes(e)]
        if not shown:
            return
        first = len(self.entries)
        self.beginInsertRows(QModelIndex(), first, first + len(shown) - 1)
        self.entries.extend(shown)
        self.keys.extend(self._key_of(e) for e in shown)
        self.endInsertRows()
        self._reorder()

    def _key_of(self, entry: FolderEntry) -> tuple:
        return sort_key(entry, self.sort_column, self.sort_order == Qt.SortOrder.DescendingOrder)

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        self.sort_column, self.sort_order = column, order
        self.keys = [self._key_of(e) for e in self.entries]
        self._reorder()

    def set_filter(self, text: str) -> None:
        self.needle = text.strip().lower()
        self.beginResetModel()
        self.entries = [e for e in self.every if self._passes(e)]
        self.keys = [self._key_of(e) for e in self.entries]
        self.endResetModel()
        self._reorder()

    def _reorder(self) -> None:
        """Put ``entries`` in order, keeping selections and the current row on the same entries."""
        order = sorted(range(len(self.keys)), key=self.keys.__getitem__,
                       reverse=self.sort_order == Qt.SortOrder.DescendingOrder)
        if order == list(range(len(order))):
            return
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        self.entries = [self.entries[i] for i in order]
        self.keys = [self.keys[i] for i in order]
        if persistent:
            moved_to = {old: new for new, old in enumerate(order)}
            self.changePersistentIndexList(persistent, [
                self.index(moved_to[i.row()], i.column()) if i.isValid() and i.row() in moved_to else QModelIndex()
                for i in persistent])
        self.layoutChanged.emit()

    # -- dragging ---------------------------------------------------------------------------------
    def mimeTypes(self) -> list[str]:
        return [SITE_PATHS, "text/uri-list", "text/plain"]

    def mimeData(self, indexes) -> QMimeData:
        rows = sorted({i.row() for i in indexes if i.isValid()})
        return self.mime_of([self.entries[r] for r in rows])

    def supportedDragActions(self):
        return Qt.DropAction.CopyAction

    def supportedDropActions(self):
        return Qt.DropAction.CopyAction


def local_mime(folder: str, entries: list[FolderEntry]) -> QMimeData:
    import os

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(os.path.join(folder, e.name)) for e in entries])
    return mime


def site_mime(lines: list[str]) -> QMimeData:
    """A drag of a site pane's entries: their ``site:NAME/…`` lines (``FolderPane.items``)."""
    mime = QMimeData()
    mime.setData(SITE_PATHS, "\n".join(lines).encode())
    mime.setText("\n".join(lines))
    return mime


def site_paths(mime: QMimeData) -> list[str]:
    """The ``site:NAME/path`` lines a drag from a remote pane carries (none for any other drag)."""
    if not mime.hasFormat(SITE_PATHS):
        return []
    return [line for line in bytes(mime.data(SITE_PATHS)).decode().splitlines() if line.strip()]
