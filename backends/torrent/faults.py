"""The BitTorrent backend's errors as sentences: a swarm that stalled (no metadata, no peer that takes this
certificate, no data), and what a failed TLS handshake with a lab peer means."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.errors import AuthError, Transient, Unreachable

if TYPE_CHECKING:
    from .address import Peer


def raise_stalled(st, refused: dict[str, str], peers: list[Peer], stall_seconds: float) -> None:
    """Nothing arrived for ``stall_seconds``: why, in one sentence (no metadata from a magnet, a TLS torrent's
    peers refusing this certificate (``refused``: peer → why), or no data from the peers asked)."""
    if not st.has_metadata:
        raise Unreachable(
            f"The torrent's description (its metadata) did not arrive within {stall_seconds:.0f} s "
            f"({st.num_peers} peers connected). A magnet link works only for a public torrent whose peers "
            "are reachable; a private torrent's peers never hand it out. Ask for the .torrent file.")
    who = ", ".join(f"{p.host}:{p.port}" for p in peers) or "the swarm"
    if refused and not st.num_peers:
        raise AuthError(
            f"No peer of this TLS torrent accepted this peer's certificate within {stall_seconds:.0f} s "
            f"({'; '.join(f'{p}: {w}' for p, w in refused.items())}). Ask the torrent's creator for "
            "a certificate from its lab CA (labferry torrent cert), and give it with --tls-cert/--tls-key.")
    raise (Unreachable if not st.num_peers else Transient)(
        f"No data arrived for {stall_seconds:.0f} s ({st.num_peers} peers connected; asked {who}). Check "
        "that a seed is running and reachable (and accepts the same encryption setting), then retry.")


def tls_reason(message: str) -> str:
    """What a TLS handshake's failure means for a lab peer, in words."""
    low = message.lower()
    if "verify failed" in low or "evp lib" in low:  # EVP: signed by another CA of the same name
        return "its certificate is not from this torrent's lab CA, or has expired"
    if "truncated" in low:
        return "it hung up during the handshake (a plaintext or RC4 peer, or one that refused this certificate)"
    if "unknown ca" in low or "certificate" in low:
        return "it refused this peer's certificate"
    return "the handshake failed"
