"""A researcher's day in the window: drop, watch, pause, cancel, fix, retry, sites, history."""

from __future__ import annotations

import time

from PySide6.QtCore import QItemSelectionModel, QMimeData, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.engine import JobState
from app.store import Store
from tests.integration.conftest import MiB, write_random


def drop_urls(widget, urls: list[str]) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl(u) if "://" in u else QUrl.fromLocalFile(u) for u in urls])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    widget.dropEvent(event)


def job(window, name: str):
    for view in window.queue_model.views():
        if view.source.rstrip("/").endswith(name):  # a folder's address ends in a slash
            return view
    return None


def select(window, view) -> None:
    """Select the job's row alone, as a plain click does. Not ``selectRow``: in the queue's extended selection it
    reads the application's last keyboard modifiers, and a Ctrl left by an earlier test's shortcut
    (``keyClick(…, ControlModifier)``) made it toggle an already selected row off (seen once in a full run)."""
    from PySide6.QtCore import QItemSelectionModel

    index = window.queue_model.index(window.queue_model.row_of(view.id), 0)
    flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
    window.queue_view.selectionModel().select(index, flags)


def test_drop_a_url_then_it_completes_and_lands_in_history_with_its_checksum(qtbot, window, nginx, plain_file,
                                                                             tmp_path):
    drop_urls(window, [nginx.url("plain.bin", scheme="http")])
    qtbot.waitUntil(lambda: job(window, "plain.bin") is not None, timeout=10_000)
    qtbot.waitUntil(lambda: job(window, "plain.bin").state == JobState.DONE, timeout=60_000)
    assert (tmp_path / "plain.bin").stat().st_size == plain_file.size
    qtbot.waitUntil(lambda: window.history_model.rowCount() >= 1, timeout=5_000)
    row = window.history_model.row_at(0)
    assert row["outcome"] == "done" and row["sha256"] == plain_file.sha256
    select(window, job(window, "plain.bin"))
    assert plain_file.sha256 in window.details.toPlainText()


def test_pause_and_resume_from_the_toolbar(qtbot, window, nginx, tmp_path):
    write_random(nginx.data / "gui-slow.bin", 16 * MiB, seed=70)
    window.submit(nginx.url("slow/gui-slow.bin", scheme="http"), str(tmp_path / "gui-slow.bin"), streams=2)
    qtbot.waitUntil(lambda: (j := job(window, "gui-slow.bin")) is not None and j.bytes_done > 2 * MiB,
                    timeout=30_000)
    select(window, job(window, "gui-slow.bin"))
    window.actions_by_name["pause"].trigger()
    qtbot.waitUntil(lambda: job(window, "gui-slow.bin").state == JobState.PAUSED, timeout=10_000)
    assert (tmp_path / "gui-slow.bin.part").exists() and not (tmp_path / "gui-slow.bin").exists()
    window.actions_by_name["resume"].trigger()
    qtbot.waitUntil(lambda: job(window, "gui-slow.bin").state == JobState.DONE, timeout=60_000)
    assert (tmp_path / "gui-slow.bin").stat().st_size == 16 * MiB


def _answer(window, button: str, asked: list) -> None:
    """Click ``button`` of the next question box once it is up; its text goes into ``asked``."""
    from PySide6.QtWidgets import QMessageBox

    from .test_driving import when_modal

    def act(box) -> None:
        assert isinstance(box, QMessageBox), type(box)
        asked.append(box.text())
        QTest.mouseClick(next(b for b in box.buttons() if b.text() == button), Qt.MouseButton.LeftButton)
    when_modal(act, window)


def _active(qtbot, window) -> None:
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)


