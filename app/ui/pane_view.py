"""A folder pane's table (``PaneView``: what a drop onto it names) and the reading of this computer's folders
(``scan_local``), apart from the pane's own navigation and listing (``folder_pane``)."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from backends.core.abilities import FolderEntry

from .folder_model import EntryRole, site_paths
from .panels import local_paths


def scan_local(folder: str) -> list[FolderEntry]:
    """This computer's folder as entries (links followed to say what they lead to; a dangling one kept)."""
    out = []
    with os.scandir(folder) as found:
        for item in found:
            try:
                info = item.stat()
            except OSError:
                info = item.stat(follow_symlinks=False)
            is_dir = item.is_dir()
            out.append(FolderEntry(item.name, is_dir, None if is_dir else info.st_size, info.st_mtime,
                                   info.st_mode & 0o7777, item.is_symlink()))
    return out


class PaneView(QTableView):
    """The entries; a drop names the folder row under the cursor, or the pane's own folder.

    A table, not a tree: a ``QTreeView`` lays out every row again after each batch (asking the model whether
    each of 10,000 rows has children, a call into Python apiece), measured as 60–170 ms stalls; a table
    with fixed row heights lays out nothing per row."""

    def __init__(self, pane) -> None:
        super().__init__(pane)
        self.pane = pane
        self.setTabKeyNavigation(False)  # Tab moves to the other pane's controls; arrows move inside the table
        self.verticalHeader().hide()
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.horizontalHeader().setHighlightSections(False)
        self.horizontalHeader().setStretchLastSection(True)
        self.setShowGrid(False)
        self.setWordWrap(False)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSortingEnabled(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)

    def dragEnterEvent(self, event) -> None:
        if event.source() is not self and (event.mimeData().hasUrls() or site_paths(event.mimeData())):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        if event.source() is self:
            event.ignore()
            return
        event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        mime = event.mimeData()
        items = site_paths(mime) or local_paths(mime.urls() if mime.hasUrls() else [])
        index = self.indexAt(event.position().toPoint())
        entry = index.data(EntryRole) if index.isValid() else None
        folder = self.pane.child(entry.name) if entry is not None and entry.is_dir else self.pane.path
        event.acceptProposedAction()
        if items:
            self.pane.dropped.emit(items, self.pane, folder)
