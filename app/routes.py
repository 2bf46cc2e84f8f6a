"""Where a transfer lands: turning the user's DEST into a file path."""

from __future__ import annotations

import os
from pathlib import Path

from backends.core.errors import BadRequest
from backends.core.urls import redact, remote_name
from backends.destination.names import portable_name


def resolve_destination(source: str, dest: str | os.PathLike) -> str:
    """DEST itself, or DEST/NAME when DEST is a local folder (or ends with a slash).

    A remote destination (an upload, or a server-to-server copy) is left as given: the
    backend decides there, since only the server knows whether the path is a folder, and
    only some backends (GridFTP) can make two servers talk to each other.
    """
    text = os.fspath(dest)
    if "://" in text:
        return text
    if source.startswith("magnet:") or source.lower().endswith(".torrent"):
        return str(Path(text).expanduser().absolute())  # a torrent names its own files: DEST is their folder
    path = Path(text).expanduser()
    if text.endswith(("/", os.sep)) and path.exists() and not path.is_dir():
        raise BadRequest(f"{path} is a file, not a folder. Name the file to write without the trailing slash "
                         "(with --overwrite to replace it), or give a folder.")
    if path.is_dir() or text.endswith(("/", os.sep)):
        name = remote_name(source) or remote_name(source.rstrip("/"))
        if "://" not in source:
            name = Path(source.rstrip("/")).name
        if not name or name in (".", ".."):
            raise BadRequest(
                f"{redact(source)} does not end in a file name, so Ferry cannot name the download. "
                "Give the destination as a file path."
            )
        path = path / portable_name(name)[0]  # a name every OS takes (CON, what?.txt, a\\..\\b: backends.destination)
    return str(path.absolute())
