"""A hostile FTP server: a real control socket on 127.0.0.1, written by hand, that lies about sizes, lists
hostile names and folders that lead back into themselves, trickles, and says its disk is full.

It speaks what Ferry's FTP client asks (FEAT, MLST/MLSD, SIZE, MDTM, EPSV/PASV, REST, RETR, STOR); its tree is
virtual (``HostileFtp.tree``): a path maps to a file's bytes, a callable that streams them, or a folder's
entries. Every stream is bounded in bytes and time, so a test that goes wrong still ends.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections import Counter
from collections.abc import Callable

MiB = 1024 * 1024
FLOOD_LIMIT = 256 * MiB
ANSWER_SECONDS = 120.0
STAMP = "20260901100000"

#: a folder: (name, kind) pairs; kind "file", "dir" or "link"
Folder = list[tuple[str, str]]
Streamer = Callable[[socket.socket, "Handler"], None]


class Handler(socketserver.StreamRequestHandler):
    server: HostileFtp
    timeout = ANSWER_SECONDS

    def reply(self, text: str) -> None:
        self.wfile.write((text + "\r\n").encode("utf-8", "surrogateescape"))
        self.wfile.flush()

    def handle(self) -> None:
        self.passive: socket.socket | None = None
        self.offset = 0
        self.reply("220 hostile ready")
        try:
            while line := self.rfile.readline(8192):
                verb, _, arg = line.decode("utf-8", "surrogateescape").rstrip("\r\n").partition(" ")
                if verb.upper() not in ("USER", "PASS", "REST", "OPTS", "TYPE") and arg and not arg.startswith("/"):
                    arg = "/" + arg  # relative to the login folder, which is /
                self.server.asked[(verb.upper(), arg)] += 1
                if not self.command(verb.upper(), arg):
                    return
        except OSError:
            return

    def command(self, verb: str, arg: str) -> bool:
        tree = self.server.tree
        if verb == "USER":
            self.reply("331 password please")
        elif verb == "PASS":
            self.reply("230 in")
        elif verb == "FEAT":
            self.reply("211-Features:\r\n MLST type*;size*;modify*;\r\n SIZE\r\n MDTM\r\n REST STREAM\r\n EPSV\r\n"
                       " UTF8\r\n211 End")
        elif verb in ("OPTS", "TYPE", "NOOP", "MODE", "STRU"):
            self.reply("200 ok")
        elif verb == "SYST":
            self.reply("215 UNIX Type: L8")
        elif verb == "PWD":
            self.reply('257 "/"')
        elif verb == "CWD":
            self.reply("250 ok" if isinstance(tree.get(arg.rstrip("/") or "/"), list) else "550 no")
        elif verb == "QUIT":
            self.reply("221 bye")
            return False
        elif verb == "EPSV":
            self.passive = self._listen()
            self.reply(f"229 Entering Extended Passive Mode (|||{self.passive.getsockname()[1]}|)")
        elif verb == "PASV":
            self.passive = self._listen()
            port = self.passive.getsockname()[1]
            self.reply(f"227 Entering Passive Mode (127,0,0,1,{port >> 8},{port & 255})")
        elif verb == "REST":
            self.offset = int(arg)
            self.reply("350 ok")
        elif verb in ("SIZE", "MDTM", "MLST"):
            self._fact(verb, arg)
        elif verb in ("MLSD", "LIST"):
            self._list(arg)
        elif verb == "RETR":
            self._retr(arg)
        elif verb in ("STOR", "APPE"):
            self._stor(arg)
        else:
            self.reply("502 not here")
        return True

    def _listen(self) -> socket.socket:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(30)
        return listener

    def _data(self) -> socket.socket:
        assert self.passive is not None
        conn, _ = self.passive.accept()
        self.passive.close()
        self.passive = None
        return conn

    def _fact(self, verb: str, path: str) -> None:
        node = self.server.tree.get(path.rstrip("/") or "/")
        if node is None:
            self.reply(f"550 {path}: no such file")
            return
        size = self.server.sizes.get(path, len(node) if isinstance(node, bytes) else 0)
        if verb == "SIZE":
            self.reply(f"213 {size}" if not isinstance(node, list) else "550 a folder")
        elif verb == "MDTM":
            self.reply(f"213 {STAMP}")
        else:
            kind = "dir" if isinstance(node, list) else "file"
            self.reply(f"250-Listing {path}\r\n type={kind};size={size};modify={STAMP}; {path}\r\n250 End")

    def _list(self, path: str) -> None:
        folder = self.server.tree.get(path.rstrip("/") or "/")
        if not isinstance(folder, list):
            self.reply("550 not a folder")
            return
        conn = self._data()
        self.reply("150 here it comes")
        lines = []
        for name, kind in folder:
            fetched_as = f"{path.rstrip('/')}/{name.rsplit('/', 1)[-1]}"  # a client keeps a listed name's last part
            child = self.server.tree.get(fetched_as)
            size = len(child) if isinstance(child, bytes) else self.server.sizes.get(fetched_as, 0)
            kind_fact = {"dir": "dir", "link": "OS.unix=symlink", "file": "file"}[kind]
            lines.append(f"type={kind_fact};size={size};modify={STAMP}; {name}\r\n")
        try:
            conn.sendall("".join(lines).encode("utf-8", "surrogateescape"))
        finally:
            conn.close()
        self.reply("226 done")

    def _retr(self, path: str) -> None:
        node = self.server.tree.get(path)
        if node is None or isinstance(node, list):
            self.reply(f"550 {path}: no such file")
            return
        conn = self._data()
        self.reply("150 sending")
        try:
            if callable(node):
                node(conn, self)
            else:
                conn.sendall(node[self.offset:])
                self.server.served[path] += len(node) - self.offset
        except OSError:
            pass
        finally:
            self.offset = 0
            conn.close()
        self.reply("226 done")

    def _stor(self, path: str) -> None:
        conn = self._data()
        self.reply("150 send it")
        got = 0
        try:
            while data := conn.recv(65536):
                got += len(data)
                if got > self.server.disk_left:
                    break
        finally:
            conn.close()
        if got > self.server.disk_left:
            self.reply("452 Insufficient storage space in system: disk full")
        else:
            self.reply("226 stored")


class HostileFtp(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.tree: dict[str, bytes | Folder | Streamer] = {"/": []}
        self.sizes: dict[str, int] = {}  # what SIZE and listings say, where it is not the bytes' own length
        self.asked: Counter = Counter()
        self.served: Counter = Counter()
        self.disk_left = 256 * 1024  # STOR past this many bytes: 452, disk full
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str) -> str:
        from urllib.parse import quote

        return f"ftp://127.0.0.1:{self.port}/{quote(path.lstrip('/'))}"

    def start(self) -> HostileFtp:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def flood(path: str, limit: int = FLOOD_LIMIT) -> Streamer:
    def send(conn: socket.socket, handler: Handler) -> None:
        chunk, sent, ends = b"\x5a" * 65536, 0, time.monotonic() + ANSWER_SECONDS
        while sent < limit and time.monotonic() < ends:
            conn.sendall(chunk)
            sent += len(chunk)
            handler.server.served[path] += len(chunk)
    return send


def trickle(path: str) -> Streamer:
    def send(conn: socket.socket, handler: Handler) -> None:
        ends = time.monotonic() + ANSWER_SECONDS
        while time.monotonic() < ends:
            conn.sendall(b"\x01")
            handler.server.served[path] += 1
            time.sleep(2.0)
    return send


def hostile(server: HostileFtp) -> HostileFtp:
    t, sizes = server.tree, server.sizes
    t["/"] = [("lies.bin", "file"), ("names", "dir"), ("loop", "dir"), ("deep", "dir"), ("trickle.bin", "file")]
    t["/lies.bin"], sizes["/lies.bin"] = flood("/lies.bin"), MiB  # SIZE says 1 MiB, RETR floods
    t["/trickle.bin"], sizes["/trickle.bin"] = trickle("/trickle.bin"), MiB
    t["/names"] = [("../../escaped.txt", "file"), ("what?.txt", "file"), ("CON", "file"), ("x:y.txt", "file"),
                   ("trailing.", "file"), ("sub", "dir"), ("ln", "link"), ("evil\rDELE /names/CON", "file")]
    t["/escaped.txt"] = b"outside the listed folder\n"  # where RETR /names/../../escaped.txt would lead
    for name, body in {"what?.txt": b"q\n", "CON": b"con\n", "x:y.txt": b"colon\n", "trailing.": b"dot\n"}.items():
        t[f"/names/{name}"] = body
    t["/names/sub"] = [("inner.txt", "file")]
    t["/names/sub/inner.txt"] = b"inner\n"
    # every folder below /loop lists the same two folders and one file: an aliased tree without end
    t["/loop"] = [("a", "dir"), ("b", "dir"), ("x.txt", "file")]
    t["/loop/x.txt"] = b"x\n"
    for prefix in ("/loop/a", "/loop/b"):
        t[prefix] = [("a", "dir"), ("b", "dir"), ("x.txt", "file")]
        t[prefix + "/x.txt"] = b"x\n"
    # each level holds one more folder and a file named after its depth: no two listings alike, no end
    path = "/deep"
    for depth in range(200):
        t[path] = [("down", "dir"), (f"level-{depth}.txt", "file")]
        t[f"{path}/level-{depth}.txt"] = b"."
        path += "/down"
    return server
