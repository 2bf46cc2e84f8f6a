"""Host keys: verified against known_hosts, never trusted silently.

An unknown key is refused unless the user said ``--accept-new-host-key`` (then it is
appended to known_hosts, as OpenSSH's ``StrictHostKeyChecking=accept-new`` does); a key
that differs from the recorded one is always refused, with the fingerprints, because
that is what an attacker in the middle looks like. The window asks instead of refusing
(``ask``: it shows the fingerprint), as FileZilla and WinSCP do, and the user answers
*always* (the key goes to known_hosts), *once* (trusted by this process only: kept in a
private file that Ferry's OpenSSH connections read beside known_hosts, gone at exit) or
no (refused, in a sentence that says so).
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import paramiko

from ..core.base import AskTrust
from ..core.errors import HostKeyError
from .once import trust_once, trusted_once


def _answer(value) -> str | None:
    """An asker's answer as "always", "once" or None."""
    if value is True or value == "always":
        return "always"
    return "once" if value == "once" else None


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
        if trusted_once(hostname) == (key.get_name(), key.get_base64()):  # trusted once already, in this process
            client.get_host_keys().add(hostname, key.get_name(), key)
            return
        answer = None
        if self.accept_new:
            answer = "always"
        elif self.ask is not None:
            answer = _answer(self.ask(hostname, key.get_name(), shown))
        if answer is None and self.ask is not None:
            raise HostKeyError(f"You did not trust the host key of {hostname} ({key.get_name()} {shown}), so Ferry "
                               "did not connect. Check that fingerprint with the server's administrator first.")
        if answer is None:
            raise HostKeyError(
                f"The host key of {hostname} is not known yet ({key.get_name()} {shown}). Check that fingerprint "
                "with the server's administrator, then run again with --accept-new-host-key to trust it."
            )
        if answer == "always":
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
            if line not in _lines(self.path):  # two connections that shared one question write it once
                with open(self.path, "a", encoding="ascii") as fh:
                    fh.write(line)
            os.chmod(self.path, 0o600)
        else:
            trust_once(hostname, key.get_name(), key.get_base64())
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.accepted = shown


def _lines(path: Path) -> set[str]:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return set(fh.readlines())
    except OSError:
        return set()


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
