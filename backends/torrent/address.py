"""What names a torrent and its peers: a ``.torrent`` file or a magnet link (libtorrent's add parameters, bad input
in one sentence), its info-hash (the key of its part folder and resume data), and a peer's ``HOST:PORT``.

libtorrent is imported only where a torrent is read: the backend is found and asked whether it is available
(``backend.py``) on machines without it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import BadRequest, LocalError

if TYPE_CHECKING:
    import libtorrent as lt

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
    import libtorrent as lt

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


def is_torrent(location: str) -> bool:
    return location.startswith("magnet:") or location.lower().endswith(".torrent")
