"""Where an ``sftp://`` or ``scp://`` URL points: user, host, port, path, and the
``~/.ssh/config`` entries that apply (host aliases, ``User``, ``Port``, ``IdentityFile``).

Paths: ``sftp://host/data/run1`` is the absolute ``/data/run1``; ``sftp://host/~/run1`` is
relative to the login folder (as curl reads it). Percent-escapes are decoded, so
any file name can be written in a URL.
"""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from ..core.errors import BadRequest
from ..core.urls import check_authority
from .options import SshOptions

if TYPE_CHECKING:
    import paramiko

SCHEMES = ("sftp", "scp")


@dataclass(frozen=True)
class Target:
    scheme: str
    alias: str  # the host as written (may be a ~/.ssh/config alias)
    host: str  # the real host name
    port: int
    user: str
    path: str  # remote path; "" or relative means the login folder
    password: str | None = field(default=None, repr=False)
    identity_files: tuple[str, ...] = ()
    proxy_jump: str | None = None

    @property
    def display(self) -> str:
        port = "" if self.port == 22 else f":{self.port}"
        return f"{self.scheme}://{self.user}@{self.alias}{port}{self.path}"


def _config(path: str | None) -> paramiko.SSHConfig | None:
    file = Path(path or "~/.ssh/config").expanduser()
    if not file.is_file():
        return None
    try:
        import paramiko  # not at the top: the CLI starts faster when the job is not an SSH one

        return paramiko.SSHConfig.from_path(str(file))
    except Exception as exc:  # a broken config is the user's to fix, in words
        raise BadRequest(f"Could not read the SSH configuration {file} ({exc}). Fix or move it.") from None


def parse_target(url: str, options: SshOptions | None = None) -> Target:
    options = options or SshOptions()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadRequest(f"'{url}' is not a valid URL ({exc}). Write it as sftp://user@host/path.") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise BadRequest(f"'{url}' is not an sftp:// or scp:// URL.")
    if not parts.hostname:
        raise BadRequest(f"'{url}' has no host name. Write it as {scheme}://user@host/path.")
    check_authority(url)
    path = unquote(parts.path)
    if path.startswith("/~/") or path == "/~":
        path = path[3:]  # relative to the login folder
    alias = parts.hostname
    host, user, identity_files, proxy = alias, None, (), None
    cfg = _config(options.ssh_config)
    if cfg is not None:
        entry = cfg.lookup(alias)
        host = entry.get("hostname", alias)
        user = entry.get("user")
        port = port or (int(entry["port"]) if entry.get("port") else None)
        identity_files = tuple(os.path.expanduser(p) for p in entry.get("identityfile", []))
        proxy = entry.get("proxyjump")
    if options.identity:
        identity_files = (os.path.expanduser(options.identity),)
    return Target(
        scheme=scheme,
        alias=alias,
        host=host,
        port=port or 22,
        user=unquote(parts.username) if parts.username else (user or _local_user()),
        path=path,
        password=unquote(parts.password) if parts.password else None,
        identity_files=identity_files,
        proxy_jump=proxy,
    )


def _local_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:
        return "root"


def remote_join(folder: str, name: str) -> str:
    if not folder:
        return name
    return folder.rstrip("/") + "/" + name if folder != "/" else "/" + name


def known_hosts_path(path: str | None) -> Path:
    """The known_hosts file both SSH clients check (here, not in trust.py: no paramiko import on the way to
    the first OpenSSH login)."""
    return Path(path or "~/.ssh/known_hosts").expanduser()


@dataclass(frozen=True)
class Entry:
    """A remote file or folder; ``rel`` is relative to the walked root."""

    rel: str
    size: int
    mtime: int
    mode: int
    #: the path below DEST a download saves it as (``Destination.claim``: the server's name made safe)
    saved: str = field(default="", compare=False)

    @property
    def is_dir(self) -> bool:
        return statmod.S_ISDIR(self.mode)
