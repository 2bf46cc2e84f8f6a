"""The GridFTP control channel for what globus-url-copy cannot do: stat, list, checksum, rename.

GridFTP's control channel is FTP with extensions (``MLST``/``MLSR`` listings, ``CKSM``
server-side checksums), so for ``ftp://`` servers (anonymous or lite mode) Python's
``ftplib`` speaks it directly: one round trip to learn a file's size, one listing for a
whole tree (``MLSR``), the server hashing the source *while* the data moves, and a
``RNFR``/``RNTO`` so an upload appears under its final name only when complete.
``gsiftp://`` and ``sshftp://`` need GSI or SSH on the control channel, which only the
Globus tools speak; for them ``open_control`` returns None and the backend falls back to
what globus-url-copy offers (``-verify-checksum``, writing in place).

Blocking: callers run these methods in a worker thread.
"""

from __future__ import annotations

import calendar
import ftplib
import posixpath
import socket
import time
from dataclasses import dataclass

from ..core.errors import BadRequest, NotFound, Transient, Unreachable
from .address import GridUrl
from .faults import explain_reply

TIMEOUT = 30.0


#: the most entries a folder's listing may hold
MAX_ENTRIES = 1_000_000


@dataclass(frozen=True)
class Entry:
    rel: str  # path relative to the listed folder ("" for the entry itself)
    is_dir: bool
    size: int
    mtime: float | None  # seconds since the epoch, UTC
    mode: int | None  # permission bits, when the server tells


def _parse_facts(line: str) -> tuple[dict[str, str], str]:
    facts, _, name = line.partition(" ")
    out = {}
    for fact in facts.split(";"):
        key, sep, value = fact.partition("=")
        if sep:
            out[key.lower()] = value
    return out, name


def _entry(facts: dict[str, str], rel: str) -> Entry:
    mtime = None
    if modify := facts.get("modify"):
        try:
            mtime = float(calendar.timegm(time.strptime(modify[:14], "%Y%m%d%H%M%S")))
        except ValueError:
            mtime = None
    mode = None
    if raw := facts.get("unix.mode"):
        try:
            mode = int(raw, 8) & 0o7777
        except ValueError:
            mode = None
    kind = facts.get("type", "").lower()
    return Entry(rel, kind in ("dir", "cdir", "pdir"), int(facts.get("size", "0") or 0), mtime, mode)


