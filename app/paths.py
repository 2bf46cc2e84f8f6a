"""Where Ferry keeps its data: ``LABFERRY_HOME`` if set, else the platform's data folder."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV_HOME = "LABFERRY_HOME"


def data_dir() -> Path:
    """The folder for the database and logs, created on first use."""
    override = os.environ.get(ENV_HOME)
    path = Path(override).expanduser() if override else Path(platformdirs.user_data_dir("labferry", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def database_path() -> Path:
    return data_dir() / "ferry.sqlite3"
