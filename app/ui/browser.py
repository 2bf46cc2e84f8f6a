"""A remote file browser for SSH sites, inside the New transfer dialog.

Listing happens on the engine's thread (``Engine.request("listdir", …)``); the dialog only
shows what comes back, so a slow server never freezes the window.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QListWidget, QListWidgetItem, QVBoxLayout

from app.units import format_bytes

EntryRole = Qt.ItemDataRole.UserRole + 7


class RemoteBrowser(QDialog):
    """Pick a remote file or folder under a site; ``chosen`` is the ``site:NAME/path`` picked."""

    def __init__(self, bridge, site, secret: str | None, options, parent=None) -> None:
        super().__init__(parent)
        self.bridge, self.site, self.secret, self.options = bridge, site, secret, options
        self.setWindowTitle(f"Browse {site.name}")
        self.resize(560, 480)
        layout = QVBoxLayout(self)
        self.where = QLabel(self)
        self.listing = QListWidget(self)
        self.listing.itemDoubleClicked.connect(self._open)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel,
                                   self)
        buttons.accepted.connect(self._choose)
        buttons.rejected.connect(self.reject)
        for widget in (self.where, self.listing, self.status, buttons):
            layout.addWidget(widget)
        self.path = ""
        self.chosen: str | None = None
        self.load("")

    def load(self, path: str) -> None:
        self.path = path.strip("/")
        self.where.setText(f"{self.site.name}: /{self.path}" if self.path else f"{self.site.name}: (default folder)")
        self.status.setText("Listing…")
        self.listing.clear()
        url = self.site.url(self.path + "/" if self.path else "", self.secret)
        self.bridge.call("listdir", url, self.options, done=self._show, error=self.status.setText)

    def _show(self, entries) -> None:
        self.status.setText(f"{len(entries)} items")
        if self.path:
            up = QListWidgetItem("..")
            up.setData(EntryRole, ("..", True))
            self.listing.addItem(up)
        for entry in sorted(entries, key=lambda e: (not e.is_dir, e.rel.lower())):
            label = entry.rel + ("/" if entry.is_dir else f"   ({format_bytes(entry.size)})")
            item = QListWidgetItem(label)
            item.setData(EntryRole, (entry.rel, entry.is_dir))
            self.listing.addItem(item)

    def _open(self, item: QListWidgetItem) -> None:
        name, is_dir = item.data(EntryRole)
        if name == "..":
            self.load(self.path.rsplit("/", 1)[0] if "/" in self.path else "")
        elif is_dir:
            self.load(f"{self.path}/{name}" if self.path else name)
        else:
            self._choose()

    def _choose(self) -> None:
        item = self.listing.currentItem()
        name = item.data(EntryRole)[0] if item is not None and item.data(EntryRole)[0] != ".." else ""
        path = "/".join(p for p in (self.path, name) if p)
        self.chosen = f"site:{self.site.name}/{path}"
        self.accept()
