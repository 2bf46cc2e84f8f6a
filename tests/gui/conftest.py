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
    from app.ui.app import build

    _, engine, win = build([])
    win.quit_on_close = False
    win.settings["download_folder"] = str(tmp_path)
    qtbot.addWidget(win)
    win.show()
    yield win
    win._really_quit = True
    win.close()
    engine.close()
