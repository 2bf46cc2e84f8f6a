"""The GridFTP backend's own options, declared for the front door (``backends.core.options``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.options import option


@dataclass(frozen=True)
class GridftpOptions:
    streams: int | None = option(None, "parallel streams a preflight recommended for this site (-p)")
    tcp_bs: int | None = option(None, "TCP buffer per stream in bytes (-tcp-bs), from a preflight or IT")
    bottleneck_bps: int | None = option(None, "the path's narrowest link in bits per second, when known")
    #: globus-url-copy restarts on any failure, a refused permission included (10 restarts made a "permission
    #: denied" take 20 s to say); past these few the job's own retry, which knows a final error, takes over
    restart_retries: int = option(3, "restarts after a fault before the job's own retry takes over "
                                     "(-rst-retries; default 3)")
    transport: Literal["auto", "tcp", "udt"] = option(
        "auto", "the data channel: tcp, udt (UDP-based; gsiftp:// only, on a server started with -allow-udt), or "
        "auto (udt only where a preflight of the host measured it faster, else tcp)", flag="--transport")
