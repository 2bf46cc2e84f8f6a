"""The SSH backend's own options, declared for the front door (``backends.core.options``): CLI flags, a site
profile's fields, New transfer's SSH settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.options import option


@dataclass(frozen=True)
class SshOptions:
    """Per-job SSH settings (CLI flags, site profile), declared for the front door (``backends.core.options``)."""

    identity: str | None = option(None, "private key to log in with (default: agent, ~/.ssh keys)",
                                  flag="--identity", metavar="FILE")
    known_hosts: str | None = option(None, "known_hosts file (default ~/.ssh/known_hosts)", flag="--known-hosts",
                                     metavar="FILE")
    accept_new_host_key: bool = option(False, "trust a server seen for the first time (check its fingerprint!)",
                                       flag="--accept-new-host-key")
    ssh_config: str | None = option(None, "ssh_config file (default ~/.ssh/config)")
    max_handshakes: int = option(8, "SSH logins at once (default 8; sshd's MaxStartups drops connections past 10)",
                                 flag="--max-handshakes", metavar="N")
    compress: Literal["auto", "zstd", "off"] = option(
        "auto", "zstd on the wire for big files: auto (where the file shrinks ≥ 1.3× and zstd keeps ahead of the "
        "path), zstd (always), off", flag="--compress")
    none_cipher: bool = option(False, "with HPN-SSH only: switch to the NONE cipher after login (data unencrypted!)",
                               flag="--ssh-none-cipher")
