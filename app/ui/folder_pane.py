"""A folder pane: this computer or a site, with a path bar, back/up/refresh, sorting, type-to-filter, and the
folder actions (new folder, rename, delete, copy path).

A site's folder is listed and changed on the engine's thread (``bridge.call("listdir" | "folder", …)``); its
entries come back in batches through a queued signal and are appended as they come, so the window never waits
on a server and a pane of 10,000 names fills while the server is still answering. This computer's folder is
read by a thread the same way (a network mount can be slow too). A listing that is no longer wanted (the user
moved on) is dropped by its generation number.

What a drop onto the pane means (upload here, download here) is decided by the window (``FilesTab``); the pane
only says what was dropped and onto which folder (``dropped``).
"""

from __future__ import annotations

import html
import os
import threading
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.sites import Site
from backends.core.abilities import FolderEntry

from . import pane_paths
from .folder_actions import PANE_ACTIONS, ask_archive
from .folder_model import EntryRole, FolderModel, local_mime, site_mime
from .icons import icon
from .pane_view import PaneView, scan_local
from .words import for_window

THIS_COMPUTER = "This computer"
BATCH = 500
FLUSH_MS = 150  # batches arriving closer together than this are added to the view together


class FolderPane(QWidget):
    dropped = Signal(list, object, str)  # what was dropped (local paths or site:NAME/path lines), pane, folder
    #: "pack" or "unpack", the local paths chosen, the folder they are in (``archive_actions``)
    archive_requested = Signal(str, list, str)
    #: this pane, and how its selection goes to the other: "" a copy, "pack" as one archive, "unpack" unpacked
    send_requested = Signal(object, str)
    said = Signal(str)  # an action's failure, as the sentence to show
    _arrived = Signal(int, object)  # generation, entries: emitted from the engine's or a scan's thread

    def __init__(self, bridge, sites, secret_of, parent=None, site: Site | None = None) -> None:
        """``sites()``: the saved sites; ``secret_of(site)``: its keyring secret or None; ``site``: the one to show
        first (None: this computer's home folder)."""
        super().__init__(parent)
        self.bridge, self._sites, self._secret_of = bridge, sites, secret_of
        self.site: Site | None = site
        self.path = site.home() if site else str(Path.home())
        self.history: list[str] = []
        self.generation = 0
        self.listing = False
        self.note = ""  # what the last folder action did, said with the next listing
        self.model = FolderModel(self)
        self.model.mime_of = self._mime
        self._pending: list[FolderEntry] = []
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.setInterval(FLUSH_MS)
        self._flush_timer.timeout.connect(self._flush)
        self._build()
        self._arrived.connect(self._add)
        self.load(self.path, remember=False)

    # -- building ----------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        top = QHBoxLayout()
        self.location = QComboBox(self)
        self.location.setMinimumWidth(140)
        self.location.activated.connect(self._location_chosen)
        top.addWidget(self.location)
        self.actions_by_name: dict[str, QAction] = {}
        for name, (label, icon_name, shortcut) in PANE_ACTIONS.items():
            action = QAction(icon(icon_name), label, self)
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.setToolTip(f"{label} ({shortcut})")
            action.triggered.connect(getattr(self, name))
            self.addAction(action)
            self.actions_by_name[name] = action
        for name in ("back", "up", "refresh"):
            button = QToolButton(self)
            button.setDefaultAction(self.actions_by_name[name])
            top.addWidget(button)
        self.path_bar = QLineEdit(self)
        self.path_bar.returnPressed.connect(lambda: self.load(self._typed_path()))
        top.addWidget(self.path_bar, 1)
        layout.addLayout(top)
        self.filter_box = QLineEdit(self)
        self.filter_box.setPlaceholderText("Filter names (Ctrl+F)")
        self.filter_box.setClearButtonEnabled(True)
        self.filter_box.textChanged.connect(self.model.set_filter)
        layout.addWidget(self.filter_box)
        self.view = PaneView(self)
        self.view.setModel(self.model)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        # the name takes what is left; the others the width of their longest text, measured once on a sample (not
        # ResizeToContents, which measures every row again on each batch of a 10,000-name folder)
        header = self.view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        metrics = self.view.fontMetrics()
        for column, sample in ((1, "1023.9 MiB"), (2, "2026-12-31 23:59"), (3, "drwxr-xr-x")):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)
            self.view.setColumnWidth(column, metrics.horizontalAdvance(sample) + 28)
        self.view.doubleClicked.connect(self._open)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._menu)
        layout.addWidget(self.view, 1)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.refresh_sites()

    def refresh_sites(self) -> None:
        """The location menu: this computer, then every saved site."""
        current = self.site.name if self.site else THIS_COMPUTER
        self.location.clear()
        self.location.addItem(icon("mdi6.laptop"), THIS_COMPUTER, None)
        for site in self._sites():
            self.location.addItem(icon("mdi6.server-network"), site.name, site)
        found = self.location.findText(current)
        self.location.setCurrentIndex(max(found, 0))

    # -- where the pane is -----------------------------------------------------------------------
    @property
    def where(self) -> str:
        """The folder in words: a local path, or ``NAME:/path`` (``NAME:~/path`` below the login folder)."""
        return self.path if self.site is None else f"{self.site.name}:{self.path}"

    def show_site(self, site: Site | None, path: str | None = None) -> None:
        """Show ``site`` (None: this computer) at ``path`` (default: the home folder, or where the site's pane
        opens, ``Site.home``; a relative path is below what ``site:NAME/path`` is below, ``Site.anchor``)."""
        self.site = site
        self.history.clear()
        self.location.setCurrentIndex(max(self.location.findText(site.name if site else THIS_COMPUTER), 0))
        if site is None:
            self.load(path if path is not None else str(Path.home()), remember=False)
        else:
            self.load(site.home() if not path else pane_paths.below(site.anchor(), path), remember=False)

    def shows(self, dest: str) -> bool:
        """Whether a transfer to ``dest`` may have changed what this pane lists (its folder or below it, on this
        computer; anything on the pane's host, for a site, whose addresses name it)."""
        if self.site is None:
            return "://" not in dest and os.path.abspath(dest).startswith(os.path.join(self.path, ""))
        return "://" in dest and self.site.host in dest.split("://", 1)[1].split("/", 1)[0]

    def _location_chosen(self, index: int) -> None:
        self.show_site(self.location.itemData(index))

    def _typed_path(self) -> str:
        text = self.path_bar.text().strip()
        if self.site is None:
            return os.path.expanduser(text)
        return pane_paths.typed(text, self.site.name, self.path)

    def child(self, name: str) -> str:
        if self.site is None:
            return os.path.join(self.path, name)
        return pane_paths.join(self.path, name)

    def parent_path(self) -> str | None:
        if self.site is None:
            parent = os.path.dirname(self.path.rstrip(os.sep)) or os.sep
            return None if parent == self.path else parent
        return pane_paths.parent(self.path)

    def address(self, where: str, *, with_secret: bool = False, folder: bool = False) -> str:
        """A server path's URL (``pane_paths``' form) for the engine (with the keyring's secret) or for the
        clipboard (without)."""
        assert self.site is not None
        secret = self._secret_of(self.site) if with_secret else None
        return self.site.url_of(where + ("/" if folder and not where.endswith("/") else ""), secret)

    def site_path(self, where: str, folder: bool = False) -> str:
        """A server path as the front door takes it: ``site:NAME/rel`` below the site's default folder (what the
        user reads in New transfer), else ``site:NAME//abs`` or ``site:NAME/~/path``; a folder with its trailing
        slash."""
        assert self.site is not None
        rel = pane_paths.inside(self.site.anchor(), where)
        shown = where if rel is None else rel
        slash = "/" if folder and shown and not shown.endswith("/") else ""
        return f"site:{self.site.name}/{shown}{slash}"

    # -- listing ---------------------------------------------------------------------------------
    def load(self, path: str, remember: bool = True) -> None:
        if remember and path != self.path:
            self.history.append(self.path)
        self.path = path
        self.generation += 1
        generation = self.generation
        self._pending = []
        self._flush_timer.stop()
        self.model.clear()
        self.path_bar.setText(self.where)
        self.listing = True
        self.status.setText("Listing…")
        if self.site is None:
            threading.Thread(target=self._scan, args=(path, generation), daemon=True,
                             name="ferry-pane-scan").start()
            return
        options = self._options()
        self.bridge.call("listdir", self.address(path, with_secret=True, folder=True), options,
                         lambda batch: self._arrived.emit(generation, batch),
                         done=lambda entries: self._listed(generation, entries),
                         error=lambda message: self._failed(generation, message))

    def _options(self):
        from app.requests import site_options

        return site_options(self.site)

    def _scan(self, folder: str, generation: int) -> None:  # a thread of its own: never touches Qt objects
        try:
            entries = scan_local(folder)
        except OSError as exc:
            self._arrived.emit(generation, f"Cannot read {folder}: {exc.strerror or exc}.")
            return
        for start in range(0, len(entries), BATCH):
            self._arrived.emit(generation, entries[start:start + BATCH])
        self._arrived.emit(generation, None)

    def _add(self, generation: int, batch) -> None:
        if generation != self.generation:
            return  # a folder the user has left
        if isinstance(batch, str):
            self._failed(generation, batch)
        elif batch is None:
            self._listed(generation, self.model.every)
        else:
            self._pending.extend(batch)
            if not self.model.every:
                self._flush()  # the first rows at once
            elif not self._flush_timer.isActive():
                self._flush_timer.start()

    def _flush(self) -> None:
        """What arrived since the last time, added in one go: a burst of batches costs one re-sort and one
        repaint, not one each (every call into Qt may wait for the GIL while a transfer's threads run)."""
        if self._pending:
            batch, self._pending = self._pending, []
            self.model.append(batch)
            self.status.setText(f"{len(self.model.every):,} items so far…")

    def _listed(self, generation: int, entries) -> None:
        if generation != self.generation:
            return
        self._flush_timer.stop()
        self._flush()
        if not self.model.every and entries:  # a backend that answered all at once, without batches
            self.model.append(list(entries))
        self.listing = False
        shown = len(self.model.every)
        self.status.setText(" ".join(t for t in (self.note, f"{shown:,} item{'' if shown == 1 else 's'}") if t))
        self.note = ""

    def _failed(self, generation: int, message: str) -> None:
        """A listing that failed is said in the pane's own status line, in the window's words: a box on every
        refresh (as before) stops the user instead of telling them."""
        if generation != self.generation:
            return
        self.listing = False
        self.status.setText(f"<span style='color:#c0392b'>{html.escape(for_window(message))}</span>")

    # -- moving around -------------------------------------------------------------------------------
    def _open(self, index) -> None:
        entry = index.data(EntryRole)
        if entry is not None and entry.is_dir:
            self.load(self.child(entry.name))

    def back(self) -> None:
        if self.history:
            self.load(self.history.pop(), remember=False)

    def up(self) -> None:
        parent = self.parent_path()
        if parent is not None:
            self.load(parent)
        elif self.site is not None and self.path == pane_paths.LOGIN:
            self._locate_login_folder()

    def _locate_login_folder(self) -> None:
        """Up from the login folder: the server says where that folder is (SSH's realpath, FTP's PWD), then the
        pane goes to its parent; a server that cannot say leaves the pane where it is, and says so."""
        generation = self.generation
        self.status.setText("Asking the server where the login folder is…")

        def located(absolute: str) -> None:
            if generation == self.generation:  # the user has not moved on meanwhile
                self.load(pane_paths.parent(pane_paths.normal(absolute)) or "/")

        self.bridge.call("locate", self.address(self.path, with_secret=True, folder=True), self._options(),
                         done=located, error=lambda message: self._failed(generation, message))

    def refresh(self) -> None:
        self.load(self.path, remember=False)

    def filter(self) -> None:
        self.filter_box.setFocus()
        self.filter_box.selectAll()

    def selected(self) -> list[FolderEntry]:
        rows = {i.row() for i in self.view.selectionModel().selectedRows()}
        return [self.model.entries[r] for r in sorted(rows)]

    def _mime(self, entries: list[FolderEntry]):
        if self.site is None:
            return local_mime(self.path, entries)
        return site_mime(self.items(entries))

    def items(self, entries: list[FolderEntry]) -> list[str]:
        """What a transfer takes for ``entries``: local paths, or ``site:NAME/path`` (folders with ``/``)."""
        if self.site is None:
            return [os.path.join(self.path, e.name) for e in entries]
        return [self.site_path(self.child(e.name), e.is_dir) for e in entries]

    def send(self, how: str = "") -> None:
        if self.selected():
            self.send_requested.emit(self, how if isinstance(how, str) else "")  # ``triggered`` passes a bool

    def send_packed(self) -> None:
        """Each selected item as one tar made as it is sent (``copy --pack``), never written here."""
        self.send("pack")

    def send_unpacked(self) -> None:
        """Each selected archive of a site unpacked into the other pane's folder as it arrives (``--unpack``)."""
        self.send("unpack")

    def _menu(self, point) -> None:
        menu = QMenu(self)
        names = ["send", "mkdir", "rename", "delete", "copy_path", "refresh"]
        # packing and unpacking happen on this computer's disk; a site's archive is unpacked as it arrives here
        names[1:1] = ["send_packed", "pack", "unpack"] if self.site is None else ["send_unpacked"]
        for name in names:
            menu.addAction(self.actions_by_name[name])
        menu.exec(self.view.viewport().mapToGlobal(point))

    def pack(self) -> None:
        ask_archive(self, "pack")

    def unpack(self) -> None:
        ask_archive(self, "unpack")


    # -- folder actions (``folder_actions.py`` does them) ---------------------------------------------
    def mkdir(self) -> None:
        from .folder_actions import make_folder

        make_folder(self)

    def rename(self) -> None:
        from .folder_actions import rename_entry

        rename_entry(self)

    def delete(self) -> None:
        from .folder_actions import delete_entries

        delete_entries(self)

    def copy_path(self) -> None:
        entries = self.selected()
        if self.site is None:
            paths = [os.path.join(self.path, e.name) for e in entries] or [self.path]
        else:
            paths = [self.address(self.child(e.name), folder=e.is_dir) for e in entries] or [self.address(
                self.path, folder=True)]
        QGuiApplication.clipboard().setText("\n".join(paths))
        self.status.setText(f"Copied {paths[0]}" + (f" and {len(paths) - 1} more" if len(paths) > 1 else ""))

