"""A TCP relay on 127.0.0.1 in front of a real server that drops chosen connections mid-conversation.

Every connection is passed through byte for byte, except that the first ``drops`` connections whose client
sends a line holding ``trigger`` are reset there (``SO_LINGER`` 0: the client reads "connection reset", as
from a server process killed mid-login). What it dropped is counted in ``dropped``. Each connection is
bounded in time, so a test that goes wrong still ends.
"""

from __future__ import annotations

import socket
import struct
import threading

from .nginx import free_port

#: one relayed connection may last this long at most
CONNECTION_SECONDS = 120.0
CHUNK = 64 * 1024
HEARD_MOST = 200


class DroppingRelay:
    def __init__(self, target_port: int, trigger: bytes, drops: int = 1, host: str = "127.0.0.1") -> None:
        self.target = (host, target_port)
        self.trigger, self.drops = trigger, drops
        self.port = free_port()
        self.dropped = 0
        self.relayed = 0
        #: what clients sent, the first chunks of each connection (for a failing case's message)
        self.heard: list[bytes] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, self.port))
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def start(self) -> DroppingRelay:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.target, timeout=10)
        except OSError:
            client.close()
            return
        with self._lock:
            self.relayed += 1
        for sock in (client, server):
            sock.settimeout(CONNECTION_SECONDS)
        threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()
        self._pipe(client, server, watch=True)

    def _pipe(self, src: socket.socket, dst: socket.socket, watch: bool = False) -> None:
        seen = b""
        try:
            while data := src.recv(CHUNK):
                if watch:
                    if len(self.heard) < HEARD_MOST:
                        self.heard.append(data[:200])
                    seen = (seen + data)[-1024:]
                    if self.trigger in seen and self._take_drop():
                        for sock in (src, dst):
                            _reset(sock)
                        return
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _take_drop(self) -> bool:
        with self._lock:
            if self.dropped >= self.drops:
                return False
            self.dropped += 1
            return True


def _reset(sock: socket.socket) -> None:
    """Close with a RST, not a FIN: what the peer of a killed process reads."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()
