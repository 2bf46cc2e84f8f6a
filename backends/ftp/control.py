"""One FTP control connection (aioftp underneath): login, what the server announced, sizes, dates, listings.

Only commands the server announced in ``FEAT`` are sent: ``MLST``/``MLSD`` when offered, else ``SIZE``,
``MDTM`` and a parsed ``LIST``; ``EPSV`` when offered, else ``PASV``; ``REST STREAM`` for ranges. Nothing of
GridFTP's (``MODE E``, ``MLSR``, ``SPAS``) ever goes to a plain FTP server. Explicit FTPS (``AUTH TLS``) is
verified as HTTPS is: the system's trust store or ``--ca-file``.
"""

from __future__ import annotations

import asyncio
import calendar
import ssl
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

import aioftp
from aioftp.common import wrap_into_codes

from ..core.errors import BadRequest, TransferError
from ..streams.slots import server_slots
from .address import FtpAddress
from .client import FtpClient, ssl_object_of
from .faults import TLS_WORKED, ftp_error, not_utf8

CONNECT_SECONDS = 30.0  # the TCP connection and the server's greeting
#: how long a reply may take once a data connection was closed early (the end of a range)
REPLY_AFTER_CLOSE = 15.0
#: the most entries one folder's listing may hold
MAX_ENTRIES = 1_000_000


@dataclass
class Entry:
    name: str
    kind: str  # "file", "dir" or "link"
    size: int | None
    modified: str | None  # YYYYMMDDhhmmss (UTC), as MDTM and MLSD give it


def entry_mtime(entry: Entry) -> float | None:
    """The entry's modification time in seconds since the epoch (``MLSD``'s ``modify`` or ``MDTM``), if told."""
    if entry.modified and entry.modified[:14].isdigit():
        return float(calendar.timegm(time.strptime(entry.modified[:14], "%Y%m%d%H%M%S")))
    return None


