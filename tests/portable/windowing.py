"""The real window for a test: built as ``make run`` builds it, shown, and torn down on the GUI thread."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path


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