def test_cancel_asks_says_what_it_deletes_and_retry_starts_over(qtbot, window, nginx, tmp_path):
    """Ctrl+. on a running row asks first, naming the file and what arrived (a click once dropped 53 MiB
    unasked); "Keep going" changes nothing, "Cancel and delete" leaves no partial file, and Retry (Ctrl+R) on the
    cancelled row, which once did nothing and said nothing, fetches it again whole."""
    write_random(nginx.data / "gui-cancel.bin", 16 * MiB, seed=71)
    window.submit(nginx.url("slow/gui-cancel.bin", scheme="http"), str(tmp_path / "gui-cancel.bin"), streams=2,
                  limit_rate=2 * MiB)  # still running when the question is answered
    qtbot.waitUntil(lambda: (j := job(window, "gui-cancel.bin")) is not None and j.bytes_done > MiB,
                    timeout=30_000)
    select(window, job(window, "gui-cancel.bin"))
    window.queue_view.setFocus()
    asked: list[str] = []
    _answer(window, "Keep going", asked)
    QTest.keyClick(window.queue_view, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(asked) == 1, timeout=10_000)
    assert "gui-cancel.bin" in asked[0] and "deletes" in asked[0] and "Retry" in asked[0], asked[0]
    assert job(window, "gui-cancel.bin").state.active
    _answer(window, "Cancel and delete", asked)
    _active(qtbot, window)  # as the desktop gives it back once the box is gone (offscreen, nobody does)
    QTest.keyClick(window.queue_view, Qt.Key.Key_Period, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(asked) == 2, timeout=10_000)
    qtbot.waitUntil(lambda: job(window, "gui-cancel.bin").state == JobState.CANCELLED, timeout=10_000)
    assert not any(p.name.startswith("gui-cancel") for p in tmp_path.iterdir())
    _active(qtbot, window)
    QTest.keyClick(window.queue_view, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: job(window, "gui-cancel.bin").state == JobState.DONE, timeout=60_000)
    assert (tmp_path / "gui-cancel.bin").read_bytes() == (nginx.data / "gui-cancel.bin").read_bytes()


def test_file_quit_asks_as_the_close_button_does(qtbot, window, nginx, tmp_path):
    """Ctrl+Q (File → Quit) stopped running transfers without a word while the close button asked: it asks the
    same question, and Cancel there leaves the window open and the transfer running."""
    write_random(nginx.data / "gui-quit.bin", 16 * MiB, seed=73)
    window.submit(nginx.url("slow/gui-quit.bin", scheme="http"), str(tmp_path / "gui-quit.bin"), streams=2,
                  limit_rate=2 * MiB)
    qtbot.waitUntil(lambda: (j := job(window, "gui-quit.bin")) is not None and j.state.active, timeout=30_000)
    asked: list[str] = []
    _answer(window, "Cancel", asked)
    _active(qtbot, window)
    QTest.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(asked) == 1, timeout=10_000)
    assert "still running" in asked[0], asked[0]
    assert window.isVisible() and job(window, "gui-quit.bin").state.active


def test_a_failed_job_says_what_happened_and_retry_works(qtbot, window, nginx, tmp_path):
    window.submit(nginx.url("gui-later.bin", scheme="http"), str(tmp_path / "gui-later.bin"))
    qtbot.waitUntil(lambda: (j := job(window, "gui-later.bin")) is not None and j.state == JobState.FAILED,
                    timeout=30_000)
    select(window, job(window, "gui-later.bin"))
    text = window.details.toPlainText()
    assert "What happened" in text and "404" in text and "What to try" in text and "Traceback" not in text
    write_random(nginx.data / "gui-later.bin", 2 * MiB, seed=72)
    window.actions_by_name["retry"].trigger()
    qtbot.waitUntil(lambda: job(window, "gui-later.bin").state == JobState.DONE, timeout=30_000)


def test_site_profile_keeps_its_secret_in_the_keyring_not_in_sqlite(qtbot, window, keyring_home, ferry_home):
    secret = "s3cret-Pa55phrase"

    def fill() -> None:
        dialog = QApplication.activeModalWidget()
        dialog.name.setText("collab")
        dialog.host.setText("dtn.example.org")
        dialog.user.setText("jdoe")
        dialog.folder.setText("/data/shared")
        dialog.secret.setText(secret)
        dialog.accept()

    QTimer.singleShot(200, fill)
    window.edit_site(None)
    with Store() as store:
        row = store.sites.get("collab")
    assert row["host"] == "dtn.example.org" and row["remote_folder"] == "/data/shared"
    import base64

    import keyring

    written = [p for p in keyring_home.rglob("*") if p.is_file()]
    assert written, "gnome-keyring wrote no keyring"
    assert all(secret.encode() not in p.read_bytes() for p in written)  # kept encrypted there
    db = b"".join(p.read_bytes() for p in ferry_home.glob("ferry.sqlite3*"))
    assert secret.encode() not in db and base64.b64encode(secret.encode()) not in db

    assert keyring.get_password("labferry", "site:collab") == secret
    assert window.sidebar.sites_item.childCount() == 1


