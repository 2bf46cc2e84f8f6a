"""The real window, offscreen, driving a real engine against the real servers of tests/integration."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")

from tests.integration.conftest import (  # noqa: E402,F401  (fixtures shared with the integration tests)
    big_file,
    nginx,
    plain_file,
    remote_big,
    sshd,
)


@pytest.fixture(autouse=True)
def keyring_home(tmp_path, monkeypatch):
    """The file-backed keyring writes under XDG_DATA_HOME: one per test."""
    folder = tmp_path / "xdg-data"
    folder.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


@pytest.fixture
def window(qtbot, ferry_home, tmp_path):
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
    # destroyed here, on this (the GUI) thread, before the next test: left to a later event loop, the
    # window's destruction once ran while a report thread's garbage collection freed Qt wrappers, and the two
    # threads deadlocked on the GIL and PySide's own lock
    win.deleteLater()
    del win
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
