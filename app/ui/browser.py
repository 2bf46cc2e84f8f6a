"""Pick a remote file or folder in a folder pane, inside the New transfer dialog: the source of a download, or
the folder an upload goes into.

It is the Files tab's pane (``FolderPane``), so it lists on the engine's thread and fills as entries arrive;
this dialog only turns the choice into ``site:NAME/path`` for the front door.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout

from .folder_pane import FolderPane


class RemoteBrowser(QDialog):
    """``chosen`` is the ``site:NAME/path`` picked: the selected entry, or (``folder=True``, or nothing selected)
    the folder shown; a folder ends in ``/``."""

    def __init__(self, bridge, site, secret: str | None, parent=None, *, folder: bool = False) -> None:
        super().__init__(parent)
        self.site, self.folder_only = site, folder
        self.setWindowTitle(f"Choose the folder on {site.name} to send to" if folder else f"Browse {site.name}")
        self.resize(720, 520)
        layout = QVBoxLayout(self)
        if folder:
            layout.addWidget(QLabel("Open the folder the files should go into, then press Choose.", self))
        self.pane = FolderPane(bridge, lambda: [site], lambda _site: secret, self, site=site)
        self.pane.view.doubleClicked.connect(self._maybe_choose_file)
        layout.addWidget(self.pane, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        choose = buttons.addButton("Choose", QDialogButtonBox.ButtonRole.AcceptRole)
        choose.setDefault(True)
        buttons.accepted.connect(self._choose)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.chosen: str | None = None

    def _maybe_choose_file(self, index) -> None:
        entries = self.pane.selected()
        if not self.folder_only and len(entries) == 1 and not entries[0].is_dir:
            self._choose()

    def _choose(self) -> None:
        entries = [] if self.folder_only else self.pane.selected()
        if len(entries) == 1:
            entry = entries[0]
            self.chosen = self.pane.site_path(self.pane.child(entry.name), entry.is_dir)
        else:
            self.chosen = self.pane.site_path(self.pane.path, folder=True)
        self.accept()
