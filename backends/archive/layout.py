"""An archive's layout, computed whole before a byte is written, as ParFu does.

The sources are walked once. Every member's tar header is made then (POSIX ustar, with a pax header where a
name, a size or a time needs one), so its length is known, and every header's and every data byte's offset in
the archive follows from the ones before. Workers can then write anywhere at once: each takes pieces (a small
file whole, or a ``PIECE`` of a large one) and writes them at their offsets, so a 100 GB BAM is every worker's
job, not one worker's.

Order in the archive: folders first (so any tar restores them before their contents), then files from the
smallest up, then symbolic and hard links (a hard link names a file already in the archive), and last the
index (``index.py``). Sockets, FIFOs and devices are left out, each named in a note.
"""

from __future__ import annotations

import os
import stat as statmod
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import BadRequest, LocalError
from . import headers

BLOCK = 512
#: what a large file is cut into: each piece goes to whichever worker is free, as a small file does
PIECE = 64 << 20
#: the most entries one walk takes (a run folder has millions; a loop of links or a runaway tree stops here)
MOST_ENTRIES = 50_000_000
#: the deepest folder a walk enters
MOST_LEVELS = 512
#: what opening a file costs in time, as bytes of reading (about 64 KiB): how work is dealt to workers and ranks
OPEN_COST = 64 << 10


@dataclass
class Member:
    name: str  # the path inside the archive (non-UTF-8 bytes as surrogates)
    kind: str  # "file", "dir", "symlink" or "hardlink"
    size: int = 0
    mode: int = 0o644
    mtime_ns: int = 0
    linkname: str = ""
    source: str = ""  # the file read (files only)
    identity: tuple = ()  # (device, inode, size, mtime_ns) when walked: a file that changes meanwhile is caught
    offset: int = 0  # of the header
    data: int = 0  # of the first data byte

    @property
    def end(self) -> int:
        return self.data + padded(self.size)

    @property
    def meta(self) -> tuple:
        """What its header is made from (``headers.header(*meta)``): a worker makes the bytes."""
        return (self.name, self.kind, self.size if self.kind == "file" else 0, self.mode, self.mtime_ns,
                self.linkname)

    @property
    def header(self) -> bytes:
        return headers.header(*self.meta)


@dataclass
class Piece:
    member: int  # its place in ``Layout.members``
    start: int  # from the member's first data byte
    length: int
    first: bool  # the piece that also writes the member's header

    @property
    def cost(self) -> int:
        """Bytes, plus what opening a file costs in time (about 64 KiB of reading): 30,000 small files and
        4 large ones are dealt so the workers finish together."""
        return self.length + (OPEN_COST if self.first else 0)


@dataclass
class Layout:
    members: list[Member]
    pieces: list[Piece]
    end: int  # where the index member's header goes
    notes: list[str] = field(default_factory=list)

    @property
    def data_bytes(self) -> int:
        return sum(m.size for m in self.members if m.kind == "file")


def padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def place(members: list[Member], start: int = 0) -> int:
    """Give every member its header and offsets; returns where the next header would go."""
    at = start
    for m in members:
        m.offset = at
        m.data = at + headers.length(m.name, m.kind, m.size if m.kind == "file" else 0, m.mtime_ns, m.linkname)
        at = m.end
    return at


def cut(members: list[Member], piece: int = PIECE) -> list[Piece]:
    """Every member as pieces: one for a small file, a folder or a link, ``piece`` bytes each for a large file."""
    pieces = []
    for i, m in enumerate(members):
        if m.kind != "file" or m.size <= piece:
            pieces.append(Piece(i, 0, m.size if m.kind == "file" else 0, True))
            continue
        for start in range(0, m.size, piece):
            pieces.append(Piece(i, start, min(piece, m.size - start), start == 0))
    return pieces