def test_history_search_and_filter(qtbot, window, ferry_home):
    with Store() as store:
        now = time.time()
        for i in range(1200):
            store.history.add(source=f"https://h/sample_{i:04d}.bam", dest=f"/data/sample_{i:04d}.bam",
                              backend="https" if i % 3 else "ssh", outcome="done" if i % 10 else "failed",
                              bytes=i * MiB, seconds=1.0 + i, finished=now - i)
    window.tabs.setCurrentWidget(window.history_page)
    window.apply_history_filter()
    assert window.history_model.total == 1200
    assert window.history_model.rowCount() <= 500  # fetched a page at a time
    window.search.setText("sample_042")
    qtbot.waitUntil(lambda: window.history_model.total == 10, timeout=3_000)
    window.outcome.setCurrentText("failed")
    qtbot.waitUntil(lambda: window.history_model.total == 1, timeout=3_000)
    window.search.setText("")
    window.outcome.setCurrentText("any outcome")
    window.backend_filter.setCurrentText("ssh")
    qtbot.waitUntil(lambda: window.history_model.total == 400, timeout=3_000)


def _ssh_site(window, sshd, known_hosts) -> None:
    from app.sites import Site, SiteBook

    with Store() as store:
        SiteBook(store).save(Site("lab", "sftp", "127.0.0.1", sshd.port, sshd.user, str(sshd.home), "2",
                                  str(sshd.key), {"known_hosts": str(known_hosts)}))
    window.refresh_sites()


