"""libtorrent sessions as Ferry uses them: open, add a torrent, dial named peers, read alerts, close.

libtorrent runs its own threads; its calls return at once, so they are made straight from
the engine's loop and the state is polled (five times a second) rather than waited on.
Closing a session waits for its disk threads, so that runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import libtorrent as lt

from ..core.errors import BadRequest, LocalError
from .lab import LabOptions, settings

_PEER = re.compile(r"^\[?([^\]\s]+?)\]?:(\d{1,5})$")


@dataclass(frozen=True)
class Peer:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Peer:
        m = _PEER.match(text.strip())
        if not m or not 0 < int(m.group(2)) < 65536:
            raise BadRequest(f"'{text}' is not a peer address; write it as HOST:PORT (for example dtn.lab.org:6881).")
        return cls(m.group(1), int(m.group(2)))


def load_torrent(source: str) -> lt.add_torrent_params:
    """A .torrent file or a magnet link as libtorrent's add parameters; bad input in one sentence."""
    if source.startswith("magnet:"):
        try:
            params = lt.parse_magnet_uri(source)
        except RuntimeError as exc:
            raise BadRequest(f"That magnet link is not valid ({exc}). Copy it again from its source.") from None
        if not params.info_hashes.has_v1() and not params.info_hashes.has_v2():
            raise BadRequest("That magnet link names no torrent (no xt=urn:btih or urn:btmh). Copy it again.")
        return params
    path = Path(source).expanduser()
    if not path.is_file():
        raise LocalError(f"{path} does not exist. Check the path of the .torrent file.")
    try:
        info = lt.torrent_info(str(path))
    except RuntimeError as exc:
        raise BadRequest(f"{path.name} is not a valid .torrent file ({exc}). Ask its sender for a fresh copy.") \
            from None
    params = lt.add_torrent_params()
    params.ti = info
    return params


def info_hash(params: lt.add_torrent_params) -> str:
    hashes = params.ti.info_hashes() if params.ti is not None else params.info_hashes
    return str(hashes.v2 if hashes.has_v2() else hashes.v1)


class DataFile(NamedTuple):
    path: str  # relative to the save path, the torrent's name first
    offset: int  # where the file starts in the torrent's byte stream (pads included)
    size: int


def layout_of(info: lt.torrent_info):
    return info.layout() if hasattr(info, "layout") else info.files()  # files() is deprecated in libtorrent 2.1


def data_files(info: lt.torrent_info) -> list[DataFile]:
    """A torrent's files without v2's pad files (they only align each file to a piece) and without its links
    (``links``: Ferry makes none below DEST)."""
    files = layout_of(info)
    skip = lt.file_storage.flag_pad_file | lt.file_storage.flag_symlink
    return [DataFile(files.file_path(i), files.file_offset(i), files.file_size(i)) for i in range(files.num_files())
            if not files.file_flags(i) & skip]


def links(info: lt.torrent_info) -> list[tuple[str, str]]:
    """The links a torrent names (``symlink`` attribute): (its path, where it points), for the note that says
    they were not made. libtorrent makes them in the part folder; they go with it."""
    files = layout_of(info)
    return [(files.file_path(i), files.symlink(i)) for i in range(files.num_files())
            if files.file_flags(i) & lt.file_storage.flag_symlink]


def marked_executable(info: lt.torrent_info) -> set[str]:
    """The files a torrent marks executable (``x`` attribute). libtorrent makes them runnable; Ferry saves a
    stranger's files as data, as browsers and curl do, and says which marks it did not keep."""
    files = layout_of(info)
    return {files.file_path(i) for i in range(files.num_files())
            if files.file_flags(i) & lt.file_storage.flag_executable
            and not files.file_flags(i) & lt.file_storage.flag_symlink}


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
        return f"TLS refused the connection with {who}: {_tls_reason(why)} ({why})."

    async def close(self) -> None:
        sessions, self.sessions, self.handles = self.sessions, [], []

        def shut() -> None:
            for session in sessions:
                session.pause()
            sessions.clear()  # the last reference: the destructor waits for disk and network threads

        await asyncio.to_thread(shut)


def _tls_reason(message: str) -> str:
    """What a TLS handshake's failure means for a lab peer, in words."""
    low = message.lower()
    if "verify failed" in low or "evp lib" in low:  # EVP: signed by another CA of the same name
        return "its certificate is not from this torrent's lab CA, or has expired"
    if "truncated" in low:
        return "it hung up during the handshake (a plaintext or RC4 peer, or one that refused this certificate)"
    if "unknown ca" in low or "certificate" in low:
        return "it refused this peer's certificate"
    return "the handshake failed"


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
