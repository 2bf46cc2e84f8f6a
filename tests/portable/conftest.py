"""The tests that need no Linux server, run by the CI on Linux, macOS and Windows: the modules import on the OS
at hand, an HTTPS download from a Python-started server, and the window offscreen."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="session")
def python_web(tmp_path_factory):
    from .web import PythonWeb

    server = PythonWeb(tmp_path_factory.mktemp("python-web")).start()
    yield server
    server.stop()


@pytest.fixture
def window(qtbot, ferry_home, tmp_path):
    """The real window (as ``tests/gui``'s), without the Linux-only Secret Service those tests point keyring at."""
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    from app.ui.app import build

    _, engine, win = build([])
    win.quit_on_close = False
    win.settings["download_folder"] = str(tmp_path)
    win.show()
    yield win
    win._really_quit = True
    win.close()
    engine.close()
    win.deleteLater()
    del win
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
