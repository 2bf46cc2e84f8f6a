"""Two of a biologist's tasks from start to end, through the window's own keys, buttons and dialogs: a report
for IT of what was fetched, and a server that dies mid-transfer (the row says it is retrying and why, the file
arrives whole once the server is back)."""

from __future__ import annotations

import hashlib
import os

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit

from app.engine import JobState
from app.sites import Site, SiteBook
from app.store import Store
from app.ui.queue_model import COLUMNS
from tests.integration.conftest import MiB, write_random
from tests.portable.dialogs import fill_and_accept

from .test_driving import when_modal
from .test_window import job, select

#: how long the server stays stopped (longer than the 5 retries' backoff, about a minute)
SERVER_OUTAGE_S = float(os.environ.get("LABFERRY_TEST_SERVER_OUTAGE_S", "90"))


def _new_transfer_by_keys(qtbot, window, url: str, dest) -> None:
    """Ctrl+N, From and To typed into the dialog by their labels, OK clicked."""
    seen: list[str] = []
    fill_and_accept(qtbot, {"From": url, "To": str(dest)}, seen)
    window.activateWindow()
    QTest.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: seen == ["New transfer"], timeout=10_000)


def _cell(window, view, column: str, role=Qt.ItemDataRole.DisplayRole) -> str:
    model = window.queue_model
    return model.data(model.index(model.row_of(view.id), COLUMNS.index(column)), role) or ""


