"""The queue's context menu: what a user reaches for on a transfer's row, as in a browser's downloads list —
open the folder it went to (an accession's samplesheet is there), copy its path, and the toolbar's own actions
for the selection."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QMenu

#: the toolbar's actions the menu offers too, in this order
ROW_ACTIONS = ("pause", "resume", "retry", "cancel", "remove")


def local_folder(view) -> Path | None:
    """The folder on this computer a transfer went to (None for an upload or a copy between servers)."""
    if "://" in view.dest or view.dest.startswith("site:"):
        return None
    dest = Path(view.dest)
    return dest if dest.is_dir() else dest.parent


def open_folder(view) -> bool:
    """Show the transfer's folder in the desktop's file manager."""
    folder = local_folder(view)
    return folder is not None and QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))


def queue_menu(window, position) -> QMenu | None:
    """The menu for the row under ``position`` (it becomes the selection when it was not part of it)."""
    index = window.queue_view.indexAt(position)
    if not index.isValid():
        return None
    if not window.queue_view.selectionModel().isRowSelected(index.row(), index.parent()):
        window.queue_view.selectRow(index.row())
    views = window.selected_views()
    if not views:
        return None
    view = views[0]
    menu = QMenu(window.queue_view)
    opened = QAction("Open folder", menu)
    opened.setEnabled(local_folder(view) is not None)
    opened.triggered.connect(lambda: open_folder(view))
    menu.addAction(opened)
    copied = QAction("Copy destination path", menu)
    copied.triggered.connect(lambda: QGuiApplication.clipboard().setText(view.dest))
    menu.addAction(copied)
    menu.addSeparator()
    for name in ROW_ACTIONS:
        menu.addAction(window.actions_by_name[name])
    return menu