class Control:
    """One logged-in control connection (ftp:// only)."""

    def __init__(self, url: GridUrl, ftp: ftplib.FTP) -> None:
        self.url, self.ftp = url, ftp
        self._features: str | None = None

    @classmethod
    def connect(cls, url: GridUrl) -> Control:
        ftp = ftplib.FTP(timeout=TIMEOUT)
        try:
            ftp.connect(url.host, url.port)
            ftp.login(url.user or "anonymous", "ferry@" if not url.user or url.user == "anonymous" else "")
        except ftplib.error_perm as exc:
            ftp.close()
            raise explain_reply(str(exc), url, url.path, "log in to") from None
        except (socket.gaierror, UnicodeError):
            ftp.close()
            raise Unreachable(f"The server name {url.host} could not be found. Check the address for typos.") from None
        except ConnectionRefusedError:
            ftp.close()
            raise Unreachable(f"{url.where} refused the connection. Check that the GridFTP server is running "
                              "and that the port is right.") from None
        except (OSError, EOFError, ftplib.Error) as exc:
            # ftplib keeps the socket once the TCP connection is made; what answers, but not in FTP, stays final
            reached = ftp.sock is not None and not isinstance(exc, ftplib.error_proto)
            ftp.close()
            if reached:  # the server took the connection and then dropped it (restarting, or crashed mid-login)
                raise Transient(f"The GridFTP server at {url.where} took the connection but dropped it before "
                                f"Ferry had logged in ({exc or type(exc).__name__}); Ferry will retry.") from None
            raise Unreachable(f"Could not talk to the GridFTP server at {url.where} ({exc}). "
                              "Check the address and your network.") from None
        return cls(url, ftp)

    def close(self) -> None:
        try:
            self.ftp.quit()
        except (OSError, EOFError, ftplib.Error):
            self.ftp.close()

    def features(self) -> str:
        if self._features is None:
            try:
                self._features = self.ftp.sendcmd("FEAT").upper()
            except (OSError, EOFError, ftplib.Error):
                self._features = ""
        return self._features

    def stat(self, path: str) -> Entry | None:
        """The entry at ``path``, or None when there is nothing there."""
        try:
            reply = self.ftp.sendcmd(f"MLST {path}")
        except ftplib.error_perm as exc:
            err = explain_reply(str(exc), self.url, path, "look at")
            if isinstance(err, NotFound):
                return None
            raise err from None
        except (OSError, EOFError, ftplib.Error) as exc:
            raise Transient(f"The control connection to {self.url.where} broke ({exc}); Ferry will retry.") from None
        for line in reply.splitlines()[1:]:
            if "=" in line:
                facts, _ = _parse_facts(line.strip())
                return _entry(facts, "")
        return None

    def walk(self, path: str) -> list[Entry]:
        """Every entry under the folder ``path`` in one round trip (``MLSR``), relative names; at most
        ``MAX_ENTRIES`` (memory stays bounded whatever the server lists)."""
        lines: list[str] = []

        def take(line: str) -> None:
            if len(lines) >= MAX_ENTRIES:
                raise BadRequest(f"{path} on {self.url.where} lists more than {MAX_ENTRIES:,} entries; Ferry "
                                 "stopped. Copy its sub-folders one by one.")
            lines.append(line)

        try:
            self.ftp.retrlines(f"MLSR {path}", take)
        except UnicodeDecodeError:
            raise _not_utf8(path, self.url.where) from None
        except ftplib.error_perm as exc:
            raise explain_reply(str(exc), self.url, path, "list") from None
        except (OSError, EOFError, ftplib.Error) as exc:
            raise Transient(f"Listing {path} on {self.url.where} broke off ({exc}); Ferry will retry.") from None
        entries = []
        for line in lines:
            if not line.strip():
                continue
            facts, name = _parse_facts(line)
            if facts.get("type", "").lower() in ("cdir", "pdir") or name in (".", ".."):
                continue
            rel = posixpath.normpath(name)
            if rel.startswith(("../", "/")) or rel == "..":
                continue  # never follow a name out of the tree
            entries.append(_entry(facts, rel))
        return entries

    def listdir(self, path: str) -> list[Entry]:
        """The entries of one folder (``MLSD``), for browsing."""
        try:
            return [_entry({k.lower(): v for k, v in facts.items()}, name) for name, facts in self.ftp.mlsd(path)
                    if facts.get("type", "").lower() not in ("cdir", "pdir") and name not in (".", "..")]
        except UnicodeDecodeError:
            raise _not_utf8(path, self.url.where) from None
        except ftplib.error_perm as exc:
            raise explain_reply(str(exc), self.url, path, "list") from None
        except (OSError, EOFError, ftplib.Error) as exc:
            raise Transient(f"Listing {path} on {self.url.where} broke off ({exc}); Ferry will retry.") from None

    def checksum(self, path: str, algorithm: str = "SHA256") -> str | None:
        """The server's digest of ``path`` (``CKSM``), or None when it cannot compute one."""
        if "CKSM" in self.features() and algorithm.upper() not in self.features():
            return None
        try:
            reply = self.ftp.sendcmd(f"CKSM {algorithm} 0 -1 {path}")
        except (ftplib.error_perm, ftplib.error_reply):
            return None
        except (OSError, EOFError, ftplib.Error) as exc:
            raise Transient(f"The control connection to {self.url.where} broke ({exc}); Ferry will retry.") from None
        code, _, digest = reply.partition(" ")
        return digest.strip().lower() if code == "213" and digest.strip() else None

    def rename(self, old: str, new: str) -> None:
        try:
            self.ftp.rename(old, new)
        except ftplib.Error as exc:
            raise explain_reply(str(exc), self.url, new, "rename a finished upload to") from None
        except (OSError, EOFError) as exc:
            raise Transient(f"The control connection to {self.url.where} broke ({exc}); Ferry will retry.") from None

    def set_mtime(self, path: str, mtime: float) -> None:
        """Keep the source's modification time (``MFMT``); a best effort."""
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(mtime))
        try:
            self.ftp.sendcmd(f"MFMT {stamp} {path}")
        except (OSError, EOFError, ftplib.Error):
            pass

    def remove(self, path: str) -> None:
        """Delete a file or a whole folder (a failed upload's staging copy); a best effort."""
        entry = self.stat(path)
        if entry is None:
            return
        try:
            if not entry.is_dir:
                self.ftp.delete(path)
                return
            children = self.walk(path)
            for child in sorted((e for e in children if not e.is_dir), key=lambda e: e.rel):
                self.ftp.delete(posixpath.join(path, child.rel))
            for child in sorted((e for e in children if e.is_dir), key=lambda e: -e.rel.count("/")):
                self.ftp.rmd(posixpath.join(path, child.rel))
            self.ftp.rmd(path)
        except (OSError, EOFError, ftplib.Error):
            pass


def checksums(url: GridUrl, root: str, rels: list[str], connections: int = 8) -> dict[str, str | None]:
    """The server's sha256 of many files under ``root``, over several control connections at once.

    ``CKSM`` is one round trip per file, so a folder of thousands spreads them over
    ``connections`` sessions (the server hashes on as many cores). Blocking.
    """
    from concurrent.futures import ThreadPoolExecutor

    if url.scheme != "ftp" or not rels:
        return dict.fromkeys(rels)
    shares = [rels[i::connections] for i in range(min(connections, len(rels)))]

    def work(share: list[str]) -> dict[str, str | None]:
        control = Control.connect(url)
        try:
            return {rel: control.checksum(posixpath.join(root, rel), "SHA256") for rel in share}
        finally:
            control.close()

    out: dict[str, str | None] = {}
    with ThreadPoolExecutor(len(shares), thread_name_prefix="ferry-cksm") as pool:
        for part in pool.map(work, shares):
            out.update(part)
    return out


def open_control(url: GridUrl) -> Control | None:
    """A control connection where Ferry can speak the protocol itself (``ftp://``), else None."""
    return Control.connect(url) if url.scheme == "ftp" else None


def _not_utf8(path: str, where: str) -> BadRequest:
    """FTP sends names as UTF-8 (RFC 2640); a Latin-1 name from an old system cannot be named back to it."""
    return BadRequest(f"A name under {path} on {where} is not valid UTF-8, so it cannot be asked for over FTP. "
                      "Rename it on the server (for example with convmv), or copy that folder over SSH.")
