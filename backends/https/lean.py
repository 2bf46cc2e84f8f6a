"""Small files of a list over the standard library's ``http.client``, one call on a worker thread each.

A study of a thousand small runs is mostly per-file work. On the event loop, aiohttp's request set-up and
its proxy and netrc lookups (two hand-overs to threads a request) came on top of making, writing and reading
back each part file. Here one call on a worker thread asks for the file, writes ``NAME.part`` through
``WholeFile``, and reads it back and hashes it. The event loop only hands the file over and takes the digests;
the two cores decrypt at once. And a list of small files imports no aiohttp at all: ~0.13 s of one core
before the first request.

Only the plain case is taken: a 200 whose Content-Length is the size the catalogue published, no
Content-Encoding, over a direct connection (no proxy, no login, no rate limit: ``lean_for``). Anything else
raises ``NotPlain`` before a byte is kept, and the file goes to the full client (``folder.py``). That client
follows redirects, inflates, and words every server's failure, so the errors a user reads stay one set. Raised
here as they are: a stall (``RateFloor``, the socket's timeout), more bytes than promised (``WholeFile``), and
the destination's own errors (a full disk).
"""

from __future__ import annotations

import asyncio
import http.client
import queue
import socket
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import Future
from urllib.parse import urlsplit

from ..core.errors import Transient
from ..core.netrc import netrc_login
from ..destination import WholeFile
from ..streams.floor import RateFloor
from ..streams.hashing import read_back
from .address import environment_names_a_proxy
from .options import USER_AGENT

