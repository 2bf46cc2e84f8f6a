"""Links an archive asks for below DEST: made only when they stay inside it.

A symbolic link is harmless until something is written or read through it; an archive's ``evil -> /etc`` or
``up -> ../../..`` followed by ``evil/passwd`` is the classic way out of the destination. Ferry makes a link
only when the path it names, taken from the link's own folder, stays below DEST, and never writes through any
link (``place``); a hard link only to a plain file below DEST. Each refusal is one sentence, and the rest of the
archive goes on.
"""

from __future__ import annotations

import os
import posixpath
import stat as statmod
from pathlib import Path

from ..core.errors import LinkInDest
from .place import os_error, refuse_link


def _inside(root: Path, path: str) -> bool:
    root_text = os.path.normpath(str(root))
    normal = os.path.normpath(path)
    return normal == root_text or normal.startswith(root_text.rstrip(os.sep) + os.sep)


def make_symlink(root: Path, where: Path, linkname: str) -> None:
    if not linkname or posixpath.isabs(linkname) or "\0" in linkname:
        raise LinkInDest(f"The link {where.name} points to {linkname!r}, outside the destination; it was not made.")
    if not _inside(root, os.path.join(os.path.dirname(where), linkname)):
        raise LinkInDest(f"The link {where.name} points to {linkname!r}, outside the destination; it was not made.")
    _clear(where)
    try:
        os.symlink(linkname, where)
    except OSError as exc:
        raise os_error(exc, where, "make the link") from None


def make_hard_link(root: Path, where: Path, target: Path) -> None:
    try:
        st = os.lstat(target)
    except OSError:
        st = None
    if st is None or not statmod.S_ISREG(st.st_mode) or not _inside(root, str(target)):
        raise LinkInDest(f"The hard link {where.name} names {target.name}, which is not a file restored below the "
                         "destination; it was not made.")
    _clear(where)
    try:
        os.link(target, where, follow_symlinks=False)
    except OSError as exc:
        raise os_error(exc, where, "make the link") from None


def _clear(where: Path) -> None:
    """What an earlier unpack left under the link's name (a link or a file: never a folder) goes first."""
    if os.path.lexists(where):
        if os.path.isdir(where) and not os.path.islink(where):
            raise LinkInDest(f"{where} is a folder; the archive's link of that name was not made.")
        try:
            os.unlink(where)
        except OSError as exc:
            raise os_error(exc, where, "replace") from None
    refuse_link(where.parent)