def test_unknown_host_key_is_asked_about_with_its_fingerprint(qtbot, window, sshd, remote_big, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    _ssh_site(window, sshd, known)
    seen = {}

    def answer_yes() -> None:
        box = QApplication.activeModalWidget()
        if box is None:
            QTimer.singleShot(100, answer_yes)
            return
        seen["text"] = box.text()
        next(b for b in box.buttons() if b.text() == "Trust and remember").click()

    QTimer.singleShot(100, answer_yes)
    window.submit("site:lab/big.bin", str(tmp_path / "big.bin"))
    qtbot.waitUntil(lambda: (j := job(window, "big.bin")) is not None and j.state == JobState.DONE, timeout=90_000)
    assert "SHA256:" in seen["text"] and "127.0.0.1" in seen["text"]
    assert sshd.host_key_line.split()[2] in known.read_text()


def test_remote_browser_lists_a_site_folder_and_picks_an_upload_folder(qtbot, window, sshd, remote_big):
    from app.sites import SiteBook
    from app.ui.browser import RemoteBrowser

    _ssh_site(window, sshd, sshd.known_hosts)
    with Store() as store:
        site = SiteBook(store).get("lab")
    browser = RemoteBrowser(window.bridge, site, None, window)
    qtbot.addWidget(browser)
    pane = browser.pane
    qtbot.waitUntil(lambda: not pane.listing, timeout=30_000)
    names = [e.name for e in pane.model.entries]
    assert "big.bin" in names, pane.status.text()
    big = next(e for e in pane.model.entries if e.name == "big.bin")
    assert big.size == remote_big.size
    row = pane.model.index(pane.model.entries.index(big), 0)
    pane.view.selectionModel().select(row, pane.view.selectionModel().SelectionFlag.ClearAndSelect
                                      | pane.view.selectionModel().SelectionFlag.Rows)
    browser._choose()
    assert browser.chosen == "site:lab/big.bin"

    upload = RemoteBrowser(window.bridge, site, None, window, folder=True)
    qtbot.addWidget(upload)
    qtbot.waitUntil(lambda: not upload.pane.listing, timeout=30_000)
    upload._choose()
    assert upload.chosen == "site:lab/"


def test_history_filters_by_host_and_date(qtbot, window):
    with Store() as store:
        now = time.time()
        for i in range(40):
            store.history.add(source=f"https://h{i % 2}/f{i}.bin", dest=f"/d/f{i}.bin", backend="https",
                              outcome="done", peer_host=f"dtn{i % 2}.example.org", finished=now - i * 86400)
    window.tabs.setCurrentWidget(window.history_page)
    window.apply_history_filter()
    window.site_filter.setCurrentText("dtn1.example.org")
    qtbot.waitUntil(lambda: window.history_model.total == 20, timeout=3_000)
    window.period.setCurrentText("last 7 days")
    qtbot.waitUntil(lambda: window.history_model.total == 3, timeout=3_000)  # days 1, 3, 5


def test_report_of_the_selected_history_rows(qtbot, window, tmp_path):
    with Store() as store:
        ids = [store.history.add(source=f"https://dtn.example.org/f{i}.bin", dest=f"/d/f{i}.bin", backend="https",
                                 outcome="done", bytes=1000 * (i + 1), seconds=1.0 + i, throughput_mbps=8.0 * i,
                                 streams=i + 1, peer_host="dtn.example.org", finished=time.time() - i)
               for i in range(5)]
    window.tabs.setCurrentWidget(window.history_page)
    window.apply_history_filter()
    qtbot.waitUntil(lambda: window.history_model.total >= 5, timeout=3_000)
    view = window.history_view
    chosen = set()
    for row in (0, 2):
        view.selectionModel().select(window.history_model.index(row, 0), QItemSelectionModel.SelectionFlag.Select
                                     | QItemSelectionModel.SelectionFlag.Rows)
        chosen.add(window.history_model.row_at(row)["id"])
    assert set(window.selected_history_ids()) == chosen and chosen <= set(ids)
    with qtbot.waitSignal(window.reporter.finished, timeout=20_000) as done:
        window.reporter.export(tmp_path / "selected", "csv", window.report_filter())
    assert done.args == [str(tmp_path / "selected.csv")]
    rows = (tmp_path / "selected.csv").read_text().splitlines()[1:]
    assert sorted(int(line.split(",")[0]) for line in rows) == sorted(chosen)
    qtbot.waitUntil(lambda: window.last_report == str(tmp_path / "selected.csv"), timeout=3_000)
    view.clearSelection()  # nothing selected: every row the filters match, not just the page fetched so far
    assert window.report_filter() == window.history_model.filter


def _wait_listening(port: int, seconds: float = 30.0) -> None:
    import socket

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the seed never listened on port {port}")


def test_a_dropped_torrent_is_fetched_from_the_named_peer(qtbot, window, tmp_path):
    import signal

    from tests.integration.conftest import labferry, popen_labferry, sha256_of
    from tests.servers.nginx import free_port

    data = tmp_path / "share"
    data.mkdir()
    write_random(data / "ref.fa", 24 * MiB, seed=7)
    torrent = tmp_path / "ref.torrent"
    assert labferry("torrent", "create", str(data / "ref.fa"), "-o", str(torrent), env_home=tmp_path).returncode == 0
    port = free_port()
    seed = popen_labferry("seed", str(torrent), "--data", str(data / "ref.fa"), "--listen", f"127.0.0.1:{port}",
                          "--connections", "2", env_home=tmp_path / "seed-home")
    try:
        _wait_listening(port)  # under load the seed may take seconds to listen; a refused peer backs off long
        window.fetch_torrent(str(torrent), str(tmp_path / "in"), peer=f"127.0.0.1:{port}")
        qtbot.waitUntil(lambda: (j := job(window, "ref.torrent")) is not None and j.state.terminal, timeout=60_000)
        assert job(window, "ref.torrent").state == JobState.DONE, job(window, "ref.torrent").error
    finally:
        seed.send_signal(signal.SIGINT)
        seed.wait(15)
    assert sha256_of(tmp_path / "in" / "ref.fa") == sha256_of(data / "ref.fa")
    with Store() as store:
        row = store.history.full_rows()[0]
    assert row["backend"] == "torrent" and row["sha256"] == sha256_of(data / "ref.fa")


def test_cycles_are_collected_on_the_gui_thread(qtbot, window):
    """The automatic collector is off (it could run in any thread); the GUI thread's timer collects instead."""
    import gc
    import weakref

    assert not gc.isenabled()

    class Node:
        pass

    probe = Node()
    probe.me = probe
    ref = weakref.ref(probe)
    del probe
    for _ in range(gc.get_threshold()[0] + 100):  # enough new containers to cross the youngest threshold
        node = Node()
        node.me = node
    qtbot.waitUntil(lambda: ref() is None, timeout=5_000)


def test_new_transfer_says_what_to_do_with_files_that_are_there(qtbot, window, sshd, tmp_path):
    from app.ui.dialogs import NewTransferDialog

    dialog = NewTransferDialog(window, "sftp://example.org/run", str(tmp_path))
    qtbot.addWidget(dialog)
    assert dialog.values()["existing"] == {}  # the default replaces nothing
    dialog.existing.setCurrentIndex(dialog.existing.findData("sync"))
    assert dialog.values()["existing"] == {"sync": "size-mtime"}

    remote = sshd.home / f"gui-run-{time.monotonic_ns()}"
    remote.mkdir()
    for i in range(20):
        write_random(remote / f"s{i:02d}.fq", 4000, seed=300 + i)
    sshd.give(remote)
    ssh = {"identity": str(sshd.key), "known_hosts": str(sshd.known_hosts)}

    def latest():
        views = [v for v in window.queue_model.views() if v.source.endswith(remote.name)]
        return max(views, key=lambda v: v.id) if views else None

    def submitted(before, **overrides):  # the same transfer again reuses its row: wait for its next outcome
        window.submit(sshd.url(str(remote)), str(tmp_path), backend_options=dict(ssh), **overrides)
        qtbot.waitUntil(lambda: (v := latest()) is not None and v.state.terminal and (v.state, v.error) != before,
                        timeout=60_000)
        return latest()

    first = submitted(None)
    assert first.state == JobState.DONE, first.error
    again = submitted((first.state, first.error))  # the folder is there now: nothing replaced without being asked
    assert again.state == JobState.FAILED and "Skip unchanged files" in again.error
    synced = submitted((again.state, again.error), **dialog.values()["existing"])
    assert synced.state == JobState.DONE, synced.error
    assert synced.result["bytes"] == 0


def test_help_has_the_guide_the_log_and_about_with_versions_and_paths(qtbot, window):
    """There was no Help menu, About or log viewer: F1 opens the user guide, Help → Ferry's log shows the end of
    ferry.log, and About names the versions and where the data and the log are (with Copy, for IT)."""
    from PySide6.QtWidgets import QPlainTextEdit, QTextBrowser

    import app
    from app.paths import data_dir

    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    actions = {a.text(): a for a in menu.actions() if a.text()}
    assert set(actions) == {"User guide", "Ferry's log", "About Ferry"}, set(actions)
    _active(qtbot, window)
    QTest.keyClick(window, Qt.Key.Key_F1)
    qtbot.waitUntil(lambda: getattr(window, "last_help", None) is not None and window.last_help.isVisible(),
                    timeout=5_000)
    assert "Starting a transfer" in window.last_help.findChild(QTextBrowser).toPlainText()
    window.last_help.reject()
    (data_dir() / "ferry.log").write_text("".join(f"line {i}\n" for i in range(50_000)) + "job 7: the last line\n")
    actions["Ferry's log"].trigger()
    shown = window.last_help.findChild(QPlainTextEdit).toPlainText()
    assert shown.endswith("job 7: the last line\n") and len(shown) <= 2_000_000, len(shown)
    window.last_help.reject()
    actions["About Ferry"].trigger()
    about = window.last_help.findChild(QPlainTextEdit).toPlainText()
    assert f"Ferry (labferry) {app.__version__}" in about and str(data_dir() / "ferry.log") in about, about
    assert str(window.db_path) in about and "Qt " in about, about
    window.last_help.reject()


def test_right_clicking_a_site_offers_edit_and_remove(qtbot, window, keyring_home):
    """Right-clicking a site did nothing, so there was no visible way to edit or remove one: the menu has Edit
    site… (the site's dialog) and Remove site…, which asks, then removes the profile and its keyring secret."""
    from PySide6.QtWidgets import QDialog

    from app.sites import Secrets, Site, SiteBook

    with Store() as store:
        SiteBook(store).save(Site("old-lab", "sftp", "dtn.example.org", None, "jdoe", "/data"), "pw-old-lab")
    window.refresh_sites()
    sidebar = window.sidebar
    item = sidebar.sites_item.child(0)
    spot = sidebar.visualItemRect(item).center()
    from PySide6.QtGui import QContextMenuEvent

    # what the desktop sends for a right-click on that spot
    QApplication.sendEvent(sidebar.viewport(), QContextMenuEvent(QContextMenuEvent.Reason.Mouse, spot,
                                                                 sidebar.viewport().mapToGlobal(spot)))
    qtbot.waitUntil(lambda: sidebar.last_menu is not None and sidebar.last_menu.isVisible(), timeout=5_000)
    assert [a.text() for a in sidebar.last_menu.actions()] == ["Edit site…", "Remove site…"]
    titles: list[str] = []

    from .test_driving import when_modal

    def seen(dialog) -> None:
        titles.append(dialog.windowTitle())
        assert isinstance(dialog, QDialog) and dialog.name.text() == "old-lab"
        dialog.reject()
    when_modal(seen, window)
    sidebar.last_menu.actions()[0].trigger()
    qtbot.waitUntil(lambda: bool(titles), timeout=5_000)
    asked: list[str] = []
    _answer(window, "Remove", asked)
    sidebar.last_menu.actions()[1].trigger()
    assert "old-lab" in asked[0] and "keyring" in asked[0], asked
    with Store() as store:
        assert [s.name for s in SiteBook(store).all()] == []
    assert Secrets().get("old-lab") is None
    assert sidebar.sites_item.childCount() == 0


def test_a_schedule_typed_in_settings_shows_its_cap_in_the_status_bar(qtbot, window):
    """Nothing showed that a global cap was on: a schedule typed into Settings (Ctrl+,) is said in the status bar,
    in the queue's Mbit/s with the MiB/s it was typed in, and when it changes next."""
    from PySide6.QtWidgets import QDialogButtonBox, QLabel

    from tests.portable.dialogs import field

    from .test_driving import when_modal

    now = time.localtime()
    later = time.strftime("%H:%M", time.localtime(time.time() + 7200))
    schedule = f"{now.tm_hour:02d}:00,10M {later},off" if later > f"{now.tm_hour:02d}:00" else "10M"

    def fill(dialog) -> None:
        box = field(dialog, "Bandwidth schedule")
        box.clear()
        QTest.keyClicks(box, schedule)
        QTest.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save),
                         Qt.MouseButton.LeftButton)
    when_modal(fill, window)
    _active(qtbot, window)
    QTest.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    label = window.statusBar().findChild(QLabel, "cap")
    qtbot.waitUntil(lambda: label.isVisible() and label.text().startswith("Cap 84 Mbit/s (10 MiB/s)"), timeout=10_000)
    with Store() as store:
        assert store.settings.get("rate_schedule") == schedule


