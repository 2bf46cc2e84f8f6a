"""Where a transfer lands: turning the user's DEST into a file path."""

from __future__ import annotations

import os
from pathlib import Path

from backends.errors import BadRequest
from backends.urls import redact, remote_name


def resolve_destination(source: str, dest: str | os.PathLike) -> Path:
    """DEST itself, or DEST/NAME when DEST is a folder (or ends with a slash)."""
    text = os.fspath(dest)
    path = Path(text).expanduser()
    if path.is_dir() or text.endswith(("/", os.sep)):
        name = remote_name(source)
        if not name or name in (".", ".."):
            raise BadRequest(
                f"{redact(source)} does not end in a file name, so Ferry cannot name the download. "
                "Give the destination as a file path."
            )
        path = path / name.replace("\0", "")
    return path.absolute()
