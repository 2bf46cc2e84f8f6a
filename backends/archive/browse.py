"""What an archive holds (``labferry ls``, and the list ``unpack`` works from): its index, the last member Ferry
writes (path, size, offset, SHA-256 of every member), read without reading the rest; a tar made elsewhere scanned
once, header by header, up to ``MOST_SCANNED`` members; ``--only`` patterns chosen from it."""

from __future__ import annotations

import fnmatch
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadRequest, Corrupt
from ..host import portable
from . import index, seekable
from .layout import Member

#: the most members a tar made elsewhere is scanned for (its headers are read one by one)
MOST_SCANNED = 50_000_000



@dataclass
class Catalogue:
    members: list[Member]
    #: name → (its SHA-256, its pieces' SHA-256s, the size they were cut at); empty from a scan
    digests: dict[str, tuple[str, list[str], int]]
    indexed: bool
    size: int = 0  # the archive's length: a member whose data goes past it was cut off
    cut: str = ""  # why a scan stopped before the archive's end (a truncated or damaged tar)
    frames: seekable.FrameMap | None = None  # a .tar.zst's frames: offsets above are in the tar they decode to



def catalogue(archive: Path, *, scan: bool = False) -> Catalogue:
    """The archive's members: from its index, or from one pass over its headers when it has none."""
    lines, size, frames = index_lines(archive, scan=scan)
    if lines is None:
        members, cut = _scanned(archive)
        return Catalogue(members, {}, False, size, cut)
    members = [index.as_member(x) for x in lines]
    return Catalogue(members, digests_of(lines), True, size, frames=frames)



def index_lines(archive: Path, *, scan: bool = False) -> tuple[list[dict] | None, int, seekable.FrameMap | None]:
    """The index's lines (None: the archive has none, or ``scan`` asked not to use it), the tar's length, and a
    .tar.zst's frames."""
    try:
        fd = os.open(archive, os.O_RDONLY | portable.O_BINARY)
    except OSError as exc:
        raise BadRequest(f"Ferry cannot open {archive} ({exc.strerror}). Check the path.") from None
    frames = None
    try:
        size = os.fstat(fd).st_size
        if seekable.is_seekable(fd):
            frames = seekable.read_map(fd, size, str(archive))
            size = frames.tar_size
            lines = index.read(fd, size, str(archive),
                               lambda at, n: seekable.read_range(fd, frames, at, n, str(archive)))
            if lines is None:
                raise Corrupt(f"{archive} has no labferry index; unpack it with: zstd -d < {archive} | tar -x")
        else:
            lines = None if scan else index.read(fd, size, str(archive))
    finally:
        os.close(fd)
    return lines, size, frames



def digests_of(lines: list[dict]) -> dict[str, tuple[str, list[str], int]]:
    """name → (its SHA-256, its pieces' SHA-256s, the size they were cut at), from the index's lines."""
    return {x["n"]: (x.get("h", ""), x.get("p", []), int(x.get("q", 0))) for x in lines}



def _scanned(archive: Path) -> tuple[list[Member], str]:
    """The members one pass over the headers finds, and why it stopped early ("" when it reached the end): a
    cut archive still gives what is in it."""
    members: list[Member] = []
    try:
        with tarfile.open(archive, "r:", encoding="utf-8", errors="surrogateescape", ignore_zeros=False) as tar:
            for info in tar:
                if len(members) >= MOST_SCANNED:
                    raise Corrupt(f"{archive} holds more than {MOST_SCANNED:,} members; Ferry stopped reading it.")
                member = from_info(info)
                if member is not None:
                    members.append(member)
    except tarfile.ReadError as exc:
        if not members:
            raise Corrupt(f"{archive} is not a tar archive Ferry can read ({exc}).") from None
        return members, str(exc)
    return members, ""



def from_info(info: tarfile.TarInfo) -> Member | None:
    kind = ("file" if info.isreg() else "dir" if info.isdir() else "symlink" if info.issym()
            else "hardlink" if info.islnk() else None)
    if kind is None:
        return None
    m = Member(info.name.rstrip("/"), kind, info.size if kind == "file" else 0, info.mode,
               _nanoseconds(info.pax_headers.get("mtime"), info.mtime), info.linkname)
    m.offset, m.data = info.offset, info.offset_data
    return m



def _nanoseconds(pax: str | None, seconds: float) -> int:
    """A pax time ("1600000000.123456789") to the nanosecond; a float would lose the last digits."""
    whole, _, fraction = (pax or "").partition(".")
    if whole.lstrip("-").isdigit() and (not fraction or fraction.isdigit()):
        return int(whole) * 1_000_000_000 + int((fraction + "000000000")[:9])
    return int(seconds) * 1_000_000_000



def chosen(members: list[Member], only: list[str] | None) -> list[Member]:
    """The members ``--only`` names (a glob; a folder's glob takes what is inside it too); all without it."""
    keep = [m for m in members if m.name != index.INDEX_NAME]
    if not only:
        return keep
    return [m for m in keep if any(fnmatch.fnmatchcase(m.name, g) or fnmatch.fnmatchcase(m.name, g.rstrip("/") + "/*")
                                   for g in only)]
