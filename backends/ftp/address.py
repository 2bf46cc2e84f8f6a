"""An ``ftp://`` or ``ftps://`` address, read as RFC 1738 (and curl and wget) read it.

The path is relative to the folder the login lands in: ``ftp://host/pub/x`` is ``pub/x`` there, and
``ftp://host//data/x`` (or ``ftp://host/%2Fdata/x``) is the absolute ``/data/x``. Without a user the login
is anonymous, as the public archives (ENA, NCBI, Ensembl) expect.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import quote, unquote, urlsplit

from ..core.errors import BadAnswer, BadRequest
from ..core.netrc import netrc_login
from ..core.urls import check_authority, redact

SCHEMES = ("ftp", "ftps")
ANONYMOUS = "anonymous"
ANONYMOUS_PASSWORD = "labferry@"  # an e-mail-like word, as anonymous FTP asks


@dataclass(frozen=True)
class FtpAddress:
    scheme: str
    host: str
    port: int
    user: str
    password: str
    path: str  # as the server is asked for it: relative to the login folder, or absolute
    folder: bool  # the address ends in "/": a folder is meant
    named_user: bool  # the URL named a user (not an anonymous login)

    @classmethod
    def parse(cls, url: str) -> FtpAddress:
        parts = urlsplit(url)
        if parts.scheme.lower() not in SCHEMES:
            raise BadRequest(f"'{redact(url)}' is not an ftp:// or ftps:// address.")
        try:
            port = parts.port or 21
        except ValueError:
            raise BadRequest(f"'{redact(url)}' has a port that is not a number from 1 to 65535.") from None
        if not parts.hostname:
            raise BadRequest(f"'{redact(url)}' names no server. Give it as ftp://host/path.")
        check_authority(url)
        raw = parts.path[1:] if parts.path.startswith("/") else parts.path
        path = unquote(raw)
        if any(c in path for c in "\r\n\0"):
            raise BadRequest(f"'{redact(url)}' has a line break or NUL in its path, which FTP cannot send.")
        user = unquote(parts.username) if parts.username else ""
        password = unquote(parts.password) if parts.password is not None else None
        if password is None and (found := netrc_login(parts.hostname, user or None)):
            user, password = found  # the user's ~/.netrc, as curl, wget and lftp read it
        return cls(parts.scheme.lower(), parts.hostname, port, user or ANONYMOUS,
                   password if password is not None else ("" if user else ANONYMOUS_PASSWORD),
                   path.rstrip("/") if path not in ("/", "") else path, parts.path.endswith("/") or not raw,
                   bool(user))

    @property
    def where(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def shown(self) -> str:
        """The address for messages: no password."""
        user = f"{quote(self.user, safe='')}@" if self.named_user else ""
        lead = "/" if not self.path.startswith("/") else "//"
        return f"{self.scheme}://{user}{self.where}{lead}{quote(self.path.lstrip('/'), safe='/')}"

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    def child(self, name: str, *, folder: bool = False) -> FtpAddress:
        if any(c in name for c in "\r\n\0"):  # it would end the command and start another on the connection
            raise BadAnswer(f"The FTP server named {name!r} in {self.shown}, with a line break or NUL, which FTP "
                            "cannot ask for safely; Ferry stopped. Ask the server's owner to rename it.")
        base = self.path.rstrip("/")
        return replace(self, path=f"{base}/{name}" if base else name, folder=folder)

    def url(self) -> str:
        """The address as a URL again, with the password (in memory only: for another connection)."""
        login = ""
        if self.named_user:
            login = quote(self.user, safe="") + (f":{quote(self.password, safe='')}" if self.password else "") + "@"
        lead = "/" if not self.path.startswith("/") else "//"
        return f"{self.scheme}://{login}{self.where}{lead}{quote(self.path.lstrip('/'), safe='/')}"
