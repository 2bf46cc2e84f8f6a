"""Small files of a list on worker threads, each a lane with its own kept-alive connection (``plainhttp.py``).

A study of a thousand small runs is mostly per-file work and round trips. On the event loop, aiohttp's request
set-up and its proxy and netrc lookups (two hand-overs to threads a request) came on top of making, writing
and reading back each part file; and a connection idled a round trip between one file's end and the next
one's first byte (for a 256 KiB file at 50 ms, longer than the file took). Here a lane takes a file, asks for
it, and asks for the next one while the first one's body arrives (pipelining); it writes ``NAME.part`` through
``WholeFile`` and reads it back and hashes it. The event loop only hands files over and takes the digests, the
two cores decrypt at once, and a list of small files imports no aiohttp at all (~0.13 s of one core).

Only the plain case is taken: a 200 whose Content-Length is the size the catalogue published, no coding, over a
direct connection (no proxy, no login, no rate limit: ``lean_for``). Anything else raises ``NotPlain`` before a
byte is kept, and the file goes to the full client (``folder.py``), which follows redirects, inflates, and
words every server's failure, so the errors a user reads stay one set. Raised here as they are: a stall
(``RateFloor``, the socket's timeout), more bytes than promised (``WholeFile``), the destination's errors.
A host that drops a pipelined request is asked one request at a time from then on.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..core.netrc import netrc_login
from ..destination import WholeFile
from ..streams.floor import RateFloor
from ..streams.hashing import read_back
from .address import stalled
from .pieces import Pieces, all_pieces, spans
from .plainhttp import Closed, Head, NotPlain, PlainConnection, request_target
from .warm import asked_ahead, give_back, lean_context, take_asked, take_warm

__all__ = ["NotPlain", "LeanGetter", "lean_for"]
log = logging.getLogger(__name__)

#: a body is read, and its progress told, this much at a time
READ = 512 * 1024
#: what one read may take from the connection's buffer
ROOM = 256 * 1024
#: files a lane holds at once: the one arriving and the one asked for behind it
DEPTH = 2
#: the next file is asked for when what is left of this one would take about this many round trips (and, at the
#: least, at ``AHEAD_LEAST`` bytes left): its answer then follows at once, and it is not bound to this lane
#: while other lanes go idle (a 4 MiB file asked for at the start of the one ahead waited ~0.4 s for it)
AHEAD_TRIPS = 1.5
AHEAD_LEAST = 64 * 1024


class _Call:
    """One file's request, so that a cancel can end it at once: before its body is being written the lane is
    left to give up on its own (it writes nothing then); once writing, its socket is shut, which ends the read."""

    def __init__(self) -> None:
        self.conn: PlainConnection | None = None
        self.aborted = self.writing = False
        self._lock = threading.Lock()

    def start_writing(self) -> None:
        """Called on the lane before the first byte is kept; ``NotPlain`` when the file was given up."""
        with self._lock:
            if self.aborted:
                raise NotPlain("cancelled")
            self.writing = True

    def abort(self) -> bool:
        """Give the file up; True when its lane is writing it (wait for that: it ends at once)."""
        with self._lock:
            self.aborted = True
            writing = self.writing
        sock = self.conn.sock if writing and self.conn is not None else None
        if sock is not None:
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: the TLS layer is mid-read
            except OSError:
                pass
        return writing


@dataclass(eq=False)
class _File:
    url: str
    key: tuple  # (scheme, host, port)
    target: str
    out: WholeFile
    algorithms: tuple[str, ...]
    floor: RateFloor
    tell: Callable[[int], None]
    call: _Call = field(default_factory=_Call)
    done: Future = field(default_factory=Future)
    sent: bool = False  # its request went out on the lane's connection
    behind: bool = False  # ... while the answer ahead of it was still arriving
    span: tuple[int, int] | None = None  # a piece: its first and last byte
    pieces: Pieces | None = None  # ... and the count of its file's pieces still to come

    def keep(self, data: memoryview, at: int) -> None:
        """``data``, the body's bytes from ``at``, into the file (a piece in its own place)."""
        if self.span is None:
            self.out.write(data)
        else:
            self.out.write_at(self.span[0] + at, data)


