"""Host keys: verified against known_hosts, never trusted silently.

An unknown key is refused unless the user said ``--accept-new-host-key`` (then it is
appended to known_hosts, as OpenSSH's ``StrictHostKeyChecking=accept-new`` does); a key
that differs from the recorded one is always refused, with the fingerprints, because
that is what an attacker in the middle looks like. The GUI will ask instead of refusing
by passing ``ask`` (a callable that shows the fingerprint and returns yes or no).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import paramiko

from ..core.errors import HostKeyError

AskTrust = Callable[[str, str, str], bool]  # (host, key type, SHA256 fingerprint) -> trust it?


def fingerprint(key: paramiko.PKey) -> str:
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def host_entry(host: str, port: int) -> str:
    """How known_hosts names a server: the bare host on port 22, ``[host]:port`` elsewhere."""
    return host if port == 22 else f"[{host}]:{port}"


class KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
    """What to do with a host whose key is not in known_hosts."""

    def __init__(self, path: Path, accept_new: bool, ask: AskTrust | None = None) -> None:
        self.path, self.accept_new, self.ask = path, accept_new, ask
        self.accepted: str | None = None  # fingerprint of a key added in this connection

    def missing_host_key(self, client, hostname, key) -> None:
        shown = fingerprint(key)
        trusted = self.accept_new or (self.ask is not None and self.ask(hostname, key.get_name(), shown))
        if not trusted:
            raise HostKeyError(
                f"The host key of {hostname} is not known yet ({key.get_name()} {shown}). Check that fingerprint "
                "with the server's administrator, then run again with --accept-new-host-key to trust it."
            )
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        with open(self.path, "a", encoding="ascii") as fh:
            fh.write(line)
        os.chmod(self.path, 0o600)
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.accepted = shown


def changed_key_error(host: str, exc: paramiko.BadHostKeyException, path: Path, port: int = 22) -> HostKeyError:
    """known_hosts names a server on another port than 22 as ``[host]:port``: the command to remove the old entry
    must name it that way, and the file Ferry used (``ssh-keygen -R host`` alone would remove nothing)."""
    entry = host_entry(host, port)
    return HostKeyError(
        f"WARNING: the host key of {host} has CHANGED ({exc.key.get_name()} {fingerprint(exc.key)}; known_hosts has "
        f"{fingerprint(exc.expected_key)}). Someone may be intercepting the connection, or the server was "
        f"reinstalled. Ferry refuses to connect; ask the administrator, and if the change is real remove the old "
        f"entry from {path} (ssh-keygen -R '{entry}' -f '{path}')."
    )
