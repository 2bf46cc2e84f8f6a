"""Parsing expected checksums: ``--checksum sha256:HEX`` and ``FILE.sha256`` sidecars."""

from __future__ import annotations

import re

from .base import Checksum
from .errors import BadRequest

LENGTHS = {"sha256": 64, "md5": 32, "sha1": 40, "sha512": 128}
#: sidecar suffixes tried on the server, best first
SIDECARS = (("sha256", ".sha256"), ("sha256", ".sha256sum"), ("md5", ".md5"))


def parse_checksum(text: str) -> Checksum:
    """``"sha256:HEX"`` (or ``"md5:HEX"``) as the user typed it."""
    alg, sep, hexdigest = text.strip().partition(":")
    alg = alg.lower().replace("-", "")
    hexdigest = hexdigest.strip().lower()
    if not sep or alg not in LENGTHS:
        raise BadRequest(f"'{text}' is not a checksum Ferry understands. Write it as sha256:HEX or md5:HEX.")
    if not re.fullmatch(rf"[0-9a-f]{{{LENGTHS[alg]}}}", hexdigest):
        raise BadRequest(
            f"The {alg} checksum must be {LENGTHS[alg]} hexadecimal digits; got '{hexdigest[:80]}'. Check the value."
        )
    return Checksum(alg, hexdigest)


def parse_sidecar(text: str, algorithm: str, filename: str) -> str | None:
    """The digest for ``filename`` in a ``sha256sum``/``md5sum``-style file, or None.

    Accepts ``HEX  name``, ``HEX *name``, a bare ``HEX``, and BSD style
    ``SHA256 (name) = HEX``. A file listing several names must name ours.
    """
    want = LENGTHS[algorithm]
    hexpat = rf"[0-9a-fA-F]{{{want}}}"
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if len(lines) > 10_000:
        return None
    for line in lines:
        bsd = re.fullmatch(rf"[A-Za-z0-9-]+ \((.+)\) = ({hexpat})", line)
        if bsd and bsd.group(1) == filename:
            return bsd.group(2).lower()
        gnu = re.fullmatch(rf"({hexpat})(?:\s+\*?(.+))?", line)
        if gnu and (gnu.group(2) is None or gnu.group(2).lstrip("./") == filename or len(lines) == 1):
            return gnu.group(1).lower()
    return None
