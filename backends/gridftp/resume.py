"""Resuming a GridFTP download after Ferry was stopped, and noticing a source replaced during one.

globus-url-copy's parallel streams (MODE E) write blocks out of order, and its own restarts
(``-rst``) live only as long as its process. Ferry keeps what a restart of the *job* needs:
the part file's contiguous prefix that Ferry has already read back and hashed
(``Follower``), recorded in the same ``NAME.part.ferry`` record the other backends write,
with the server file's size and modification time. A later run trusts that prefix only
when the server still shows the same size and time, cuts the part file back to it (a block
beyond it may be half-written) and asks globus-url-copy for the rest (``-off``).

The same size and time, asked again when the copy ends, show whether the file was replaced
while it moved: a server session that restarted on the new file would splice two versions.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..destination import Identity, PartFile, open_new
from .control import Entry

#: a recorded prefix is kept to whole MiB: the page after a block that was being written is never trusted
ALIGN = 1 << 20
SAVE_EVERY = 0.5


def identity_of(source: str, entry: Entry) -> Identity:
    """What must still hold on the server for the bytes of an earlier run to be kept."""
    return Identity(source=source, size=entry.size, etag=None,
                    last_modified=repr(entry.mtime) if entry.mtime is not None else None)


class Record:
    """``NAME.part.ferry`` for one GridFTP download: a prefix of the part file, and whose it is."""

    def __init__(self, dest: Path, source: str) -> None:
        self._file = PartFile(dest)  # only its record is used: globus-url-copy writes the part file itself
        self.source = source
        self.part = self._file.part
        self.path = self._file.state
        self.saved = 0

    def hint(self) -> int:
        """Bytes an earlier run recorded for this source (not yet checked against the server)."""
        return sum(e - s for s, e in self._file.peek(self.source))

    def trusted(self, entry: Entry) -> int:
        """The prefix to keep when the server's file is the one recorded; 0 (and the record dropped) if not."""
        wanted = identity_of(self.source, entry)
        done = self._file.recorded(wanted) if wanted.validated else []
        prefix = done[0][1] if len(done) == 1 and done[0][0] == 0 else 0
        try:
            on_disk = self.part.stat().st_size
        except OSError:
            on_disk = 0
        if not prefix or prefix > on_disk or prefix > entry.size:
            self.drop()
            return 0
        self._file.identity = wanted
        self.saved = prefix
        return prefix

    def start(self, entry: Entry) -> None:
        """From now on progress is recorded against this server file."""
        self._file.identity = identity_of(self.source, entry)

    def save(self, hashed: int) -> None:
        """Record ``[0, hashed)`` (rounded down to whole MiB) when it grew."""
        prefix = hashed - hashed % ALIGN
        if self._file.identity is None or prefix <= self.saved:
            return
        self._file.save_state([(0, prefix)])
        self.saved = prefix

    def drop(self) -> None:
        self.path.unlink(missing_ok=True)
        self.saved = 0


def cut_back(part: Path, prefix: int) -> None:
    """Keep only the trusted prefix of the part file: what lies beyond may be half-written."""
    fd = open_new(part, os.O_WRONLY)  # never through a link
    try:
        os.ftruncate(fd, prefix)
    finally:
        os.close(fd)


def replaced(before: Entry, after: Entry | None) -> bool:
    """Whether the server's file at the end of a copy is not the one it had at the start."""
    return after is None or after.is_dir or after.size != before.size or after.mtime != before.mtime
