"""One folder's entries as a table (name, size, modified, permissions), for a folder pane.

Entries arrive in batches (a remote listing as the server answers, a local one from a thread) and are
appended, never reset, so the view fills while a slow server is still talking. Sorting and type-to-filter
are a proxy's (``SortedEntries``): folders first, then the column clicked, names compared case-insensitively.
A drag carries what the entries are, in words a drop can act on (``mime_of``): local files as file URLs (so the
desktop's file manager takes them too), remote ones as ``site:NAME/path`` lines of Ferry's own type.
"""

from __future__ import annotations

import stat as statmod
import time

from PySide6.QtCore import QAbstractTableModel, QMimeData, QModelIndex, QSortFilterProxyModel, Qt, QUrl

from app.units import format_bytes
from backends.core.base import FolderEntry

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


class FolderModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.entries: list[FolderEntry] = []
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
        entry = self.entries[index.row()]
        column = index.column()
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

    def clear(self) -> None:
        self.beginResetModel()
        self.entries = []
        self.endResetModel()

    def append(self, batch: list[FolderEntry]) -> None:
        if not batch:
            return
        first = len(self.entries)
        self.beginInsertRows(QModelIndex(), first, first + len(batch) - 1)
        self.entries.extend(batch)
        self.endInsertRows()

    def mimeTypes(self) -> list[str]:
        return [SITE_PATHS, "text/uri-list", "text/plain"]

    def mimeData(self, indexes) -> QMimeData:
        rows = sorted({i.row() for i in indexes if i.isValid()})
        return self.mime_of([self.entries[r] for r in rows])

    def supportedDragActions(self):
        return Qt.DropAction.CopyAction

    def supportedDropActions(self):
        return Qt.DropAction.CopyAction


class SortedEntries(QSortFilterProxyModel):
    """Folders before files, then the clicked column; the filter matches names, case-insensitively."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(NAME)
        self.setSortCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

    def lessThan(self, left, right) -> bool:
        a, b = left.data(EntryRole), right.data(EntryRole)
        if a.is_dir != b.is_dir:  # folders stay on top in either direction
            return a.is_dir if self.sortOrder() == Qt.SortOrder.AscendingOrder else b.is_dir
        column = left.column()
        if column == SIZE:
            return (a.size or 0, a.name.lower()) < (b.size or 0, b.name.lower())
        if column == MODIFIED:
            return (a.mtime or 0, a.name.lower()) < (b.mtime or 0, b.name.lower())
        if column == PERMISSIONS:
            return (a.mode or 0, a.name.lower()) < (b.mode or 0, b.name.lower())
        return a.name.lower() < b.name.lower()


def local_mime(folder: str, entries: list[FolderEntry]) -> QMimeData:
    import os

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(os.path.join(folder, e.name)) for e in entries])
    return mime


def site_mime(site_name: str, folder: str, entries: list[FolderEntry]) -> QMimeData:
    lines = [f"site:{site_name}/{'/'.join(p for p in (folder.strip('/'), e.name) if p)}{'/' if e.is_dir else ''}"
             for e in entries]
    mime = QMimeData()
    mime.setData(SITE_PATHS, "\n".join(lines).encode())
    mime.setText("\n".join(lines))
    return mime


def site_paths(mime: QMimeData) -> list[str]:
    """The ``site:NAME/path`` lines a drag from a remote pane carries (none for any other drag)."""
    if not mime.hasFormat(SITE_PATHS):
        return []
    return [line for line in bytes(mime.data(SITE_PATHS)).decode().splitlines() if line.strip()]
