"""The front door's rules for a folder sent as one archive (``--pack``) and an archive unpacked as it arrives
(``--unpack``): what each can be given, refused in one sentence before anything starts."""

from __future__ import annotations

import os
from pathlib import Path

from backends.core.errors import BadRequest


def check_unpack(source: str, dest: str, given: str) -> None:
    """``--unpack``: a tar on a server, unpacked into a folder here (the archive arrives as ``DEST/NAME.tar``,
    named as the source is: a server's other name for it would hide it from the unpacking)."""
    from backends.archive.follow import followed

    if "://" not in source or "://" in dest or Path(dest) == Path(given):
        raise BadRequest("--unpack copies an archive from a server into a folder here: give SRC as its address and "
                         "DEST as a folder (ending in /).")
    if not followed(Path(dest).name):
        raise BadRequest(f"--unpack opens .tar, .tar.zst and .tzst archives, not {Path(dest).name}; copy it, then "
                         "unpack it with the tool that made it.")


def check_pack(source: str, dest: str, backend) -> None:
    """``--pack`` sends a folder here as one tar made on demand: only to a backend that uploads such a file."""
    if "://" in source or not os.path.exists(source):
        raise BadRequest("--pack packs a folder on this machine: give SRC as a local folder (an archive on a "
                         "server is unpacked here with --unpack).")
    if not backend.caps.made:
        raise BadRequest(f"--pack sends to sftp://, scp://, ftp:// and ftps:// addresses and to GridFTP servers, "
                         f"not through {backend.name}; pack with labferry pack and copy the archive.")
    if dest.endswith((".zst", ".tzst", ".gz", ".tgz")):
        raise BadRequest("--pack sends a plain tar, whose layout is known before it is sent; name DEST NAME.tar "
                         "(the SSH streams compress on the way with --compress).")
