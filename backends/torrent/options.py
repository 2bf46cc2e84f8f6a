"""The BitTorrent backend's own options, declared for the front door (``backends.core.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.options import option


@dataclass(frozen=True)
class TorrentOptions:
    peers: list[str] = option([], "peers to fetch from, HOST:PORT (no tracker needed)", flag="--peer")
    connections: int | None = option(None, "connections to each peer (ports PORT … PORT+N-1)", flag="--connections")
    listen: str | None = option(None, "address and first port to listen on, HOST:PORT", flag="--listen")
    web_seeds: list[str] = option([], "http(s) URLs serving the same data", flag="--web-seed")
    discovery: bool = option(False, "also find peers through trackers and the DHT", flag="--discovery")
    encryption: Literal["required", "preferred", "off"] = option(
        "required", "peer connection encryption (required: plaintext peers are refused)", flag="--encryption")
    stall_seconds: float = option(60.0, "give up when no data arrives for this long", flag="--stall-timeout")
    upload_limit: int = option(0, "cap what this computer sends, bytes per second (0: none)", flag="--upload-limit")
    seed: bool = option(False, "serve the data instead of fetching it (labferry seed)")
