"""The BitTorrent backend's own options, declared for the front door (``backends.core.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.options import option


@dataclass(frozen=True)
class TorrentOptions:
    peers: list[str] = option([], "a peer to dial directly (repeat for several); no tracker or DHT needed",
                              flag="--peer", metavar="HOST:PORT")
    connections: int | None = option(None, "TCP connections per named peer: ports PORT … PORT+K-1 (a seed's extra "
                                           "sessions; default 8)", flag="--connections", metavar="K")
    listen: str | None = option(None, "where to accept other peers (default: any, a free port)", flag="--listen",
                                metavar="ADDR:PORT")
    web_seeds: list[str] = option([], "an http(s) server holding the same data", flag="--web-seed", metavar="URL")
    discovery: bool = option(False, "also use trackers, DHT and local discovery", flag="--discovery")
    encryption: Literal["required", "preferred", "off"] = option(
        "required", "peer connection encryption (default required: plaintext peers are refused)",
        flag="--encryption")
    stall_seconds: float = option(60.0, "a stream or torrent that gets no data for this long is a fault (default 60)",
                                  flag="--stall-timeout", metavar="SECONDS")
    upload_limit: int = option(0, "cap what this peer serves to others (50M, 400Mbit)", flag="--upload-limit",
                               metavar="RATE", rate=True)
    seed: bool = option(False, "serve the data instead of fetching it (labferry seed)")
    tls_cert: str | None = option(None, "a TLS torrent: this peer's certificate from the torrent's lab CA (default: "
                                        "Ferry's own, where it made the CA)", flag="--tls-cert", metavar="FILE.pem")
    tls_key: str | None = option(None, "a TLS torrent: the key of --tls-cert", flag="--tls-key", metavar="FILE.key")
