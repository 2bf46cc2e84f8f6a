"""A hostile web server: a real socket on 127.0.0.1 that lies, inflates, loops, floods and trickles on purpose.

Each path is one misbehaviour a server a researcher was told to download from could show, written by hand on
the socket (no HTTP library would send most of them). Every loop here is bounded in bytes and time, so a test
that goes wrong ends on its own. ``served`` counts the body bytes each path sent, for tests that assert a
client stopped early.
"""

from __future__ import annotations

import gzip
import socketserver
import threading
import time
import zlib
from collections import Counter
from urllib.parse import quote, unquote

MiB = 1024 * 1024
#: the most a flooding path sends before it gives up on its own (the client should stop long before)
FLOOD_LIMIT = 512 * MiB
#: files in the one folder of /wide/
WIDE = 5_000
#: the most seconds a trickling or flooding answer lasts
ANSWER_SECONDS = 120.0

LISTING = ("<html><head><title>Index of {path}</title></head><body><h1>Index of {path}</h1><pre>\n{links}</pre>"
           "</body></html>")


def listing(path: str, hrefs: list[str]) -> bytes:
    links = "\n".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    return LISTING.format(path=path, links=links).encode()


def _bomb(decoded: int) -> bytes:
    """``decoded`` zero bytes, gzip-compressed (about 1/1000 of it)."""
    out = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(MiB)
    parts = [out.compress(block) for _ in range(decoded // MiB)]
    return b"".join(parts) + out.flush()


class Handler(socketserver.BaseRequestHandler):
    server: HostileServer

    def setup(self) -> None:
        self.request.settimeout(ANSWER_SECONDS)
        self.file = self.request.makefile("rb")

    def handle(self) -> None:
        try:
            while self._one():
                pass
        except (OSError, ValueError):
            pass

    def _one(self) -> bool:
        line = self.file.readline(65536)
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        for _ in range(100):
            h = self.file.readline(65536)
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        path = unquote(target.split("?", 1)[0])
        self.server.asked[(method, path)] += 1
        self.method, self.path, self.headers = method, path, headers
        answer = self.server.routes.get(path) or self._prefix_route(path)
        if answer is None:
            self._send(404, b"not here", {"Content-Type": "text/plain"})
            return True
        return answer(self) is not False

    def _prefix_route(self, path: str):
        for prefix, answer in self.server.prefixes.items():
            if path.startswith(prefix):
                return answer
        return None

    # -- helpers --------------------------------------------------------------------------------
    def head_line(self, status: int, headers: dict[str, str], *, length: int | None) -> None:
        lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        self.request.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.head_line(status, headers, length=len(body))
        if self.method != "HEAD":
            self.request.sendall(body)
            self.server.served[self.path] += len(body)

    def send_body(self, body: bytes, headers: dict[str, str] | None = None, status: int = 200) -> None:
        self._send(status, body, {"Content-Type": "application/octet-stream", **(headers or {})})

    def flood(self, chunk: bytes, *, limit: int = FLOOD_LIMIT, pause: float = 0.0) -> bool:
        """Body bytes until the client goes or ``limit``/``ANSWER_SECONDS`` is reached; False: the client went."""
        sent, ends = 0, time.monotonic() + ANSWER_SECONDS
        while sent < limit and time.monotonic() < ends:
            try:
                self.request.sendall(chunk)
            except OSError:
                return False
            sent += len(chunk)
            self.server.served[self.path] += len(chunk)
            if pause:
                time.sleep(pause)
        return False


class HostileServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.routes: dict = {}
        self.prefixes: dict = {}
        self.asked: Counter = Counter()
        self.served: Counter = Counter()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{quote(path)}"

    def start(self) -> HostileServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


# -- the misbehaviours ------------------------------------------------------------------------------
def lies_about_size(h: Handler):
    """HEAD says 1 MiB; the GET has no length and sends until the client stops it (or 512 MiB)."""
    if h.method == "HEAD":
        h.head_line(200, {"Content-Type": "application/octet-stream"}, length=MiB)
        return True
    h.head_line(200, {"Content-Type": "application/octet-stream", "Connection": "close"}, length=None)
    return h.flood(b"\x5a" * 65536)


def chunked_lie(h: Handler):
    """HEAD says 1 MiB and no ranges; the GET is chunked and endless."""
    if h.method == "HEAD":
        h.head_line(200, {"Content-Type": "application/octet-stream"}, length=MiB)
        return True
    h.head_line(200, {"Content-Type": "application/octet-stream", "Transfer-Encoding": "chunked"}, length=None)
    chunk = b"\x5a" * 65536
    return h.flood(b"%x\r\n" % len(chunk) + chunk + b"\r\n")


BOMB_DECODED = 2048 * MiB
_bomb_body: list[bytes] = []


def gzip_bomb(h: Handler):
    """A 'FASTQ' the server gzips unasked: ~2 MiB on the wire that would inflate to 2 GiB of zeros."""
    if not _bomb_body:
        _bomb_body.append(_bomb(BOMB_DECODED))
    body = _bomb_body[0]
    headers = {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}
    if h.method == "HEAD":
        h.head_line(200, headers, length=len(body))
        return True
    h.send_body(body, headers)
    return True


def small_gzip(h: Handler):
    """An honest body the server gzipped unasked: 4 MiB of text, about 40:1."""
    text = b"".join(b"@read%06d\nACGTACGTACGTNNNNACGT\n+\nFFFFFFFFFFFFFFFFFFFF\n" % i for i in range(75000))
    body = gzip.compress(text[:4 * MiB])
    headers = {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"}
    if h.method == "HEAD":
        h.head_line(200, headers, length=len(body))
        return True
    h.send_body(body, headers)
    return True


def trickle(h: Handler):
    """A byte a second: never silent for long, never useful (a stall by rate, not by silence). Half the tests'
    2 s stall timeout: a byte every 2 s raced the read timeout, and a busy machine made it a silence."""
    if h.method == "HEAD":
        h.head_line(200, {"Content-Type": "application/octet-stream"}, length=MiB)
        return True
    h.head_line(200, {"Content-Type": "application/octet-stream", "Connection": "close"}, length=MiB)
    return h.flood(b"\x01", limit=MiB, pause=1.0)


def header_flood(h: Handler):
    """An endless header block: 'X-Pad: …' lines until the client hangs up."""
    try:
        h.request.sendall(b"HTTP/1.1 200 OK\r\n")
        for _ in range(200_000):
            h.request.sendall(b"X-Pad: " + b"p" * 1000 + b"\r\n")
            h.server.served[h.path] += 1009
    except OSError:
        pass
    return False


def long_header_line(h: Handler):
    """One header line of 4 MiB."""
    try:
        h.request.sendall(b"HTTP/1.1 200 OK\r\nX-Long: " + b"L" * (4 * MiB) + b"\r\n\r\n")
    except OSError:
        pass
    return False


def redirect_to(location: str):
    def answer(h: Handler):
        h._send(302, b"", {"Location": location})
        return True
    return answer


def sign_in_page(h: Handler):
    """A login page where a file was asked for."""
    page = b"<html><head><title>Sign in</title></head><body><form>user <input name=u></form></body></html>"
    h._send(200, page, {"Content-Type": "text/html; charset=utf-8"})
    return True


def named(disposition: str, body: bytes = b"payload\n"):
    """A file whose Content-Disposition names it ``disposition`` (a hostile name)."""
    def answer(h: Handler):
        h._send(200, body, {"Content-Type": "application/octet-stream",
                            "Content-Disposition": disposition})
        return True
    return answer


def folder_of(hrefs: list[str]):
    def answer(h: Handler):
        h._send(200, listing(h.path, hrefs), {"Content-Type": "text/html"})
        return True
    return answer


def file_of(body: bytes):
    def answer(h: Handler):
        h._send(200, body, {"Content-Type": "application/octet-stream", "Last-Modified":
                            "Tue, 01 Sep 2026 10:00:00 GMT"})
        return True
    return answer


def echo_folder(h: Handler):
    """Every folder below /loop/ lists the same two sub-folders and one file: an aliased tree without end."""
    h._send(200, listing(h.path, ["a/", "b/", "x.txt"]), {"Content-Type": "text/html"})
    return True


def loop_file(h: Handler):
    h._send(200, b"x\n", {"Content-Type": "application/octet-stream"})
    return True


def loop_route(h: Handler):
    return (loop_file if h.path.endswith(".txt") else echo_folder)(h)


def slow_folder(h: Handler):
    """A listing that takes 2 s a page, each level one folder deeper and one file named after its depth: a walk
    that is still going when a user presses Ctrl-C."""
    if not h.path.endswith("/"):
        h._send(200, b"s\n", {"Content-Type": "application/octet-stream"})
        return True
    time.sleep(2.0)
    depth = h.path.count("/")
    h._send(200, listing(h.path, ["d/", f"level-{depth}.txt"]), {"Content-Type": "text/html"})
    return True


def wide_folder(count: int):
    """One folder of ``count`` tiny files (a listing beyond any sane bound)."""
    def answer(h: Handler):
        if h.path.endswith("/"):
            h._send(200, listing(h.path, [f"f{i:07d}" for i in range(count)]), {"Content-Type": "text/html"})
        else:
            h._send(200, b"", {"Content-Type": "application/octet-stream"})
        return True
    return answer


def range_overflow(h: Handler):
    """Honest about the size (4 MiB, ranges), but each 206 carries 1 MiB more than its Content-Range."""
    size = 4 * MiB
    headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes", "ETag": '"r1"'}
    if h.method == "HEAD":
        h.head_line(200, headers, length=size)
        return True
    wanted = h.headers.get("range", "")
    if not wanted.startswith("bytes="):
        h.send_body(b"\x33" * size, headers)
        return True
    first, _, last = wanted[6:].partition("-")
    first = int(first)
    last = min(int(last) if last else size - 1, size - 1)
    body = b"\x33" * (last - first + 1 + MiB)
    h.head_line(206, {**headers, "Content-Range": f"bytes {first}-{last}/{size}", "Connection": "close"},
                length=None)
    try:
        h.request.sendall(body)
        h.server.served[h.path] += len(body)
    except OSError:
        pass
    return False


def hostile(server: HostileServer) -> HostileServer:
    """Every route of this module on ``server``."""
    r = server.routes
    r["/lies.bin"] = lies_about_size
    r["/chunked-lie.bin"] = chunked_lie
    r["/bomb.fastq"] = gzip_bomb
    r["/small-gzip.fastq"] = small_gzip
    r["/trickle.bin"] = trickle
    r["/header-flood.bin"] = header_flood
    r["/long-header.bin"] = long_header_line
    r["/to-file.bin"] = redirect_to("file:///etc/passwd")
    r["/to-ftp.bin"] = redirect_to(f"ftp://127.0.0.1:{server.port}/x.bin")
    r["/to-data.bin"] = redirect_to("data:text/plain,owned")
    r["/sign-in.bin"] = sign_in_page
    r["/range-overflow.bin"] = range_overflow
    for key, disposition in {
        "dotdot": 'attachment; filename="../../escaped.txt"',
        "absolute": 'attachment; filename="/tmp/absolute.txt"',
        "star": "attachment; filename*=UTF-8''..%2F..%2Fstar.txt",
        "backslash": "attachment; filename*=UTF-8''..%5C..%5Cback.txt",
        "con": 'attachment; filename="CON"',
        "aux": 'attachment; filename="aux.txt"',
        "colon": 'attachment; filename="C:evil.txt"',
        "question": 'attachment; filename="what?.txt"',
        "trailing": 'attachment; filename="trailing. "',
        "crlf": 'attachment; filename="a\\r\\nb.txt"',
    }.items():
        r[f"/named/{key}"] = named(disposition)
    server.prefixes["/loop/"] = loop_route
    r["/names/"] = folder_of(["..%2F..%2Fescaped.txt", "%2e%2e/", "back%5Cslash.txt", "CON", "aux.txt",
                              "what%3F.txt", "x%3Ay.txt", "trailing.", "A.txt", "a.txt", "sub/", "nul%00.txt"])
    for name, body in {"back\\slash.txt": b"bs\n", "CON": b"con\n", "aux.txt": b"aux\n", "what?.txt": b"q\n",
                       "x:y.txt": b"colon\n", "trailing.": b"dot\n", "A.txt": b"upper\n", "a.txt": b"lower\n",
                       "../../escaped.txt": b"escaped\n", "nul\0.txt": b"nul\n"}.items():
        r[f"/names/{name}"] = file_of(body)
    r["/names/sub/"] = folder_of(["inner.txt"])
    r["/names/sub/inner.txt"] = file_of(b"inner\n")
    server.prefixes["/wide/"] = wide_folder(WIDE)
    server.prefixes["/slow/"] = slow_folder
    return server
