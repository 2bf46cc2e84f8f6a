"""The window's queue after a restart looks as it did: finished rows stay in their places with what they showed
(the SHA-256, how it was verified), until the user clears them — as a browser's downloads list does."""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QEvent, Qt
from PySide6.QtTest import QTest
from pytestqt.exceptions import TimeoutError as QtBotTimeout

from app.engine import JobState
from tests.integration.conftest import MiB, write_random
from tests.servers.holder import hold_database

from .test_window import drop_urls, job, select


def _open(tmp_path):
    from app.ui.app import build

    _, engine, window = build([])
    window.quit_on_close = False
    window.settings["download_folder"] = str(tmp_path)
    window.show()
    return engine, window


def _close(engine, window) -> None:
    window._really_quit = True
    window.close()
    engine.close()
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


def _names(window) -> list[tuple[str, JobState]]:
    return [(v.source.rsplit("/", 1)[-1], v.state) for v in window.queue_model.views()]


def test_a_restart_keeps_finished_rows_in_their_places(qtbot, ferry_home, nginx, tmp_path):
    for name, seed in (("first.bin", 1), ("third.bin", 3)):
        write_random(nginx.data / name, MiB, seed=seed)
    engine, window = _open(tmp_path)
    try:
        for name in ("first.bin", "missing.bin", "third.bin"):
            drop_urls(window, [nginx.url(name, scheme="http")])
            qtbot.waitUntil(lambda n=name: job(window, n) is not None, timeout=10_000)
        qtbot.waitUntil(lambda: all(v.state.terminal or v.state == JobState.FAILED
                                    for v in window.queue_model.views()), timeout=60_000)
        moved = ["first.bin", "third.bin", "missing.bin"]
        for _ in range(3):  # pressed again only if nothing moved: an earlier test's window may have taken the
            select(window, job(window, "third.bin"))  # activation, or a late row update the selection, back
            window.activateWindow()  # a shortcut reaches the active window only
            qtbot.waitUntil(window.isActiveWindow, timeout=10_000)
            window.queue_view.setFocus()
            QTest.keyClick(window.queue_view, Qt.Key.Key_Up, Qt.KeyboardModifier.ControlModifier)  # Move up
            try:
                qtbot.waitUntil(lambda: [n for n, _ in _names(window)] == moved, timeout=4_000)
                break
            except QtBotTimeout:
                assert [n for n, _ in _names(window)] == ["first.bin", "missing.bin", "third.bin"]
        assert [n for n, _ in _names(window)] == moved
        before = _names(window)
        sha = job(window, "first.bin").result["sha256"]
    finally:
        _close(engine, window)

    engine, window = _open(tmp_path)
    try:
        qtbot.waitUntil(lambda: len(window.queue_model.views()) == 3, timeout=10_000)
        assert _names(window) == before == [("first.bin", JobState.DONE), ("third.bin", JobState.DONE),
                                            ("missing.bin", JobState.FAILED)]
        select(window, job(window, "first.bin"))
        qtbot.waitUntil(lambda: sha in window.details.toPlainText(), timeout=5_000)
        window.actions_by_name["clear"].trigger()  # Clear finished: the done rows go, the failed one stays
        qtbot.waitUntil(lambda: [n for n, _ in _names(window)] == ["missing.bin"], timeout=10_000)
    finally:
        _close(engine, window)

    engine, window = _open(tmp_path)
    try:
        qtbot.waitUntil(lambda: bool(window.queue_model.views()), timeout=10_000)
        assert [n for n, _ in _names(window)] == ["missing.bin"]  # cleared rows stay cleared
    finally:
        _close(engine, window)


def test_the_window_opens_over_a_damaged_database_and_says_so(qtbot, ferry_home, tmp_path):
    (ferry_home / "ferry.sqlite3").write_bytes(b"this is not SQLite\n" * 500)
    engine, window = _open(tmp_path)
    try:
        qtbot.waitUntil(window.isVisible, timeout=10_000)
        said = window.statusBar().currentMessage()
        assert "was damaged" in said and "ferry.sqlite3.damaged-" in said, said
        assert [p for p in ferry_home.iterdir() if ".damaged-" in p.name]
        assert window.queue_model.views() == []
    finally:
        _close(engine, window)


def test_the_window_says_why_it_cannot_start_over_a_held_database(qtbot, ferry_home, monkeypatch):
    """Another program holds the database for good: the window waits (LABFERRY_DB_WAIT), then says so in one
    sentence and ends with exit 5, instead of a traceback or a window that cannot save anything."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.store import Store
    from app.ui.app import main

    Store().close()
    holder = hold_database(ferry_home / "ferry.sqlite3", 60)
    monkeypatch.setenv("LABFERRY_DB_WAIT", "1")
    seen: dict[str, str] = {}

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if box is None:
            QTimer.singleShot(50, answer)
            return
        seen["text"] = box.text()
        box.close()

    QTimer.singleShot(50, answer)
    try:
        code = main(["labferry-gui"])
    finally:
        holder.kill()
        holder.wait()
    assert code == 5
    assert "held by another program" in seen.get("text", "") and "LABFERRY_HOME" in seen["text"], seen


def test_the_window_remembers_its_size_splitters_filters_and_last_folder(qtbot, ferry_home, nginx, tmp_path):
    """Window size, splitters and History's filter were forgotten at every start, and New transfer's To began in
    the home folder whatever was used last: set by hand, quit by Ctrl+Q, started again, they are as they were."""
    from PySide6.QtWidgets import QApplication, QSplitter

    from tests.portable.dialogs import field, fill_and_accept

    from .test_driving import when_modal

    write_random(nginx.data / "remember.bin", MiB, seed=491)
    engine, window = _open(tmp_path)
    try:
        window.resize(1111, 701)
        middle = window.findChild(QSplitter, "tabs-and-details")
        middle.setSizes([430, 250])
        sizes = middle.sizes()
        window.period.setCurrentIndex(window.period.findText("last 7 days"))
        chosen = tmp_path / "run42"
        seen: list[str] = []
        fill_and_accept(qtbot, {"From": nginx.url("remember.bin", scheme="http"), "To": str(chosen)}, seen)
        window.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)
        QTest.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: seen == ["New transfer"], timeout=10_000)
        qtbot.waitUntil(lambda: (v := job(window, "remember.bin")) is not None and v.state.terminal,
                        timeout=30_000)
        assert job(window, "remember.bin").state == JobState.DONE, job(window, "remember.bin").error
        window.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)
        QTest.keyClick(window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)  # nothing runs: no question
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=5_000)
    finally:
        _close(engine, window)
    engine, window = _open(tmp_path)
    try:
        assert (window.width(), window.height()) == (1111, 701)
        assert window.findChild(QSplitter, "tabs-and-details").sizes() == sizes
        assert window.period.currentText() == "last 7 days"
        started: list[str] = []

        def read_to(dialog) -> None:
            started.append(field(dialog, "To").text())
            dialog.reject()
        when_modal(read_to, window)
        window.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5_000)
        QTest.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: bool(started), timeout=10_000)
        assert started[0].rstrip("/") == str(chosen), started
    finally:
        _close(engine, window)
