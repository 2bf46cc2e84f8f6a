"""The archive backend's errors as sentences: a source that changed while it was packed, a cut archive (what
was restored and what is missing), and the stop a paused or cancelled queue job asks for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import LocalError
from ..core.words import counted
from .browse import Catalogue
from .layout import Member

if TYPE_CHECKING:
    from .folder import Unpacked


def say_cut(archive: Path, cat: Catalogue, members: list[Member], result: Unpacked) -> None:
    """A cut archive: what was restored, and that the rest is missing (the run then ends in ``Corrupt``)."""
    lost = [m for m in members if m.kind == "file" and m.data + m.size > cat.size]
    if cat.cut or lost:
        result.failed.append(f"{archive.name} ends at byte {cat.size:,}"
                             + (f", inside {counted(len(lost), 'member')}" if lost else "")
                             + (f", and its headers stop there ({cat.cut})" if cat.cut else ""))


def changed(source: str, why: str) -> LocalError:
    return LocalError(f"{source} changed while it was packed ({why}); the archive was not finished. Run the same "
                      "command again once nothing writes to it.")


class Stopped(Exception):
    """The job was paused or cancelled: the pack or unpack stops between two batches."""
