"""The Files tab: two folder panes side by side, this computer on one side and a site on the other (or a second
site), and what a drag between them means.

Every copy it starts goes through the window's ``submit`` (the front door, ``app.requests``), so a drag is the
same transfer as one typed in New transfer: the site's profile, the keyring's secret, the queue, the history.
Local files dropped on a site's folder are uploaded into it; a site's entries dropped on this computer's folder
are downloaded into it; what is already there is handled as the "If files exist" choice above the panes says.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from app.sites import Site

from .dialogs import EXISTING_CHOICES, EXISTING_OPTIONS
from .folder_pane import FolderPane
from .words import as_folder


class FilesTab(QWidget):
    def __init__(self, bridge, sites, secret_of, submit, show_error, parent=None) -> None:
        """``submit(source, dest, **overrides)`` queues a transfer; ``show_error(sentence)`` says a problem."""
        super().__init__(parent)
        self._submit, self._show_error = submit, show_error
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Drag between the panes to copy; drop files from your file manager on a site's "
                             "folder to send them there.", self), 1)
        bar.addWidget(QLabel("If files exist:", self))
        self.existing = QComboBox(self)
        for label, key in EXISTING_CHOICES:
            self.existing.addItem(label, key)
        bar.addWidget(self.existing)
        layout.addLayout(bar)
        self.left = FolderPane(bridge, sites, secret_of, self)
        self.right = FolderPane(bridge, sites, secret_of, self)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.setObjectName("two-panes")  # remembered by name (``remembered``)
        for pane in (self.left, self.right):
            pane.dropped.connect(self.copy_into)
            pane.send_requested.connect(self._send)
            pane.archive_requested.connect(self.archive)
            pane.said.connect(show_error)
            split.addWidget(pane)
        layout.addWidget(split, 1)
        self._sites = sites
        self._shown = False

    def showEvent(self, event) -> None:
        """The first time the tab is shown, the right pane opens the first site: no server is asked anything
        before someone looks."""
        super().showEvent(event)
        if not self._shown:
            self._shown = True
            known = self._sites()
            if known and self.right.site is None:
                self.right.show_site(known[0])

    def existing_choice(self) -> dict:
        """The "If files exist" choice as the front door's overrides."""
        return dict(EXISTING_OPTIONS[self.existing.currentData()])

    def panes(self) -> tuple[FolderPane, FolderPane]:
        return self.left, self.right

    def other(self, pane: FolderPane) -> FolderPane:
        return self.right if pane is self.left else self.left

    def refresh_sites(self) -> None:
        for pane in self.panes():
            pane.refresh_sites()

    def job_finished(self, view) -> None:
        """A transfer ended: show what it brought into a pane's folder (only there: listing a site's folder of
        thousands again for every unrelated job would keep the server busy for nothing)."""
        for pane in self.panes():
            if not pane.listing and pane.shows(view.dest):
                pane.refresh()

    def _send(self, pane: FolderPane, how: str = "") -> None:
        target = self.other(pane)
        self.copy_into(pane.items(pane.selected()), target, target.path, how)

    def copy_into(self, items: list[str], pane: FolderPane, folder: str, how: str = "") -> None:
        """Copy ``items`` (local paths or ``site:NAME/path``) into ``folder`` of ``pane``, one transfer each;
        ``how``: "pack", each local item as one archive made as it is sent (``--pack``); "unpack", each archive
        of a site unpacked into ``folder`` as it arrives (``--unpack``)."""
        remote = [i for i in items if i.startswith("site:")]
        local = [i for i in items if not i.startswith("site:")]
        chosen = self.existing_choice() | ({how: True} if how else {})
        if how == "pack" and (pane.site is None or remote):
            self._show_error("Send as one archive packs folders of this computer for a site: open the site in the "
                             "other pane and select folders here.")
            return
        if how == "unpack" and (pane.site is not None or local):
            self._show_error("Copy and unpack fetches archives of a site into this computer: select them in the "
                             "site's pane, with a folder of this computer in the other.")
            return
        if pane.site is None:
            if local:
                self._show_error("Both sides are this computer: copy between local folders in your file manager.")
            for item in remote:
                self._submit(item, as_folder(folder), **chosen)
            return
        if remote:
            self._show_error("Ferry copies between a site and this computer; to copy between two sites, fetch to "
                             "this computer first, then send.")
        target = pane.site_path(folder, folder=True)
        for item in local:
            self._submit(item, target, **chosen)

    def archive(self, action: str, paths: list[str], folder: str) -> None:
        """Queue a Pack (each path into ``NAME.tar`` beside it) or an Unpack (each archive into ``folder``), as
        jobs of the queue with progress, through the front door like any transfer."""
        for path in paths:
            dest = path.rstrip("/\\") + ".tar" if action == "pack" else as_folder(folder)
            self._submit(path, dest, backend="archive", backend_options={"action": action}, **self.existing_choice())

    def show_site(self, site: Site | None, path: str | None = None, right: bool = True) -> None:
        (self.right if right else self.left).show_site(site, path)