def test_a_report_for_it_is_written_from_the_history_tab(qtbot, window, nginx, tmp_path):
    digest = write_random(nginx.data / "for-it.bin", 2 * MiB, seed=461)
    _new_transfer_by_keys(qtbot, window, nginx.url("for-it.bin", scheme="http"), tmp_path / "fetched")
    qtbot.waitUntil(lambda: (v := job(window, "for-it.bin")) is not None and v.state.terminal, timeout=60_000)
    assert job(window, "for-it.bin").state == JobState.DONE
    window.activateWindow()  # the dialog has closed: keys go to the window again
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    QTest.keyClick(window, Qt.Key.Key_3, Qt.KeyboardModifier.AltModifier)  # View ▸ History
    assert window.tabs.currentWidget() is window.history_page
    qtbot.waitUntil(lambda: window.history_model.total >= 1, timeout=10_000)
    report = tmp_path / "for-it"
    asked = []

    def save(dialog) -> None:  # the save dialog as a user fills it: HTML chosen, a name typed, Enter
        assert isinstance(dialog, QFileDialog)
        asked.append(dialog.windowTitle())
        dialog.selectNameFilter("HTML report (*.html)")
        name = dialog.findChild(QLineEdit, "fileNameEdit")
        # clicked into first, and typed only once it has the focus: the dialog deselects what an earlier prefix
        # of the path selected only while its name field has the focus, and with the folders of the path left
        # selected Save stays greyed out (seen on a loaded machine: 7 "selected files", Save disabled)
        dialog.activateWindow()
        QTest.mouseClick(name, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(name.hasFocus, timeout=10_000)
        name.selectAll()
        QTest.keyClicks(name, str(report))
        qtbot.waitUntil(lambda: dialog.selectedFiles() == [str(report)], timeout=10_000)
        QTest.keyClick(name, Qt.Key.Key_Return)

    when_modal(save, window)
    QTest.mouseClick(window.report_button, Qt.MouseButton.LeftButton)
    written = tmp_path / "for-it.html"
    qtbot.waitUntil(lambda: window.last_report == str(written) or "report" in (window.last_error or ""),
                    timeout=30_000)
    assert window.last_report == str(written), (asked, window.last_error, sorted(p.name for p in tmp_path.iterdir()))
    assert asked == ["Save a transfer report"]
    text = written.read_text()
    assert digest in text and "for-it.bin" in text  # the checksum IT asks for, beside the file it belongs to
    assert str(written) in window.status.text()
    assert QApplication.activeModalWidget() is None


def test_a_sites_server_stopped_for_90_s_shows_the_row_waiting_for_the_site_and_finishes(qtbot, window, nginx,
                                                                                          tmp_path):
    """A saved site's web server stopped mid-transfer for longer than the retries last (5, about a minute of
    backoff; the job once failed then, and the server's return changed nothing): the row says it waits for the
    site by name and why, the log keeps the reason, and the file arrives whole by itself once the server is back."""
    digest = write_random(nginx.data / "killed.bin", 96 * MiB, seed=462)
    with Store() as store:
        SiteBook(store).save(Site("lab-web", "http", "127.0.0.1", nginx.http_port, "", "", "auto", ""))
    window.refresh_sites()
    _new_transfer_by_keys(qtbot, window, "site:lab-web/slow/killed.bin", tmp_path / "in")
    qtbot.waitUntil(lambda: (v := job(window, "killed.bin")) is not None and v.bytes_done >= 8 * MiB,
                    timeout=60_000)
    nginx.stop()  # stopped: connections cut, then refused
    try:
        qtbot.waitUntil(lambda: _cell(window, job(window, "killed.bin"), "State")
                        == "waiting for lab-web (refused)", timeout=60_000)
        why = _cell(window, job(window, "killed.bin"), "Name", Qt.ItemDataRole.ToolTipRole)
        assert "lab-web is out of reach" in why, why
        assert "Errno" not in why and "()" not in why and "--" not in why, why  # the window's words
        qtbot.wait(int(SERVER_OUTAGE_S * 1000))
        assert job(window, "killed.bin").state.active, job(window, "killed.bin").error
    finally:
        nginx.start()
    qtbot.waitUntil(lambda: job(window, "killed.bin").state.terminal, timeout=120_000)
    done = job(window, "killed.bin")
    assert done.state == JobState.DONE, done.error
    assert hashlib.sha256((tmp_path / "in" / "killed.bin").read_bytes()).hexdigest() == digest
    select(window, done)
    assert "lab-web is back after" in window.details.toPlainText()  # the log keeps what happened
    assert "waiting" not in _cell(window, done, "State")
    assert _cell(window, done, "Route") == "lab-web → this computer"  # the site's name, not 127.0.0.1
    window.history_model.refresh()
    history = window.history_model
    names = [history.data(history.index(r, 1)) for r in range(history.rowCount())]
    assert history.headerData(1, Qt.Orientation.Horizontal) == "Name" and "killed.bin" in names, names


def test_a_laptop_that_loses_its_network_shows_the_row_waiting_and_goes_on(qtbot, window, tmp_path):
    """The server sits behind a link the test cuts (tests/servers/far.py): the row says it is waiting for the
    network, why in its tooltip, and the file arrives whole once the link is back."""
    from tests.servers.far import cut, far_server, mend

    with far_server(tmp_path / "far") as server:
        digest = write_random(server.data / "roam.bin", 48 * MiB, seed=463)
        with Store() as store:  # a site whose silent streams are faults after 6 s (60 s outlasts a short outage)
            SiteBook(store).save(Site("far", "http", server.listen, server.http_port, "", "", "auto", "",
                                      {"stall_seconds": 6}))
        window.refresh_sites()
        _new_transfer_by_keys(qtbot, window, "site:far/slow/roam.bin", tmp_path / "in")
        qtbot.waitUntil(lambda: (v := job(window, "roam.bin")) is not None and v.bytes_done >= 6 * MiB,
                        timeout=60_000)
        cut(server)
        try:
            qtbot.waitUntil(lambda: _cell(window, job(window, "roam.bin"), "State") == "waiting for far (no network)",
                            timeout=90_000)
            why = _cell(window, job(window, "roam.bin"), "Name", Qt.ItemDataRole.ToolTipRole)
            assert "far is out of reach" in why, why
        finally:
            mend(server)
        qtbot.waitUntil(lambda: job(window, "roam.bin").state.terminal, timeout=120_000)
        done = job(window, "roam.bin")
        assert done.state == JobState.DONE, done.error
        assert hashlib.sha256((tmp_path / "in" / "roam.bin").read_bytes()).hexdigest() == digest