def tls_context(ca_file: str | None, insecure: bool) -> ssl.SSLContext:
    if insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    ctx = ssl.create_default_context()  # the system's trust store, plus a lab's CA with --ca-file
    if ca_file:
        try:
            ctx.load_verify_locations(ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise BadRequest(f"Could not read the CA file {ca_file} ({exc}). Give a PEM file with the lab's CA.") \
                from None
    return ctx


class FtpControl:
    def __init__(self, address: FtpAddress, *, ca_file: str | None = None, insecure: bool = False,
                 stall_seconds: float = 60.0, connects_at_once: int = 16) -> None:
        self.address = address
        self.connects_at_once = connects_at_once
        self.ca_file, self.insecure = ca_file, insecure
        self.stall_seconds = stall_seconds
        self.client = self._new_client()
        self.features: set[str] = set()
        #: how long FEAT took at login: the path's round trip (the server answers at once); None before a login
        self.feat_seconds: float | None = None
        self.home: str | None = None
        #: a command or transfer failed half-way: what the server says next may answer an earlier command,
        #: so this connection is not used again as it is (``reopen``)
        self.broken = False

    def _new_client(self) -> FtpClient:
        return FtpClient(socket_timeout=self.stall_seconds, connection_timeout=CONNECT_SECONDS, encoding="utf-8")

    async def reopen(self) -> FtpControl:
        """A fresh login in place of a connection that failed half-way."""
        self.abandon()
        self.client, self.home, self.broken = self._new_client(), None, False
        return await self.open()

    # -- opening -----------------------------------------------------------------------
    async def open(self) -> FtpControl:
        address = self.address
        step = "connect"
        try:
            async with server_slots("ftp", address.host, address.port, self.connects_at_once):
                # held until the greeting, once the server has accepted the connection (vsftpd queues only 32;
                # traced at 80 ms: 27 of 64 streams opened at once never greeted). aioftp bounds the TCP connect
                # only; a greeting that never comes must not wait for the stall timeout
                await asyncio.wait_for(self.client.connect(address.host, address.port), CONNECT_SECONDS)
            if address.scheme == "ftps":
                step = "tls"
                await self.client.upgrade_to_tls(tls_context(self.ca_file, self.insecure))
                TLS_WORKED.add(address.where)
            step = "login"
            await self.client.login(address.user, address.password)
            step = "feat"
            asked = time.monotonic()
            self.features = await self._features()
            self.feat_seconds = time.monotonic() - asked
            self.client._passive_commands = ("epsv", "pasv") if "EPSV" in self.features else ("pasv",)
            if "UTF8" in self.features:
                await self.client.command("OPTS UTF8 ON", ("2xx", "5xx"))
        except BaseException as exc:
            self.abandon()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ftp_error(exc, address, step=step) from exc
        return self

    async def _features(self) -> set[str]:
        """The first word of each ``FEAT`` line (MLST, SIZE, MDTM, REST, EPSV, UTF8, HASH…); none when the server
        does not know FEAT (an old server: then only RFC 959's own commands are used)."""
        code, lines = await self.client.command("FEAT", ("211", "5xx"))
        if not str(code).startswith("211"):
            return set()
        found = set()
        for line in lines[1:-1]:
            word = line.strip().split(" ", 1)
            if word and word[0]:
                found.add(word[0].upper())
                if word[0].upper() == "REST" and len(word) > 1:
                    found.add("REST " + word[1].strip().upper())
        return found

    @property
    def can_resume(self) -> bool:
        return "REST STREAM" in self.features or "REST" in self.features

    # -- asking about paths ---------------------------------------------------------------
    async def entry(self, path: str) -> Entry:
        """What ``path`` is: file (with size and date), folder, or NotFound."""
        try:
            if "MLST" in self.features:
                code, lines = await self.client.command(f"MLST {path}", "2xx")
                fact_line = next((ln for ln in lines[1:] if ";" in ln), lines[-1])
                _, info = self.client.parse_mlsx_line(fact_line.lstrip())
                return _entry(PurePosixPath(path).name, info)
            size = await self._number("SIZE", path) if "SIZE" in self.features else None
            if size is None and await self._is_folder(path):
                return Entry(PurePosixPath(path).name, "dir", None, None)
            modified = await self._text("MDTM", path) if "MDTM" in self.features else None
            if size is None and modified is None:
                raise aioftp.StatusCodeError(aioftp.Code("2xx"), aioftp.Code("550"), [f" {path}: no such file"])
            return Entry(PurePosixPath(path).name, "file", size, modified)
        except Exception as exc:
            raise ftp_error(exc, self.address, step="stat", path=path) from exc

    async def size_of(self, path: str) -> int | None:
        """A file's size in one round trip (``MLST``, else ``SIZE``); None when no file is there. An upload asks
        this three times a file: ``entry``'s ``CWD`` and ``MDTM`` would cost a server without ``MLST`` two more."""
        try:
            if "MLST" in self.features:
                code, lines = await self.client.command(f"MLST {path}", ("2xx", "5xx"))
                if not str(code).startswith("2"):
                    return None
                fact_line = next((ln for ln in lines[1:] if ";" in ln), lines[-1])
                found = _entry(PurePosixPath(path).name, self.client.parse_mlsx_line(fact_line.lstrip())[1])
                return found.size if found.kind == "file" else None
            if "SIZE" in self.features:
                return await self._number("SIZE", path)
        except Exception as exc:
            raise ftp_error(exc, self.address, step="stat", path=path) from exc
        try:
            return (await self.entry(path)).size
        except TransferError as exc:
            if exc.kind == "not-found":
                return None
            raise

    async def in_one_trip(self, commands: list[str], expected: list[str]) -> list[tuple]:
        """Commands sent together and their replies read in order ((code, lines) each): one round trip where one
        after the other costs one each. Only for commands whose failure makes the next one fail harmlessly
        (``RNFR``/``RNTO``: a refused ``RNFR`` gets ``RNTO`` a 503). The first reply that is not ``expected``
        raises ``StatusCodeError`` once every reply is read, so the connection stays in step."""
        for command in commands:
            await self.client.command(command)  # sent, its reply read below
        replies = [await self.client.parse_response() for _ in commands]
        for (code, lines), codes in zip(replies, expected, strict=True):
            self.client.check_codes(wrap_into_codes((codes,)), code, lines)
        return replies

    async def _number(self, command: str, path: str) -> int | None:
        text = await self._text(command, path)
        return int(text) if text and text.isdigit() else None

    async def _text(self, command: str, path: str) -> str | None:
        code, lines = await self.client.command(f"{command} {path}", ("213", "5xx"))
        if not str(code).startswith("213"):
            return None
        return lines[-1].strip().split(" ")[-1]

    async def _is_folder(self, path: str) -> bool:
        """Without MLST: a folder is a path the server lets us change into (and back out of)."""
        if self.home is None:
            self.home = str(await self.client.get_current_directory())
        code, _ = await self.client.command(f"CWD {path}", ("2xx", "5xx"))
        if not str(code).startswith("2"):
            return False
        await self.client.command(f"CWD {self.home}", "2xx")
        return True

    async def listing(self, path: str) -> list[Entry]:
        """The folder's entries, by ``MLSD`` when announced, else by ``LIST`` (Unix or Windows format)."""
        command = "MLSD" if "MLST" in self.features else "LIST"
        try:
            found = []
            async for name, info in self.client.list(path, raw_command=command):
                found.append(_entry(_listed_name(path, name), info))
                if len(found) > MAX_ENTRIES:  # memory stays bounded whatever the server lists
                    self.abandon()
                    raise BadRequest(f"The FTP server at {self.address.where} lists more than {MAX_ENTRIES:,} "
                                     f"entries in {path or 'the login folder'}; Ferry stopped. Copy its sub-folders "
                                     "one by one.")
            return found
        except UnicodeDecodeError:
            raise not_utf8(self.address, path) from None
        except ValueError as exc:  # aioftp: "All parsers failed to parse", the line, each parser's error
            if any(isinstance(e, UnicodeDecodeError) for e in _flat(exc.args)):
                raise not_utf8(self.address, path) from None
            raise TransferError(f"The FTP server at {self.address.where} listed {path or 'the login folder'} in a "
                                "form Ferry cannot read. Copy its files by their own addresses, or ask the server's "
                                "owner which FTP server it runs.", detail=repr(exc)) from None
        except Exception as exc:
            raise ftp_error(exc, self.address, step="list", path=path) from exc

    # -- reading -----------------------------------------------------------------------------
    async def read_from(self, path: str, offset: int):
        """A data stream of ``path`` from ``offset`` (``REST`` then ``RETR``)."""
        try:
            return await self.client.get_stream(f"RETR {path}", "1xx", offset=offset)
        except Exception as exc:
            raise ftp_error(exc, self.address, step="read", path=path) from exc

    async def end_read(self, stream, *, complete: bool) -> None:
        """Close a data stream. At the end of the file the server says 226; closed early (the end of a range),
        it says 426 or 226 (or 450/451): any reply means the control connection is ready again."""
        if complete:
            await stream.finish()
            return
        transport = stream.writer.transport
        try:
            tls = ssl_object_of(transport) is not None
        except ConnectionResetError:
            tls = True  # closed already: aborting it again is harmless
        if tls:
            # a TLS close waits for the server's close_notify, which a server still sending never gives:
            # drop the connection at once, as a plain one is dropped (the server answers 426)
            transport.abort()
        else:
            stream.close()
        await asyncio.wait_for(self.client.command(None, ("2xx", "4xx", "5xx"), "1xx"), REPLY_AFTER_CLOSE)

    # -- closing -------------------------------------------------------------------------------
    async def close(self) -> None:
        try:
            await asyncio.wait_for(self.client.quit(), 5)
        except (Exception, asyncio.CancelledError):
            pass
        self.abandon()

    def abandon(self) -> None:
        try:
            self.client.close()
        except Exception:
            pass


def _flat(items) -> list:
    """``items`` with the lists inside it opened (aioftp's parse error carries a list of errors)."""
    return [x for item in items for x in (item if isinstance(item, (list, tuple)) else (item,))]


def _listed_name(folder: str, joined: PurePosixPath) -> str:
    """The name the server listed, as it listed it: aioftp joins it to the folder's path, which a name holding a
    ``/`` (``../x``, ``evil\rDELE /x``) would otherwise pass through as a path, its last part mistaken for the
    name; the walker then keeps it one name (``one_part``) or refuses it (a line break)."""
    base = str(PurePosixPath(folder)) if folder else "."
    text = str(joined)
    if base != "." and text.startswith(base.rstrip("/") + "/"):
        return text[len(base.rstrip("/")) + 1:]
    return text


def _entry(name: str, info: dict) -> Entry:
    kind = str(info.get("type", "file")).lower()
    # MLSD names a link OS.unix=symlink or OS.unix=slink:TARGET (ProFTPD): never taken for a file to RETR, which
    # the server would answer with whatever the link leads to
    link = kind == "link" or kind.startswith("os.unix=slink") or kind == "os.unix=symlink"
    kind = "dir" if kind in ("dir", "cdir", "pdir") else "link" if link else "file"
    size = info.get("size")
    return Entry(name, kind, int(size) if size is not None and str(size).isdigit() else None, info.get("modify"))
