"""The real window for a test: built as ``make run`` builds it, shown, and torn down on the GUI thread."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path


def watchdog_limit(config) -> float:
    """Seconds into a test after which an open modal dialog is closed: well before pytest-timeout's limit."""
    try:
        timeout = float(config.getini("timeout") or 0)
    except (ValueError, KeyError):
        timeout = 0.0
    return max(2.0, timeout * 0.8) if timeout else 240.0


@contextlib.contextmanager
def modal_watchdog(limit: float) -> Iterator[None]:
    """A modal dialog still open ``limit`` seconds into a test is closed. A test whose dialog nobody answered
    (its poll gave up, or acted on the wrong one) otherwise sat in the dialog's C++ loop for ever: Python's
    signal handlers, pytest-timeout's SIGALRM included, run only between Python bytecodes, and an exception
    raised in a Qt callback does not leave the loop. Closed, the dialog returns and the test fails on its own
    assertions, and the run goes on."""
    import time

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    began = time.monotonic()

    def look() -> None:
        if time.monotonic() - began > limit and (dialog := QApplication.activeModalWidget()) is not None:
            dialog.reject() if hasattr(dialog, "reject") else dialog.close()

    timer = QTimer()
    timer.timeout.connect(look)
    timer.start(500)
    try:
        yield
    finally:
        timer.stop()


@contextlib.contextmanager
def open_window(download_folder: Path) -> Iterator:
    from PySide6.QtCore import QCoreApplication, QEvent

    from app.ui.app import build

    _, engine, win = build([])
    win.quit_on_close = False
    win.settings["download_folder"] = str(download_folder)
    win.show()
    try:
        yield win
    finally:
        win._really_quit = True
        win.close()
        engine.close()
        # destroyed here, on this (the GUI) thread, before the next test: left to a later event loop, the
        # window's destruction once ran while a report thread's garbage collection freed Qt wrappers, and the
        # two threads deadlocked on the GIL and PySide's own lock
        win.deleteLater()
        del win
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