def test_a_paused_pack_goes_on_from_where_it_stopped(qtbot, window, tmp_path):
    """Pack a run folder from the Files tab, Pause it from the toolbar once it is under way: run42.tar.part and
    its record stay, no archive; Resume writes only what is missing ("went on from …") and GNU tar reads the
    archive byte-exact."""
    import os
    import subprocess

    run = tmp_path / "run42"
    (run / "vcf").mkdir(parents=True)
    for i in range(300):
        (run / "vcf" / f"s{i}.vcf").write_bytes(os.urandom(2000 + i))
    for i in range(24):
        write_random(run / f"lane{i}.bam", 32 * MiB, seed=90 + i)
    window.files.archive("pack", [str(run)], str(tmp_path))
    qtbot.waitUntil(lambda: (j := job(window, "run42")) is not None and j.bytes_done > 0, timeout=30_000)
    select(window, job(window, "run42"))
    window.actions_by_name["pause"].trigger()
    qtbot.waitUntil(lambda: job(window, "run42").state == JobState.PAUSED, timeout=30_000)
    paused_at = job(window, "run42").bytes_done
    # the pack's thread stops at its next batch and records what it wrote
    qtbot.waitUntil(lambda: (tmp_path / "run42.tar.part.ferry").exists(), timeout=70_000)
    assert (tmp_path / "run42.tar.part").exists()
    assert not (tmp_path / "run42.tar").exists() and paused_at < 24 * 32 * MiB
    window.actions_by_name["resume"].trigger()
    qtbot.waitUntil(lambda: job(window, "run42").state == JobState.DONE, timeout=120_000)
    assert any("went on from" in note for note in job(window, "run42").notes), job(window, "run42").notes
    out = tmp_path / "gnu"
    out.mkdir()
    assert subprocess.run(["tar", "-xf", str(tmp_path / "run42.tar"), "-C", str(out)]).returncode == 0
    for path in run.rglob("*"):
        assert path.is_dir() or (out / "run42" / path.relative_to(run)).read_bytes() == path.read_bytes()