class LeanGetter:
    """Lanes (daemon threads: a host that never answers holds neither a cancel nor the end of the process) over a
    queue of files, for one list job; ``lanes`` is set from the job's budget; ``close`` when it ends."""

    def __init__(self, context: ssl.SSLContext, ca_file: str | None, stall_seconds: float,
                 connect_seconds: float) -> None:
        self.context, self.ca_file, self.stall, self.connect = context, ca_file, stall_seconds, connect_seconds
        self.lanes = 1
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._started = 0
        self._one_at_a_time: set[tuple] = set()  # hosts that dropped a pipelined request
        self._logins: dict[str, bool] = {}

    def takes(self, address: str, size: int | None) -> bool:
        """Whether ``address`` is for this path: http(s), a size known, a target that needs no encoding, no login
        in it or in ~/.netrc."""
        if size is None or request_target(address) is None:
            return False
        host = urlsplit(address).hostname
        if host not in self._logins:
            self._logins[host] = netrc_login(host) is not None
        return not self._logins[host]

    async def fetch(self, url: str, out: WholeFile, algorithms: tuple[str, ...], floor: RateFloor,
                    told: Callable[[int], None], pieces: int = 1) -> dict[str, str]:
        """``url``'s body into ``out``, read back and hashed: its digests. ``told(bytes)`` runs on the event loop
        every ``READ`` bytes. With ``pieces`` > 1, each of that many spans of the file is asked for on its own
        (``Range``) and written in its place, by whichever lanes are free. A cancel shuts the socket of a file
        being written and waits for its lane, so ``out`` is never closed or removed under it."""
        loop = asyncio.get_running_loop()
        parts = urlsplit(url)
        target = request_target(url) or "/"  # one ``takes`` took
        size = out.limit or 0
        cut = spans(size, pieces) if pieces > 1 and size >= pieces else [None]
        together = Pieces(len(cut)) if len(cut) > 1 else None
        files = [_File(url, (parts.scheme, parts.hostname, parts.port), target, out, algorithms,
                       RateFloor(floor.window, floor.what, floor.floor) if together else floor,
                       lambda written: loop.call_soon_threadsafe(told, written), span=span, pieces=together)
                 for span in cut]
        for file in files:
            self._queue.put(file)
            if self._started < self.lanes:
                self._started += 1
                threading.Thread(target=self._lane, name=f"ferry-lane-{self._started}", daemon=True).start()
        return await all_pieces(files)

    def close(self) -> None:
        for _ in range(self._started):
            self._queue.put(None)

    # -- on a lane ---------------------------------------------------------------------------------------
    def _lane(self) -> None:
        conns: dict[tuple, PlainConnection] = {}
        room = memoryview(bytearray(ROOM))
        try:
            file = self._next(block=True)
            while file is not None:
                following: list[_File] = []
                try:
                    file.done.set_result(self._fetch(file, conns, following, room))
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                    file.done.set_exception(exc)
                file = following[0] if following else self._next(block=True)
        finally:
            for conn in conns.values():
                conn.close()

    def _next(self, block: bool) -> _File | None:
        """The next file not given up meanwhile; None at the end (or, not blocking, when none waits)."""
        while True:
            try:
                file = self._queue.get(block)
            except queue.Empty:
                return None
            if file is None:
                if not block:
                    self._queue.put(None)  # the end is for the lane that waits for it
                return None
            if file.done.set_running_or_notify_cancel():
                return file

    def _fetch(self, file: _File, conns: dict[tuple, PlainConnection], following: list[_File],
               room: memoryview) -> dict[str, str]:
        conn, head = self._ask(file, conns)
        try:
            _check_head(head, file.out.limit, file.span)
            file.call.start_writing()
            file.floor.begin()
            pipelines = not head.will_close and file.key not in self._one_at_a_time
            _read_body(conn, file, (lambda: self._ask_behind(file, conn, following)) if pipelines else None, room)
        except BaseException:
            self._drop(file.key, conns, following)
            raise
        conn.answered += 1
        if head.will_close:
            self._drop(file.key, conns, following)
        if file.pieces is not None and not file.pieces.last_in():
            return {}  # the file is read back by the lane that brings its last piece
        file.out.flush()
        return read_back(file.out.part, file.algorithms)

    def _ask(self, file: _File, conns: dict[tuple, PlainConnection]) -> tuple[PlainConnection, Head]:
        """The connection and the answer's head. A kept-alive connection the server closed meanwhile is replaced
        once; a host that dropped a request sent behind another is asked one at a time from then on."""
        for _ in range(2):
            conn = conns.get(file.key)
            asked = None if file.sent or file.span else take_asked((file.key, self.ca_file), file.target)
            if asked is not None:  # asked for while the catalogue's answer arrived: its answer is on that one
                if conn is not None:
                    give_back((file.key, self.ca_file), conn)  # idle: nothing is asked on it behind this file
                conns[file.key] = conn = asked
                conn.ahead, file.sent, file.behind = None, True, False
            reused = conn is not None
            if conn is None:
                conn = take_warm((file.key, self.ca_file), self.connect)
                reused = conn is not None  # opened ahead: the server may have closed it since
                conns[file.key] = conn = conn or self._connection(file.key)
            file.call.conn = conn
            try:
                sent_at = None
                if not file.sent:
                    conn.send_get(file.target, file.span)
                    file.sent, file.behind, sent_at = True, False, time.monotonic()
                return conn, conn.read_head(sent_at)
            except TimeoutError:
                self._drop(file.key, conns, [])
                raise stalled(file.url) from None
            except NotPlain:  # a head not read to its end: what is left of it must not be the next file's answer
                self._drop(file.key, conns, [])
                raise
            except (Closed, OSError) as exc:
                self._drop(file.key, conns, [])
                if file.behind and isinstance(exc, Closed) and file.key not in self._one_at_a_time:
                    self._one_at_a_time.add(file.key)
                    log.info("%s dropped a request sent behind another: asked one request at a time from now on",
                             file.key[1])
                file.sent = file.behind = False
                if not reused or file.call.aborted:
                    raise NotPlain(str(exc) or type(exc).__name__) from exc
        raise NotPlain("the server closed two connections in a row")

    def _ask_behind(self, file: _File, conn: PlainConnection, following: list[_File]) -> None:
        """Ask for the next waiting file on this connection now, so its answer follows this one's at once."""
        behind = self._next(block=False)
        if behind is None:
            return
        following.append(behind)
        if behind.key == file.key and not (behind.span is None and asked_ahead((file.key, self.ca_file),
                                                                              behind.target)):
            try:
                conn.send_get(behind.target, behind.span)
                behind.sent = behind.behind = True
            except OSError:
                pass  # this body's read will say what happened; the file behind is asked again

    def _drop(self, key: tuple, conns: dict[tuple, PlainConnection], following: list[_File]) -> None:
        conn = conns.pop(key, None)
        if conn is not None:
            conn.close()
        for behind in following:
            if behind.key == key:
                behind.sent = False  # its request went on the closed connection: it is asked again

    def _connection(self, key: tuple) -> PlainConnection:
        try:
            return PlainConnection(key, self.context, self.connect, self.stall)
        except (OSError, ValueError) as exc:  # refused, unknown host, TLS: the full client words it
            raise NotPlain(str(exc) or type(exc).__name__) from exc


