"""Where Ferry keeps its data: ``LABFERRY_HOME`` if set, else the platform's data folder.

What Ferry writes for itself (the database and its WAL, the log, keys, the agent's socket, records and spool)
holds every job's addresses and is this user's alone: the folder is made 0700 and its files 0600 whatever the
umask, and a folder left wider by an older Ferry (or made by hand) is tightened once per process, with a note.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

from backends.core.errors import LocalError
from backends.host import portable

ENV_HOME = "LABFERRY_HOME"
_checked: set[Path] = set()


def data_dir() -> Path:
    """The folder for the database and logs, created on first use; a sentence when it cannot be used."""
    override = os.environ.get(ENV_HOME)
    path = Path(override).expanduser() if override else Path(platformdirs.user_data_dir("labferry", appauthor=False))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
    except FileExistsError:
        raise LocalError(f"Ferry's data folder {path} is a file, not a folder. Move the file away, or set "
                         f"{ENV_HOME} to a folder Ferry may use.") from None
    except OSError as exc:
        raise LocalError(f"Ferry cannot create its data folder {path} ({exc.strerror}). Set {ENV_HOME} to a "
                         "folder you can write to.") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise LocalError(unwritable(path))
    if path not in _checked:
        _checked.add(path)
        _tighten(path)
    return path


def _tighten(path: Path) -> None:
    """Others' access to the data folder taken away, said once: a shared workstation's other users could read
    every job's addresses in a 0755 folder of 0644 files (Debian's default home and umask). Said only when the
    folder itself was open: a wider file inside a 0700 folder (a state folder made under the umask) is out of
    reach, and is tightened without a word."""
    try:
        exposed = os.stat(path).st_mode & 0o077  # what is inside a 0700 folder is out of others' reach already
        changed = portable.keep_private(path)
    except OSError as exc:
        print(f"labferry: note: Ferry could not make its data folder {path} private ({exc.strerror}); other users "
              "of this computer may read it. Check its owner and permissions.", file=sys.stderr)
        return
    if changed and exposed:
        print(f"labferry: note: Ferry's data folder {path} was open to other users of this computer; it and what it "
              f"holds are now yours alone ({changed} {'entry' if changed == 1 else 'entries'} made 0700/0600).",
              file=sys.stderr)


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


def private_file(path: Path) -> Path:
    """``path`` made 0600 before anyone writes it (SQLite and the log keep the mode of the file they open, and
    SQLite gives its WAL and shared-memory files the database's)."""
    try:
        portable.private_file(path)
    except OSError:
        pass  # the program that opens it next says what is wrong, in its own sentence
    return path


def database_path() -> Path:
    return private_file(data_dir() / "ferry.sqlite3")
