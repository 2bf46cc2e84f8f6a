"""libtorrent sessions as Ferry uses them: open, add a torrent, dial named peers, read alerts, close.

libtorrent runs its own threads; its calls return at once, so they are made straight from
the engine's loop and the state is polled (five times a second) rather than waited on.
Closing a session waits for its disk threads, so that runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import libtorrent as lt

from ..core.errors import BadRequest, LocalError
from .address import Peer
from .faults import tls_reason
from .lab import LabOptions, settings


class Swarm:
    """One session (or several: a seed's extra listening ports) holding one torrent."""

    def __init__(self, options: LabOptions, sessions: int = 1) -> None:
        host, _, port = options.listen.rpartition(":")
        if not port.isdigit():
            raise BadRequest(f"'{options.listen}' is not a listening address; write it as ADDR:PORT.")
        if options.upload_limit:
            options = replace(options, upload_limit=max(1, options.upload_limit // sessions))  # shared by all
        self.first_port = int(port)  # 0: any free port
        self.sessions = []
        self.tls = options.tls
        for index in range(sessions):
            listen = f"{host}:{self.first_port + index if self.first_port else 0}{'s' if self.tls else ''}"
            self.sessions.append(lt.session(settings(options, listen=listen)))
        self.handles: list[lt.torrent_handle] = []
        self.identity = None  # this peer's certificate and key, for a TLS torrent (``tls.Identity``)
        self.refused: dict[str, str] = {}  # peer → why its TLS handshake failed (logged once each)

    def ports(self) -> list[int]:
        return [s.ssl_listen_port() if self.tls else s.listen_port() for s in self.sessions]

    async def listening(self) -> list[int]:
        """Wait for the listening sockets (opened on libtorrent's thread); a port in use fails in words."""
        wanted = [self.first_port + i for i in range(len(self.sessions))] if self.first_port else []
        for _ in range(40):
            ports = self.ports()
            if all(ports) and (not wanted or ports == wanted):
                return ports
            await asyncio.sleep(0.05)
        taken = [w for w, p in zip(wanted, self.ports(), strict=False) if w != p] or wanted
        raise LocalError(f"Could not listen on port {', '.join(map(str, taken))} (in use by another program?). "
                         "Choose another port with --listen.")

    def add(self, params: lt.add_torrent_params, save_path: Path, *, seed: bool = False) -> None:
        for index, session in enumerate(self.sessions):
            p = params if index == 0 else _copy_params(params)
            p.save_path = str(save_path)
            p.flags &= ~lt.torrent_flags.auto_managed
            p.flags &= ~lt.torrent_flags.paused
            if seed:
                p.flags |= lt.torrent_flags.seed_mode  # trust the data; each piece is checked when first sent
            handle = session.add_torrent(p)
            if self.identity is not None:
                from .tls import FFDHE2048

                handle.set_ssl_certificate_buffer(self.identity.cert.read_text(), self.identity.key.read_text(),
                                                  FFDHE2048)
            self.handles.append(handle)

    def dial(self, peers: list[Peer], per_peer: int) -> None:
        """Connect to each named peer's first ``per_peer`` ports (a seed's extra sessions listen on the next)."""
        for handle in self.handles:
            for peer in peers:
                for k in range(per_peer):
                    try:
                        handle.connect_peer((peer.host, peer.port + k))
                    except RuntimeError:
                        pass  # an unresolvable name: the stall check reports that no peer answered

    def alerts(self) -> list:
        found = []
        for session in self.sessions:
            found.extend(session.pop_alerts())
        return found

    def tls_refusal(self, alert) -> str | None:
        """A sentence for a peer whose TLS handshake failed (another CA's certificate, an expired one, none), the
        first time that peer is seen so; None for anything else. The transfer goes on with the other peers."""
        if not isinstance(alert, lt.peer_disconnected_alert):
            return None
        if not alert.error.category().name().startswith("asio.ssl"):
            return None  # asio.ssl: a handshake that failed; asio.ssl.stream: the peer hung up during it
        who = f"{alert.ip[0]}:{alert.ip[1]}" if isinstance(alert.ip, tuple) else str(alert.ip)
        why = alert.error.message()
        if self.refused.get(who) == why:
            return None
        self.refused[who] = why
        return f"TLS refused the connection with {who}: {tls_reason(why)} ({why})."

    async def close(self) -> None:
        sessions, self.sessions, self.handles = self.sessions, [], []

        def shut() -> None:
            for session in sessions:
                session.pause()
            sessions.clear()  # the last reference: the destructor waits for disk and network threads

        await asyncio.to_thread(shut)


def _copy_params(params: lt.add_torrent_params) -> lt.add_torrent_params:
    """The same torrent for another session (the bindings have no copy constructor)."""
    p = lt.add_torrent_params()
    p.ti = params.ti
    p.url_seeds = list(params.url_seeds)
    p.trackers = list(params.trackers)
    p.flags = params.flags
    return p


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
