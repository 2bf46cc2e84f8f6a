"""Host keys the user trusted for this process only ("Trust this time" in the window).

Kept in memory and in a private file (0600, in a 0700 folder removed at exit) that Ferry's OpenSSH connections
read beside known_hosts (``UserKnownHostsFile``), so a key trusted once serves every connection of the session
and is written nowhere the next start would find it. No paramiko here: OpenSSH's argv is built on the critical
path of a login.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

_keys: dict[str, tuple[str, str]] = {}  # known_hosts entry → (key type, base64)
_lock = threading.Lock()
_file: Path | None = None


def trusted_once(entry: str) -> tuple[str, str] | None:
    """(key type, base64) of the key trusted once for ``entry`` (``host`` or ``[host]:port``), or None."""
    return _keys.get(entry)


def trust_once(entry: str, kind: str, blob: str) -> None:
    global _file
    with _lock:
        _keys[entry] = (kind, blob)
        if _file is None:
            folder = Path(tempfile.mkdtemp(prefix="ferry-trust-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            _file = folder / "known_hosts"
        text = "".join(f"{host} {k} {b}\n" for host, (k, b) in _keys.items())
        fd = os.open(_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(text)


def trusted_once_file() -> Path | None:
    """The private known_hosts file of the keys trusted once; None when there are none."""
    return _file if _keys else None


def forget_all() -> None:
    """Forget every key trusted once: a new window session starts asking again, as after a restart."""
    with _lock:
        _keys.clear()
        if _file is not None:
            _file.unlink(missing_ok=True)
