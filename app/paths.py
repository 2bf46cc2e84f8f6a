"""Where Ferry keeps its data: ``LABFERRY_HOME`` if set, else the platform's data folder."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from backends.core.errors import LocalError

ENV_HOME = "LABFERRY_HOME"


def data_dir() -> Path:
    """The folder for the database and logs, created on first use; a sentence when it cannot be used."""
    override = os.environ.get(ENV_HOME)
    path = Path(override).expanduser() if override else Path(platformdirs.user_data_dir("labferry", appauthor=False))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise LocalError(f"Ferry's data folder {path} is a file, not a folder. Move the file away, or set "
                         f"{ENV_HOME} to a folder Ferry may use.") from None
    except OSError as exc:
        raise LocalError(f"Ferry cannot create its data folder {path} ({exc.strerror}). Set {ENV_HOME} to a "
                         "folder you can write to.") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise LocalError(unwritable(path))
    return path


def unwritable(path: Path) -> str:
    """The sentence for a data folder (or database) this user cannot write, as after one ``sudo labferry``."""
    return (f"Ferry cannot write to its data in {path} (permission denied; it may belong to another user, for "
            f"example after running Ferry with sudo). Give it back with: sudo chown -R {_user()} '{path}' - or set "
            f"{ENV_HOME} to another folder.")


def _user() -> str:
    try:
        import getpass

        return getpass.getuser()
    except Exception:
        return "$USER"


def database_path() -> Path:
    return data_dir() / "ferry.sqlite3"
