"""The unpacked folder below DEST: what was restored of it (``Unpacked``, told to the user), and its last
touches: links made only when they stay inside it, hard links only to a file restored here, and the folders'
times set after their files were written (writing a file changes them)."""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass, field

from ..core.errors import LocalError
from ..destination import Destination
from ..host import portable
from .layout import Member


@dataclass
class Unpacked:
    """What an unpack restored below DEST, and what it did not (``failed``: one sentence each)."""

    restored: int
    bytes: int
    seconds: float
    workers: int
    indexed: bool
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    top: str = ""  # the one folder every member is in (``run42``), as it was saved below DEST; "" when several


def make_links(target: Destination, links: list[Member], result: Unpacked) -> None:
    from ..destination.links import make_hard_link, make_symlink

    for m in links:
        where = target.file(target.claim(m.name))
        try:
            if m.kind == "symlink":
                make_symlink(target.root, where, m.linkname)
            else:
                make_hard_link(target.root, where, target.file(target.claim(m.linkname)))
            result.restored += 1
        except LocalError as exc:
            result.notes.append(str(exc))



def folder_times(target: Destination, folders: list[Member]) -> None:
    """Folders' modes and times last (restoring a file inside changes its folder's time), deepest first."""
    for m in sorted(folders, key=lambda m: -m.name.count("/")):
        path = target.path(target.claim(m.name, folder=True))
        try:
            portable.set_mode(path, statmod.S_IMODE(m.mode))
            os.utime(path, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)
        except OSError:
            pass  # a folder's time is worth no failure
