"""The HTTP/1.1 the lean path speaks (``lean.py``): a GET, its answer's head read within bounds, its body read as
it comes. A request may go out before the answer ahead of it has ended (pipelining, RFC 9112 §9.3): the
connection then never idles for the round trip between two files.

Only what the plain case needs is read here; anything else in a head (a status other than 200, no or another
length, a transfer or content coding) is reported as it is, and ``lean.py`` hands such a file to the full
client. Every read is bounded: a line of ``MAX_LINE`` bytes, ``MAX_HEADERS`` header lines, ``MAX_INTERIM``
1xx answers; beyond them the answer is ``NotPlain`` too.
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from .options import USER_AGENT

MAX_LINE = 8192
MAX_HEADERS = 100
MAX_INTERIM = 5
#: the buffer a connection reads through (one system call gets what a few TLS records hold)
READ_BUFFER = 256 * 1024


class NotPlain(Exception):
    """Not the plain case: the file goes to the full client, which follows or words what happened."""


class Closed(Exception):
    """The server closed the connection before a byte of the answer: the request may go again on a new one."""


@dataclass(frozen=True)
class Head:
    status: int
    length: int | None  # Content-Length; None when absent
    coded: str  # Transfer-Encoding and Content-Encoding other than identity, or ""
    will_close: bool
    span: str = ""  # Content-Range, as sent (an answer to a request for a piece)


def request_target(address: str) -> str | None:
    """The request line's target for ``address`` (its path and query), or None where this client does not ask:
    not http(s), no host, a login in it, or anything that would need encoding."""
    parts = urlsplit(address)
    if parts.scheme not in ("http", "https") or parts.username or not parts.hostname:
        return None
    if not address.isascii() or any(c in address for c in " \t\r\n#"):
        return None
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class PlainConnection:
    """One kept-alive connection to (scheme, host, port); TLS verified by ``context`` (its host name checked)."""

    def __init__(self, key: tuple, context: ssl.SSLContext, connect_seconds: float, stall_seconds: float) -> None:
        scheme, host, port = key
        usual = 443 if scheme == "https" else 80
        port = port or usual
        began = time.monotonic()
        raw = socket.create_connection((host, port), timeout=connect_seconds)
        #: the round trip, first as the TCP handshake took it, then the shortest wait for an answer's head
        self.rtt = time.monotonic() - began
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = context.wrap_socket(raw, server_hostname=host) if scheme == "https" else raw
        except BaseException:
            raw.close()
            raise
        self.sock.settimeout(stall_seconds)
        self.reader = self.sock.makefile("rb", buffering=READ_BUFFER)
        named = f"[{host}]" if ":" in host else host
        self.host = named if port == usual else f"{named}:{port}"
        self.answered = 0  # answers read whole on this connection
        self.rate = 0.0  # bytes a second the last body came at (0: none yet)
        self.ahead: str | None = None  # a target asked for before any lane took it (``warm.ask_ahead``)

    def send_get(self, target: str, span: tuple[int, int] | None = None) -> None:
        """A GET of ``target``, or of its bytes ``span`` = (first, last), both included."""
        asked = f"Range: bytes={span[0]}-{span[1]}\r\n" if span else ""
        self.sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {self.host}\r\nUser-Agent: {USER_AGENT}\r\n"
                          f"Accept-Encoding: identity\r\nAccept: */*\r\n{asked}\r\n".encode("ascii"))

    def read_head(self, sent_at: float | None = None) -> Head:
        """The next answer's head (1xx answers skipped); ``Closed`` when the server hung up before it began.
        ``sent_at``: when its request left, with nothing ahead of it (the wait measures the round trip)."""
        head = self._read_head()
        if sent_at is not None:
            self.rtt = min(self.rtt, time.monotonic() - sent_at)
        return head

    def _read_head(self) -> Head:
        for _ in range(MAX_INTERIM + 1):
            line = self.reader.readline(MAX_LINE + 1)
            if not line:
                raise Closed("the server closed the connection")
            version, status = _status_line(line)
            fields = self._fields()
            if 100 <= status < 200:
                continue
            return _head(version, status, fields)
        raise NotPlain(f"more than {MAX_INTERIM} interim answers")

    def read_into(self, buffer: memoryview) -> int:
        """Body bytes into ``buffer``, as many as came (0 when the server hung up). Into a buffer the caller
        keeps: ``read1(n)`` makes an n-byte object for each TLS record's 16 KiB, and at 512 KiB that is an
        ``mmap`` and ``munmap`` a record (a 4 MiB run took twice as long on the loopback)."""
        return self.reader.readinto1(buffer)

    def close(self) -> None:
        for part in (self.reader, self.sock):
            try:
                part.close()
            except OSError:
                pass

    def _fields(self) -> dict[str, list[str]]:
        fields: dict[str, list[str]] = {}
        for _ in range(MAX_HEADERS + 1):
            line = self.reader.readline(MAX_LINE + 1)
            if len(line) > MAX_LINE:
                raise NotPlain("a header line beyond any sane size")
            if line in (b"\r\n", b"\n"):
                return fields
            if not line:
                raise NotPlain("the answer ended within its head")
            if line[:1] in (b" ", b"\t"):
                raise NotPlain("a folded header line")
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep or not name or name != name.strip():
                raise NotPlain("a malformed header line")
            fields.setdefault(name.lower(), []).append(value.strip())
        raise NotPlain(f"more than {MAX_HEADERS} header lines")


def _status_line(line: bytes) -> tuple[str, int]:
    if len(line) > MAX_LINE:
        raise NotPlain("a status line beyond any sane size")
    parts = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    if len(parts) < 2 or parts[0] not in ("HTTP/1.1", "HTTP/1.0") or not _digits(parts[1]) or len(parts[1]) != 3:
        raise NotPlain(f"not an HTTP/1.x status line: {line[:40]!r}")
    return parts[0], int(parts[1])


def _digits(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` takes '²' too (a Latin-1 byte 0xB2), which ``int`` refuses."""
    return text.isascii() and text.isdigit()


def _head(version: str, status: int, fields: dict[str, list[str]]) -> Head:
    lengths = fields.get("content-length", [])
    length = int(lengths[0]) if len(set(lengths)) == 1 and _digits(lengths[0]) and len(lengths[0]) < 19 else None
    codings = [v.strip().lower() for key in ("transfer-encoding", "content-encoding")
               for value in fields.get(key, []) for v in value.split(",")]
    coded = ", ".join(c for c in codings if c and c != "identity")
    tokens = {t.strip().lower() for value in fields.get("connection", []) for t in value.split(",")}
    will_close = "close" in tokens or (version == "HTTP/1.0" and "keep-alive" not in tokens)
    spans = fields.get("content-range", [])
    return Head(status, length, coded, will_close, spans[0] if len(spans) == 1 else "")
