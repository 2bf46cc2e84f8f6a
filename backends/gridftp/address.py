"""GridFTP addresses: ``gsiftp://``, ``ftp://`` and ``sshftp://``, and local paths as ``file://``.

globus-url-copy takes root-relative paths (``ftp://host/data/x`` is ``/data/x`` on the
server) and marks folders with a trailing slash, so a ``GridUrl`` keeps the decoded
path and says explicitly whether it names a folder.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from ..core.errors import BadRequest
from ..core.urls import check_authority

SCHEMES = ("gsiftp", "ftp", "sshftp")
DEFAULT_PORTS = {"gsiftp": 2811, "ftp": 21, "sshftp": 22}


@dataclass(frozen=True)
class GridUrl:
    scheme: str
    host: str
    port: int
    user: str | None
    path: str  # decoded, absolute, without a trailing slash (except "/")

    @classmethod
    def parse(cls, url: str) -> GridUrl:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise BadRequest(f"'{url}' is not a valid address (bad port or brackets).") from None
        if parts.scheme not in SCHEMES:
            raise BadRequest(f"'{url}' is not a GridFTP address; use gsiftp://, ftp:// or sshftp://.")
        if not parts.hostname:
            raise BadRequest(f"'{url}' names no server. Write it as {parts.scheme}://host[:port]/path.")
        check_authority(url)
        if parts.password is not None:
            raise BadRequest(
                "Passwords inside GridFTP addresses are not accepted (they would be visible to other users "
                "of this machine and saved in the history). Use anonymous access, GSI credentials or sshftp://."
            )
        if parts.query or parts.fragment:
            raise BadRequest(f"'{url}' has a '?' or '#' part that GridFTP paths cannot carry; remove it.")
        path = unquote(parts.path) or "/"
        if "\0" in path or "\n" in path or "\r" in path:
            raise BadRequest("The remote path contains a control character, which GridFTP cannot carry.")
        normal = posixpath.normpath(path) if path != "/" else "/"
        if normal.startswith("//"):
            normal = "/" + normal.lstrip("/")
        return cls(parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme], parts.username, normal)

    @property
    def named_folder(self) -> bool:
        """Whether the user wrote a trailing slash (or the root), i.e. meant a folder."""
        return self.path == "/"

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    def child(self, name: str) -> GridUrl:
        return replace(self, path=posixpath.join(self.path, name))

    def sibling(self, name: str) -> GridUrl:
        return replace(self, path=posixpath.join(posixpath.dirname(self.path), name))

    def text(self, folder: bool = False) -> str:
        """The address for globus-url-copy: percent-encoded, a trailing slash for a folder."""
        user = f"{quote(self.user, safe='')}@" if self.user else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        path = quote(self.path)
        if folder and not path.endswith("/"):
            path += "/"
        return f"{self.scheme}://{user}{host}:{self.port}{path}"

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


def trailing_slash(url: str) -> bool:
    try:
        return urlsplit(url).path.endswith("/")
    except ValueError:
        return False


def local_url(path: Path, folder: bool = False) -> str:
    """A local path as globus-url-copy wants it (``file:///abs/path``, percent-encoded)."""
    text = quote(str(Path(path).absolute()))
    if folder and not text.endswith("/"):
        text += "/"
    return "file://" + text
