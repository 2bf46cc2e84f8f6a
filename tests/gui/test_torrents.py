"""Torrents in the window: a folder made into a private v2 TLS torrent in the Create dialog (hashed off the GUI
thread), seeded by the window on a port it names, refused to another Ferry process without a certificate from the
window's lab CA and fetched by it byte for byte with one, listed
in the Seeding tab with what it served and its ratio, and stopped from there; a magnet or link pasted works as a
drop."""

from __future__ import annotations

import os
import time
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QApplication

from app.engine import JobState
from tests.integration.conftest import MiB, labferry, sha256_of, write_random
from tests.servers.nginx import free_port

from .test_window import _wait_listening


def test_create_a_torrent_seed_it_and_watch_it_served(qtbot, window, tmp_path, monkeypatch):
    import app.ui.torrents as torrents

    share = tmp_path / "run42"
    share.mkdir()
    write_random(share / "run42_1.fastq.gz", 6 * MiB, seed=81)
    write_random(share / "run42_2.fastq.gz", 6 * MiB, seed=82)
    port = free_port()

    class Filled(torrents.CreateTorrentDialog):
        def exec(self) -> int:
            self.show()
            self.path.setText(str(share))
            self.listen.setText(f"127.0.0.1:{port}")
            self.create_button.click()
            qtbot.waitUntil(lambda: self.result() == 1 or "could not" in self.message.text(), timeout=60_000)
            return self.result()

    monkeypatch.setattr(torrents, "CreateTorrentDialog", Filled)
    window.actions_by_name["torrent"].trigger()
    torrent = tmp_path / "run42.torrent"
    assert torrent.exists()
    qtbot.waitUntil(lambda: bool(window.seeding.views) and next(iter(window.seeding.views.values())).state
                    == JobState.RUNNING, timeout=30_000)
    _wait_listening(port)
    import libtorrent as lt

    assert lt.torrent_info(str(torrent)).ssl_cert()  # TLS is the window's default: the collaborator gets a cert
    cert = labferry("torrent", "cert", str(tmp_path / "collab"), env_home=Path(os.environ["LABFERRY_HOME"]))
    assert cert.returncode == 0, cert.stderr
    refused = labferry("copy", str(torrent), f"{tmp_path / 'there'}/", "--peer", f"127.0.0.1:{port}",
                       env_home=tmp_path / "other-lab", timeout=120)
    assert refused.returncode != 0 and "is a TLS torrent" in refused.stderr
    fetched = labferry("copy", str(torrent), f"{tmp_path / 'there'}/", "--peer", f"127.0.0.1:{port}", "--tls-cert",
                       str(tmp_path / "collab.pem"), "--tls-key", str(tmp_path / "collab.key"),
                       env_home=tmp_path / "other-lab", timeout=120)
    assert fetched.returncode == 0, fetched.stderr
    for name in ("run42_1.fastq.gz", "run42_2.fastq.gz"):
        assert sha256_of(tmp_path / "there" / "run42" / name) == sha256_of(share / name)
    window.tabs.setCurrentWidget(window.seeding)
    qtbot.waitUntil(lambda: window.seeding.table.rowCount() == 1 and
                    float(window.seeding.table.item(0, 4).text().replace("-", "0")) >= 0.99, timeout=20_000)
    assert window.seeding.table.item(0, 0).text() == "run42.torrent" and not window.seeding.empty.isVisible()
    table = window.seeding.table  # selected as a plain click does, whatever keys an earlier test left pressed
    table.selectionModel().select(table.model().index(0, 0), QItemSelectionModel.SelectionFlag.ClearAndSelect
                                  | QItemSelectionModel.SelectionFlag.Rows)
    window.seeding.stop.click()
    qtbot.waitUntil(lambda: next(iter(window.seeding.views.values())).state == JobState.CANCELLED, timeout=20_000)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the port is given back once the seed stops
        try:
            import socket

            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            time.sleep(0.2)
        except OSError:
            break
    else:
        raise AssertionError("the seed still listens after Stop seeding")


def test_a_pasted_link_goes_to_the_download_folder_once_ok_is_pressed(qtbot, window, nginx, plain_file, tmp_path):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QDialogButtonBox

    from .test_driving import when_modal
    from .test_window import job

    QApplication.clipboard().setText(nginx.url("plain.bin", scheme="http") + "\n")
    ok = lambda dialog: QTest.mouseClick(  # noqa: E731  (To: the download folder, as filled in)
        dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    when_modal(ok, window)
    window.actions_by_name["paste"].trigger()
    qtbot.waitUntil(lambda: (j := job(window, "plain.bin")) is not None and j.state == JobState.DONE, timeout=60_000)
    assert (tmp_path / "plain.bin").stat().st_size == plain_file.size


def test_a_folder_still_being_written_is_not_hashed_into_a_torrent(qtbot, tmp_path):
    """A torrent made while a transfer still writes into the folder would describe files that then change."""
    from app.ui.torrents import CreateTorrentDialog

    share = tmp_path / "study"
    share.mkdir()
    (share / "a.fastq.gz").write_bytes(b"partial")
    dialog = CreateTorrentDialog(None, str(share), writing=lambda: [str(share / "b.fastq.gz")])
    qtbot.addWidget(dialog)
    dialog.create_button.click()
    assert "still writing into" in dialog.message.text() and dialog.torrent is None
    assert not (tmp_path / "study.torrent").exists()
    dialog.writing = lambda: [str(tmp_path / "elsewhere")]
    dialog.create_button.click()
    qtbot.waitUntil(lambda: (tmp_path / "study.torrent").exists(), timeout=30_000)