def plan(sources: list[str], *, dereference: bool = False, piece: int = PIECE) -> Layout:
    """Walk ``sources`` and lay the archive out; a source that is missing or cannot be read is refused now,
    before anything is written."""
    walk = _Walk(dereference)
    for source in sources:
        path = Path(source)
        if not os.path.lexists(path):
            raise BadRequest(f"{source} does not exist. Check the path of the file or folder to pack.")
        walk.add(str(path), path.resolve().name if path.name in ("", ".", "..") else path.name)
    # small files in the order the walk met them (a folder's files side by side on disk: read cold, they are
    # near one another), large ones after them by size
    small = [m for m in walk.files if m.size <= piece]
    large = sorted((m for m in walk.files if m.size > piece), key=lambda m: (m.size, m.name))
    ordered = (sorted(walk.folders, key=lambda m: m.name) + small + large
               + sorted(walk.links, key=lambda m: m.name) + walk.hardlinks)
    end = place(ordered)
    return Layout(ordered, cut(ordered, piece), end, walk.notes)


class _Walk:
    """One pass over the sources with ``lstat``: what each entry is, and the names of files seen before."""

    def __init__(self, dereference: bool) -> None:
        self.dereference = dereference
        self.folders: list[Member] = []
        self.files: list[Member] = []
        self.links: list[Member] = []
        self.hardlinks: list[Member] = []
        self.notes: list[str] = []
        self.seen: dict[tuple[int, int], str] = {}  # (device, inode) → the first name of a file with links
        self.entered: set[tuple[int, int]] = set()  # folders entered (a link back up is entered once)
        self.count = 0

    def add(self, path: str, name: str, level: int = 0) -> None:
        self.count += 1
        if self.count > MOST_ENTRIES:
            raise BadRequest(f"The sources hold more than {MOST_ENTRIES:,} entries; pack them in parts.")
        try:
            st = os.stat(path) if self.dereference else os.lstat(path)
        except OSError as exc:
            raise _unreadable(path, exc) from None
        kind = st.st_mode
        if statmod.S_ISLNK(kind):
            self.links.append(Member(name, "symlink", mode=statmod.S_IMODE(kind), mtime_ns=st.st_mtime_ns,
                                     linkname=os.readlink(path)))
        elif statmod.S_ISDIR(kind):
            self._folder(path, name, st, level)
        elif statmod.S_ISREG(kind):
            self._file(path, name, st)
        else:
            what = "socket" if statmod.S_ISSOCK(kind) else "FIFO" if statmod.S_ISFIFO(kind) else "device"
            self.notes.append(f"{name} is a {what}, which an archive cannot hold; it was left out.")

    def _folder(self, path: str, name: str, st: os.stat_result, level: int) -> None:
        if level > MOST_LEVELS:
            raise BadRequest(f"{path} is more than {MOST_LEVELS} folders deep; pack it in parts.")
        if (st.st_dev, st.st_ino) in self.entered:
            self.notes.append(f"{name} leads back to a folder already packed; it was packed once.")
            return
        self.entered.add((st.st_dev, st.st_ino))
        self.folders.append(Member(name, "dir", mode=statmod.S_IMODE(st.st_mode), mtime_ns=st.st_mtime_ns))
        try:
            with os.scandir(path) as entries:
                names = sorted(e.name for e in entries)
        except OSError as exc:
            raise _unreadable(path, exc) from None
        for child in names:
            self.add(os.path.join(path, child), f"{name}/{child}", level + 1)

    def _file(self, path: str, name: str, st: os.stat_result) -> None:
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1 and key in self.seen:
            self.hardlinks.append(Member(name, "hardlink", mode=statmod.S_IMODE(st.st_mode),
                                         mtime_ns=st.st_mtime_ns, linkname=self.seen[key]))
            return
        if st.st_nlink > 1:
            self.seen[key] = name
        if not os.access(path, os.R_OK):
            raise _unreadable(path, PermissionError(13, "Permission denied"))
        self.files.append(Member(name, "file", st.st_size, statmod.S_IMODE(st.st_mode), st.st_mtime_ns,
                                 source=str(path), identity=(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)))


def _unreadable(path: str, exc: OSError) -> LocalError:
    why = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc)).lower()
    return LocalError(f"Ferry cannot read {path} ({why}); nothing was packed. Fix its permissions or leave it "
                      "out of the sources.")
