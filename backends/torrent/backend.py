"""BitTorrent (libtorrent): lab-to-lab swarms — fetch from named peers, seed, web seeds.

``labferry copy FILE.torrent|magnet:… DEST [--peer HOST:PORT …]`` fetches into the folder
DEST; ``labferry seed FILE.torrent --data PATH`` serves. Lab defaults and the tuning for
fat pipes are in ``lab.py``; why a seed listens on several ports is explained there and in
docs/backends/torrent.md.
"""

from __future__ import annotations

from pathlib import Path

from ..core.base import Availability, Capabilities, RemoteInfo, Result, Sink, TransferOptions, TransferRequest
from ..core.errors import BadRequest, TransferError
from ..core.options import read_options
from .address import is_torrent
from .options import TorrentOptions

SCHEMES = ("magnet",)
#: connections a fetcher opens to each named peer (ports PORT … PORT+K-1), unless told otherwise
DEFAULT_CONNECTIONS = 8


class TorrentBackend:
    name = "torrent"
    schemes = SCHEMES
    caps = Capabilities(streams=True, resume=True, download=True, folders=True, checksums=("sha256",))
    options_type = TorrentOptions

    def available(self) -> Availability:
        try:
            import libtorrent  # noqa: F401
        except ImportError:
            return Availability(False, "BitTorrent needs libtorrent, which is not installed here; add it with "
                                       "pip install 'labferry[torrent]' (or apt install python3-libtorrent).")
        return Availability(True)

    def claims(self, source: str, dest: str) -> bool:
        """A local .torrent file as the source is this backend's (the registry asks when no URL scheme says)."""
        return is_torrent(source)

    def check(self, request: TransferRequest) -> None:
        if not is_torrent(request.source):
            raise BadRequest("Give a .torrent file or a magnet: link to fetch with BitTorrent.")
        if "://" in request.dest:
            raise BadRequest("BitTorrent fetches to a local folder; give a folder as the destination.")
        from .address import Peer, load_torrent

        load_torrent(request.source)
        extra = read_options(TorrentOptions, request.options.backend_options)
        for peer in extra.peers:
            Peer.parse(peer)
        if request.source.startswith("magnet:") and not extra.peers and not extra.discovery:
            raise BadRequest("A magnet link needs somewhere to get the torrent from: name a peer with --peer "
                             "HOST:PORT, or allow DHT and trackers with --discovery.")

    def discard(self, request: TransferRequest) -> None:
        """A cancelled fetch leaves nothing: its part folder (below DEST, its own) and its resume state go."""
        import shutil

        from .address import info_hash, load_torrent
        from .download import part_folder

        try:
            key = info_hash(load_torrent(request.source))
        except TransferError:
            return
        shutil.rmtree(part_folder(Path(request.dest), key), ignore_errors=True)
        (request.state_folder("torrents") / f"{key}.fastresume").unlink(missing_ok=True)

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        from .address import load_torrent

        params = load_torrent(url)
        size = params.ti.total_size() if params.ti is not None else None
        return RemoteInfo(url, size, is_dir=params.ti is not None and params.ti.num_files() > 1)

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        from .address import Peer, load_torrent
        from .swarm import Swarm

        self.check(request)
        extra = read_options(TorrentOptions, request.options.backend_options)
        if extra.seed:
            return await self.seed(request, sink)
        params = load_torrent(request.source)
        lab = _lab_options(extra, default_listen="0.0.0.0:0", download_limit=request.options.rate_cap or 0,
                           tls=_is_tls(params))
        from .download import fetch

        for url in extra.web_seeds:
            params.url_seeds = [*params.url_seeds, url]
        streams = request.options.streams
        per_peer = extra.connections or (streams if isinstance(streams, int) else DEFAULT_CONNECTIONS)
        peers = [Peer.parse(p) for p in extra.peers]
        # one named peer (a seed's sessions) and no discovery: pieces can come in order, the sha256 right behind;
        # in a swarm, rarest-first keeps the pieces the fetchers trade different
        sequential = len(peers) == 1 and not lab.discovery
        swarm = Swarm(lab)
        swarm.identity = _identity(extra, request, params) if lab.tls else None
        try:
            return await fetch(params, Path(request.dest), swarm, peers, per_peer, request.state_folder("torrents"),
                               sink, extra.stall_seconds, sequential=sequential,
                               replace_existing=bool(request.options.overwrite or request.options.sync))
        finally:
            await swarm.close()

    async def seed(self, request: TransferRequest, sink: Sink) -> Result:
        """Serve the torrent's data from ``request.dest`` until the job is stopped (``labferry seed``)."""
        from .address import load_torrent
        from .seed import seed
        from .swarm import Swarm

        extra = read_options(TorrentOptions, request.options.backend_options)
        params = load_torrent(request.source)
        lab = _lab_options(extra, default_listen="0.0.0.0:0", download_limit=request.options.rate_cap or 0,
                           tls=_is_tls(params))
        swarm = Swarm(lab, sessions=extra.connections or DEFAULT_CONNECTIONS)
        swarm.identity = _identity(extra, request, params) if lab.tls else None
        try:
            return await seed(params, Path(request.dest), swarm, sink)
        finally:
            await swarm.close()


def _lab_options(extra: TorrentOptions, default_listen: str, download_limit: int = 0, tls: bool = False):
    """``download_limit``: ``--limit-rate`` (the GUI's bandwidth cap), kept by libtorrent for the whole session.
    A TLS torrent's connections are TLS already: no RC4 inside them."""
    from .lab import LabOptions

    return LabOptions(listen=extra.listen or default_listen, discovery=extra.discovery,
                      encryption="off" if tls else extra.encryption, upload_limit=extra.upload_limit,
                      download_limit=int(download_limit), tls=tls)


def _is_tls(params) -> bool:
    return params.ti is not None and bool(params.ti.ssl_cert())


def _identity(extra: TorrentOptions, request: TransferRequest, params):
    """This peer's certificate for a TLS torrent: the one given, else Ferry's own (where it made the lab CA); a
    certificate its peers would refuse is said here, in words, instead of as TLS alerts from every peer."""
    from .tls import Identity, existing_identity, problem_with

    if bool(extra.tls_cert) != bool(extra.tls_key):
        raise BadRequest("Give both --tls-cert and --tls-key (the certificate and its key).")
    if extra.tls_cert:
        identity = Identity(Path(extra.tls_cert).expanduser(), Path(extra.tls_key).expanduser())
    else:
        identity = existing_identity(request.state_folder("tls"))
        if identity is None:
            raise BadRequest(f"{params.ti.name()} is a TLS torrent: its peers accept only certificates from its lab "
                             "CA. Give this peer's with --tls-cert and --tls-key (made with labferry torrent cert "
                             "where the CA is).")
    problem = problem_with(identity, params.ti.ssl_cert(), params.ti.name())
    if problem:
        raise BadRequest(problem)
    return identity