def _check_head(head: Head, size: int | None, span: tuple[int, int] | None) -> None:
    """Only a 200 of exactly the promised size, as it is (not coded), is the plain case; for a piece, a 206 of
    exactly its span of that size."""
    if span is None:
        if head.status != 200 or head.coded or head.length is None or head.length != size:
            raise NotPlain(f"{head.status}, {head.length} bytes, {head.coded or 'identity'}")
        return
    first, last = span
    if (head.status != 206 or head.coded or head.length != last - first + 1
            or " ".join(head.span.lower().split()) != f"bytes {first}-{last}/{size}"):
        raise NotPlain(f"{head.status}, {head.length} bytes, {head.coded or 'identity'}, for bytes {first}-{last}: "
                       f"{head.span or 'no Content-Range'}")


def _read_body(conn: PlainConnection, file: _File, ask_behind: Callable[[], None] | None, room: memoryview) -> None:
    """The body into ``file.out`` through the lane's ``room`` (a write each time it is full: a system call for
    256 KiB, not for each TLS record); ``ask_behind()`` once what is left would take about ``AHEAD_TRIPS`` round
    trips at the rate the last body came on this connection (or, on its first, this one over a round trip)."""
    out, held, told, kept = file.out, 0, 0, 0
    left = file.span[1] - file.span[0] + 1 if file.span else file.out.limit or 0
    began = time.monotonic()
    try:
        while left:
            if ask_behind is not None:
                spent = time.monotonic() - began
                coming = conn.rate or ((kept + held) / spent if spent >= conn.rtt else 0.0)
                if left <= max(AHEAD_LEAST, coming * conn.rtt * AHEAD_TRIPS):
                    ask_behind()
                    ask_behind = None
            got = conn.read_into(room[held:held + min(len(room) - held, left)])
            if not got:
                break
            left -= got
            held += got
            file.floor.feed(got)
            if held == len(room) or not left:
                file.keep(room[:held], kept)
                kept, held = kept + held, 0
            if out.written - told >= READ:
                told = out.written
                file.tell(told)
    except TimeoutError:
        raise stalled(file.url) from None
    except OSError as exc:  # reset, or shut by a cancel
        raise NotPlain(str(exc) or type(exc).__name__) from exc
    if left:
        raise NotPlain(f"ended after {kept + held} bytes")
    spent = time.monotonic() - began
    if spent > 0:
        conn.rate = kept / spent


def lean_for(ca_file: str | None, insecure: bool, proxy: str | None, limited: bool, stall_seconds: float,
             connect_seconds: float) -> LeanGetter | None:
    """The lean path for a list job, or None where it does not apply: TLS checks off (``--insecure``), a proxy
    (named or in the environment), a rate limit, or a CA file that cannot be read (the full client says so)."""
    context = lean_context(ca_file, insecure, proxy, limited)
    return LeanGetter(context, ca_file, stall_seconds, connect_seconds) if context is not None else None
