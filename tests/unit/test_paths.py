"""Ferry's data folder when it cannot be used: one sentence and exit 5, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from app.paths import data_dir
from app.store import Store
from backends.core.errors import LocalError


def test_a_data_folder_that_is_a_file_is_one_sentence(tmp_path, monkeypatch):
    home = tmp_path / "ferry-home"
    home.write_text("not a folder")
    monkeypatch.setenv("LABFERRY_HOME", str(home))
    with pytest.raises(LocalError, match="is a file, not a folder"):
        data_dir()
    proc = subprocess.run([sys.executable, "-m", "app", "history"], capture_output=True, text=True,
                          env=dict(os.environ, LABFERRY_HOME=str(home)))
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"labferry: Ferry's data folder {home} is a file, not a folder. "
                                                "Move the file away, or set LABFERRY_HOME to a folder Ferry may use."]


def test_a_data_folder_left_to_root_by_sudo_says_how_to_give_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv("LABFERRY_HOME", str(tmp_path))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(tmp_path) else
                        real_access(path, mode))
    with pytest.raises(LocalError, match="permission denied; it may belong to another user.*sudo chown -R"):
        data_dir()


def test_a_read_only_database_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("LABFERRY_HOME", str(tmp_path))
    Store().close()
    (tmp_path / "ferry.sqlite3").chmod(0o444)
    if os.geteuid() == 0:  # root writes anyway: make SQLite see a read-only file the way a user would
        monkeypatch.setattr("app.store.connect", _readonly_connect)
    with pytest.raises(LocalError, match="Ferry cannot write to its data"):
        Store()


def _readonly_connect(path, readonly=False):
    import sqlite3

    raise sqlite3.OperationalError("attempt to write a readonly database")