#: a body is read, and its progress told, this much at a time
READ = 512 * 1024
HEADERS = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", "Accept": "*/*"}


class NotPlain(Exception):
    """Not the plain case: the file goes to the full client, which follows or words what happened."""


class _Call:
    """One file's request, so that a cancel can end it at once: before its body is being written the thread is
    left to give up on its own (it writes nothing then); once writing, its socket is shut, which ends the read."""

    def __init__(self) -> None:
        self.conn: http.client.HTTPConnection | None = None
        self.aborted = self.writing = False
        self._lock = threading.Lock()

    def start_writing(self) -> None:
        """Called on the thread before the first byte is kept; ``NotPlain`` when the file was given up."""
        with self._lock:
            if self.aborted:
                raise NotPlain("cancelled")
            self.writing = True

    def abort(self) -> bool:
        """Give the file up; True when its thread is writing it (wait for that: it ends at once)."""
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


class _Threads:
    """Daemon worker threads: a connect to a host that never answers (up to the connect timeout) neither holds a
    cancel nor the end of the process (``ThreadPoolExecutor``'s threads are joined at exit)."""

    def __init__(self, count: int) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._count, self._started = count, 0

    def submit(self, work: Callable, *args) -> Future:
        done: Future = Future()
        self._jobs.put((done, work, args))
        if self._started < self._count:
            self._started += 1
            threading.Thread(target=self._run, name=f"ferry-get-{self._started}", daemon=True).start()
        return done

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            done, work, args = job
            if not done.set_running_or_notify_cancel():
                continue
            try:
                done.set_result(work(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                done.set_exception(exc)

    def close(self) -> None:
        for _ in range(self._started):
            self._jobs.put(None)


class LeanGetter:
    """Worker threads and their kept-alive connections, for one list job; ``close`` when it ends."""

    def __init__(self, context: ssl.SSLContext, workers: int, stall_seconds: float, connect_seconds: float) -> None:
        self.context, self.stall, self.connect = context, stall_seconds, connect_seconds
        self._idle: dict[tuple, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._threads = _Threads(max(1, workers))
        self._logins: dict[str, bool] = {}

    def takes(self, address: str, size: int | None) -> bool:
        """Whether ``address`` is for this path: http(s), a size known, no login in it or in ~/.netrc."""
        parts = urlsplit(address)
        if size is None or parts.scheme not in ("http", "https") or parts.username or not parts.hostname:
            return False
        host = parts.hostname
        if host not in self._logins:
            self._logins[host] = netrc_login(host) is not None
        return not self._logins[host]

    async def fetch(self, url: str, out: WholeFile, algorithms: tuple[str, ...], floor: RateFloor,
                    told: Callable[[int], None]) -> dict[str, str]:
        """``url``'s body into ``out``, read back and hashed: its digests. ``told(bytes)`` runs on the event loop
        every ``READ`` bytes. A cancel shuts the socket and waits for the thread, so ``out`` is never closed or
        removed under it."""
        loop = asyncio.get_running_loop()
        call = _Call()

        def tell(written: int) -> None:
            loop.call_soon_threadsafe(told, written)

        running = asyncio.wrap_future(self._threads.submit(self._fetch, call, url, out, algorithms, floor, tell))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            if call.abort():
                await asyncio.wait([running])
                if not running.cancelled():
                    running.exception()  # seen: the cancel is what the caller hears
            else:
                running.cancel()
            raise

    def close(self) -> None:
        self._threads.close()
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def _fetch(self, call: _Call, url: str, out: WholeFile, algorithms: tuple[str, ...], floor: RateFloor,
               tell: Callable[[int], None]) -> dict[str, str]:
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname, parts.port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        conn, resp = self._ask(call, key, target)
        try:
            _check_head(resp, out)
            call.start_writing()
            _read(resp, out, floor, tell, url)
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            with self._lock:
                self._idle.setdefault(key, []).append(conn)
        out.flush()
        return read_back(out.part, algorithms)

    def _ask(self, call: _Call, key: tuple, target: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """The connection and the answer's head; a kept-alive connection the server closed meanwhile is
        replaced once by a new one."""
        for _ in range(2):
            conn, reused = self._connection(key)
            call.conn = conn
            try:
                conn.request("GET", target, headers=HEADERS)
                return conn, conn.getresponse()
            except TimeoutError:
                conn.close()
                raise _stalled(key[1]) from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if not reused or call.aborted:
                    raise NotPlain(str(exc)) from exc
        raise NotPlain("the server closed two connections in a row")

    def _connection(self, key: tuple) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop(), True
        scheme, host, port = key
        if scheme == "https":
            conn = http.client.HTTPSConnection(host, port or 443, timeout=self.connect, context=self.context)
        else:
            conn = http.client.HTTPConnection(host, port or 80, timeout=self.connect)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:  # refused, unknown host, TLS: the full client words it
            conn.close()
            raise NotPlain(str(exc)) from exc
        conn.sock.settimeout(self.stall)
        return conn, False


def _check_head(resp: http.client.HTTPResponse, out: WholeFile) -> None:
    """Only a 200 of exactly the promised size, as it is (not compressed), is the plain case."""
    encoding = (resp.getheader("Content-Encoding") or "identity").strip().lower()
    if resp.status != 200 or encoding != "identity" or resp.length is None or resp.length != out.limit:
        raise NotPlain(f"{resp.status}, {resp.length} bytes, {encoding}")


def _read(resp: http.client.HTTPResponse, out: WholeFile, floor: RateFloor, tell: Callable[[int], None],
          url: str) -> None:
    """The body into ``out``, every byte of it."""
    told = 0
    try:
        while resp.length:
            data = resp.read(min(READ, resp.length))
            if not data:
                break
            floor.feed(len(data))
            out.write(data)
            if out.written - told >= READ:
                told = out.written
                tell(told)
    except TimeoutError:
        raise _stalled(urlsplit(url).hostname) from None
    except (OSError, http.client.HTTPException) as exc:  # reset, or ended short (IncompleteRead)
        raise NotPlain(str(exc)) from exc
    if out.written != out.limit:
        raise NotPlain(f"ended after {out.written} bytes")


def _stalled(host: str | None) -> Transient:
    return Transient(f"{host} sent no data for longer than the stall timeout (--stall-timeout); Ferry will retry.")


def lean_for(ca_file: str | None, insecure: bool, proxy: str | None, limited: bool, workers: int,
             stall_seconds: float, connect_seconds: float) -> LeanGetter | None:
    """The lean path for a list job, or None where it does not apply: TLS checks off (``--insecure``), a proxy
    (named or in the environment), a rate limit, or a CA file that cannot be read (the full client says so)."""
    if insecure or proxy or limited or environment_names_a_proxy():
        return None
    from .trust import verified_context

    try:
        context = verified_context(ca_file)
    except (OSError, ssl.SSLError):
        return None
    context.set_alpn_protocols(["http/1.1"])
    return LeanGetter(context, workers, stall_seconds, connect_seconds)
