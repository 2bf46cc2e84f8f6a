"""What the window does with things given to it: dropped on it, or handed over by a second ``labferry-gui``.

One place decides for every way in (a drop, the file manager's "Open with", a browser's link, the command line
of a second start): an address downloads into the download folder, a ``.torrent`` or magnet asks which peer
holds it, accessions open the Public data dialog, local files go to a site the user picks. What is none of
these is said in one sentence, never dropped silently.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtWidgets import QInputDialog

from app.accessions.ids import is_accession
from app.units import counted

from .folder_model import site_paths
from .panels import local_paths
from .words import as_folder


class Opening:
    """A mix-in of the main window; needs ``submit``, ``fetch_torrent``, ``public_data``, ``upload_to_site``,
    ``_sites``, ``settings``, ``files`` and ``_show_error``."""

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() or event.mimeData().hasText():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        mime = event.mimeData()
        remote = site_paths(mime)
        if remote:  # a site's entries dragged from the Files tab onto the queue: into the download folder
            folder = as_folder(self.settings.get("download_folder") or str(Path.home() / "Downloads"))
            for item in remote:
                self.submit(item, folder, **self.files.existing_choice())
            event.acceptProposedAction()
            return
        urls = mime.urls() if mime.hasUrls() else []
        items = [u.toString() for u in urls if not u.isLocalFile()] + local_paths(urls)
        if not urls and mime.hasText():
            items = [line.split("#", 1)[0].strip() for line in mime.text().splitlines()]
        self.open_items([i for i in items if i])
        event.acceptProposedAction()

    def open_items(self, items: list[str]) -> None:
        """Addresses, torrents, magnets, accessions and local files, each to where it belongs."""
        self.showNormal()
        self.raise_()
        self.activateWindow()
        folder = as_folder(self.settings.get("download_folder") or str(Path.home() / "Downloads"))
        items = [QUrl(i).toLocalFile() if i.startswith("file://") else i for i in items]  # the desktop's %U
        torrents = [i for i in items
                    if i.startswith("magnet:") or (i.lower().endswith(".torrent") and Path(i).is_file())]
        addresses = [i for i in items if "://" in i and i not in torrents]
        local = [i for i in items if i not in torrents and "://" not in i and Path(i).exists()]
        accessions = [i for i in items if i not in torrents + addresses + local and is_accession(i)]
        unknown = [i for i in items if i not in torrents + addresses + local + accessions]
        for address in addresses:
            self.submit(address, folder)
        for torrent in torrents:
            self.fetch_torrent(torrent, folder)
        if accessions:
            self.public_data("\n".join(accessions))
        if local:
            self._send_local(local)
        if unknown:
            shown = ", ".join(unknown[:3]) + (" …" if len(unknown) > 3 else "")
            self._show_error(f"Ferry cannot open {shown}: it is not an address (https://, sftp://, ftp://, "
                             "gsiftp://), a .torrent, a magnet link, an accession or a file on this computer.")

    def paste(self) -> None:
        """What the clipboard holds, into New transfer with it filled in (where it goes and what to do with files
        already there are chosen first, as for any transfer); accessions into Public data."""
        from PySide6.QtWidgets import QApplication

        items = [line.split("#", 1)[0].strip() for line in QApplication.clipboard().text().splitlines()]
        items = [i for i in items if i]
        if not items:
            self._show_error("The clipboard holds no address, accession or file to copy.")
        elif all(is_accession(i) and "://" not in i for i in items):
            self.public_data("\n".join(items))
        else:
            self.new_transfer(items[0], more=items[1:])

    def create_torrent(self, path: str = "") -> None:
        """Make a torrent of a file or folder (hashed off the GUI thread), then seed it if asked."""
        from .torrents import CreateTorrentDialog

        writing = lambda: [v.dest for v in self.queue_model.views() if v.state.active and not v.seeding]  # noqa: E731
        dialog = CreateTorrentDialog(self, path, writing)
        if not dialog.exec() or dialog.torrent is None:
            return
        self.status.setText(f"Wrote {dialog.torrent}")
        if dialog.seed.isChecked():
            self.submit(str(dialog.torrent), dialog.path.text().strip(), backend_options={
                "seed": True, "listen": dialog.listen.text().strip() or "0.0.0.0:6881", "connections": 8,
                "encryption": "required"})

    def _send_local(self, paths: list[str]) -> None:
        sites = [s.name for s in self._sites()]
        if not sites:
            self._show_error("To send files, first add the site to send them to (Add site).")
            return
        name, ok = QInputDialog.getItem(self, "Send to which site?", f"Send {counted(len(paths), 'item')} to:",
                                        sites, 0, False)
        if ok:
            self.upload_to_site(name, paths)
