"""The folder actions of a pane: new folder, rename, delete.

On a site they are the engine's (``bridge.call("folder", …)``: the backend's ``FolderEditor``, names as protocol
arguments, never a shell string); on this computer they are the file system's, and a delete goes to the
desktop's trash where it has one. A delete is confirmed first, in a sentence that names what goes and says
when a folder goes with everything in it. The pane is listed again once the server has answered.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from PySide6.QtCore import QFile
from PySide6.QtWidgets import QInputDialog, QMessageBox

from backends.core.errors import TransferError
from backends.core.urls import entry_name
from backends.core.words import counted

#: pane actions: name → (label, icon, shortcut)
PANE_ACTIONS = {
    "back": ("Back", "mdi6.arrow-left", "Alt+Left"),
    "up": ("Up one folder", "mdi6.arrow-up-bold-outline", "Alt+Up"),
    "refresh": ("Refresh", "mdi6.refresh", "F5"),
    "mkdir": ("New folder", "mdi6.folder-plus-outline", "F7"),
    "rename": ("Rename", "mdi6.rename-box", "F2"),
    "delete": ("Delete", "mdi6.delete-outline", "Shift+Del"),
    "copy_path": ("Copy path", "mdi6.content-copy", "Ctrl+Shift+C"),
    "send": ("Copy to the other pane", "mdi6.swap-horizontal", "F6"),
    "send_packed": ("Send to the other pane as one archive", "mdi6.package-up", "Shift+F6"),
    "send_unpacked": ("Copy to the other pane and unpack", "mdi6.package-down", "Ctrl+Shift+F6"),
    "pack": ("Pack into an archive", "mdi6.archive-arrow-down-outline", "Ctrl+Alt+P"),
    "unpack": ("Unpack here", "mdi6.archive-arrow-up-outline", "Ctrl+Alt+U"),
    "filter": ("Filter", "mdi6.filter-outline", "Ctrl+F"),
}


class FolderPane(Protocol):
    """What the actions use of a folder pane (``folder_pane.FolderPane``, which calls them: named here, not
    imported, so the pane and its actions do not import each other)."""

    site: Any
    path: str
    bridge: Any
    status: Any
    said: Any
    note: str

    @property
    def where(self) -> str: ...

    def address(self, rel: str, *, with_secret: bool = False, folder: bool = False) -> str: ...

    def child(self, name: str) -> str: ...

    def refresh(self) -> None: ...

    def selected(self) -> list: ...

    def _options(self): ...


def _checked(pane: FolderPane, name: str | None) -> str | None:
    if name is None:
        return None
    try:
        return entry_name(name)
    except TransferError as exc:
        pane.status.setText(str(exc))
        pane.said.emit(str(exc))
        return None


def _remote(pane: FolderPane, action: str, rel: str, *args, done_text: str, folder: bool = False) -> None:
    """One folder action on the engine's thread; the pane is listed again when it is done."""
    pane.status.setText("Working…")

    def done(result) -> None:
        many = counted(result, "entry", "entries") if isinstance(result, int) else result
        pane.note = done_text.format(result=result, entries=many)
        pane.refresh()

    def failed(message: str) -> None:
        pane.status.setText(message)
        pane.said.emit(message)

    pane.bridge.call("folder", action, pane.address(rel, with_secret=True, folder=folder), pane._options(), *args,
                     done=done, error=failed)


def make_folder(pane: FolderPane) -> None:
    name = _checked(pane, ask_text(pane, "New folder", f"New folder in {pane.where}:"))
    if name is None:
        return
    if pane.site is not None:
        _remote(pane, "mkdir", pane.child(name), done_text=f"Made the folder {name}.", folder=True)
        return
    try:
        os.mkdir(os.path.join(pane.path, name))
    except OSError as exc:
        pane.said.emit(f"Could not make the folder {name} in {pane.path}: {exc.strerror or exc}.")
        return
    pane.refresh()


def rename_entry(pane: FolderPane) -> None:
    entries = pane.selected()
    if len(entries) != 1:
        pane.said.emit("Select one file or folder to rename.")
        return
    old = entries[0].name
    name = _checked(pane, ask_text(pane, "Rename", f"New name for {old}:", old))
    if name is None or name == old:
        return
    if pane.site is not None:
        _remote(pane, "rename", pane.child(old), name, done_text=f"Renamed {old} to {name}.")
        return
    source, target = os.path.join(pane.path, old), os.path.join(pane.path, name)
    if os.path.lexists(target):
        pane.said.emit(f"There is already something named {name} in {pane.path}; Ferry does not replace it.")
        return
    try:
        os.rename(source, target)
    except OSError as exc:
        pane.said.emit(f"Could not rename {old}: {exc.strerror or exc}.")
        return
    pane.refresh()


def describe(entries) -> str:
    """What a delete takes, in words: names (a few), and whether folders go with what is in them."""
    names = ", ".join(e.name for e in entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    folders = sum(e.is_dir for e in entries)
    if folders == len(entries) == 1:
        return f"the folder {names} and everything in it"
    if folders:
        return f"{names} ({folders} of them folders, with everything in them)"
    return names


def delete_entries(pane: FolderPane) -> None:
    entries = pane.selected()
    if not entries:
        pane.said.emit("Select what to delete first.")
        return
    where = pane.where
    gone = "It cannot be undone." if pane.site is not None else "It goes to the trash."
    if not confirm(pane, "Delete", f"Delete {describe(entries)} from {where}? {gone}"):
        return
    if pane.site is not None:
        for entry in entries:
            _remote(pane, "delete", pane.child(entry.name), done_text=f"Deleted {entry.name} ({{entries}}).",
                    folder=entry.is_dir)
        return
    for entry in entries:
        path = os.path.join(pane.path, entry.name)
        if not QFile.moveToTrash(path):
            pane.said.emit(f"Could not move {path} to the trash; delete it in your file manager.")
            break
    pane.refresh()


def ask_text(parent, title: str, label: str, text: str = "") -> str | None:
    value, ok = QInputDialog.getText(parent, title, label, text=text)
    return value.strip() if ok and value.strip() else None


def confirm(parent, title: str, question: str) -> bool:
    answer = QMessageBox.question(parent, title, question,
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                                  QMessageBox.StandardButton.Cancel)
    return answer == QMessageBox.StandardButton.Yes


def ask_archive(pane: FolderPane, action: str) -> None:
    """Ask the Files tab to queue a Pack (each selected item into its own archive beside it) or an Unpack (each
    selected archive into the pane's folder); said in the pane's status line when it cannot be done there."""
    import os

    from backends.archive.address import is_archive

    if pane.site is not None:
        pane.status.setText("Packing and unpacking work on this computer's files: use the other pane.")
        return
    chosen = pane.selected()
    if action == "unpack":
        chosen = [e for e in chosen if not e.is_dir and is_archive(e.name)]
    if not chosen:
        pane.status.setText("Select a folder or files to pack." if action == "pack" else
                            "Select a .tar or .tar.zst archive to unpack.")
        return
    pane.archive_requested.emit(action, [os.path.join(pane.path, e.name) for e in chosen], pane.path)
