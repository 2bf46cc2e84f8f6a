"""One part file written by several processes at once (an archive packed by workers, a large member unpacked by
them): made here by the process that owns it, then opened by each worker, which checks that the name still
leads to that very file before it writes a byte.

A second process that replaced ``NAME.part`` meanwhile (with a link, or another file) would otherwise receive
the workers' bytes: each worker opens without following a link and compares the inode (and, on the owner's
own machine, the device: another node of a cluster numbers a shared file system's mount its own way) with the
ones the owner made, and refuses in a sentence when they differ.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import LocalError
from ..host import portable
from .partfile import open_new
from .place import os_error, refuse_link, room_for


@dataclass(frozen=True)
class SharedPart:
    path: str  # NAME.part
    device: int
    inode: int
    size: int
    host: str = ""  # the machine that made it

    @classmethod
    def make(cls, dest: Path, size: int, *, keep: bool = False) -> SharedPart:
        """``dest``'s part file, ``size`` bytes long (the gaps read as zeros, which is what a tar's padding
        is); ``keep``: an existing part file of that size is taken up again (a resumed pack)."""
        part = Path(str(dest) + ".part")
        room_for(dest, size, part.stat().st_size if keep and part.exists() else 0)
        fd = open_new(part, os.O_RDWR | (0 if keep else os.O_TRUNC))
        try:
            os.ftruncate(fd, size)
            st = os.fstat(fd)
        except OSError as exc:
            raise os_error(exc, part, "make") from None
        finally:
            os.close(fd)
        return cls(str(part), st.st_dev, st.st_ino, size, socket.gethostname())

    def _same(self, st: os.stat_result) -> bool:
        return st.st_ino == self.inode and (st.st_dev == self.device or socket.gethostname() != self.host)

    def open(self) -> int:
        """A worker's descriptor for writing, only onto the file the owner made."""
        try:
            fd = os.open(self.path, os.O_WRONLY | portable.O_NOFOLLOW | portable.O_CLOEXEC | portable.O_BINARY)
        except OSError as exc:
            raise os_error(exc, Path(self.path), "open") from None
        st = os.fstat(fd)
        if not self._same(st):
            os.close(fd)
            raise LocalError(f"{self.path} was replaced by another program while Ferry wrote it; nothing more was "
                             "written. Stop the other program, then run the same command again.")
        return fd

    def write(self, fd: int, data, offset: int) -> None:
        self._within(offset, len(data))
        try:
            portable.pwrite_all(fd, data, offset)
        except OSError as exc:
            raise os_error(exc, Path(self.path), "write to") from None

    def copy_in(self, fd: int, src: int, length: int, src_offset: int, offset: int) -> bool:
        """``length`` bytes of the file ``src`` from ``src_offset`` written at ``offset`` by the kernel (no copy
        through this process); False, with nothing or part of it written, where the kernel cannot: the caller
        writes it all the ordinary way."""
        self._within(offset, length)
        done = 0
        try:
            while done < length:
                moved = portable.copy_range(src, fd, length - done, src_offset + done, offset + done)
                if moved <= 0:
                    return False
                done += moved
        except OSError as exc:
            raise os_error(exc, Path(self.path), "write to") from None
        return True

    def _within(self, offset: int, length: int) -> None:
        if offset < 0 or offset + length > self.size:
            raise LocalError(f"A write past the planned end of {self.path} was refused (a bug in Ferry's plan: "
                             "please report it).")

    def finish(self, dest: Path, mtime_ns: int | None = None, mode: int | None = None) -> Path:
        """The part file under its final name, when it is still the one the owner made."""
        try:
            st = os.lstat(self.path)
        except OSError as exc:
            raise os_error(exc, Path(self.path), "find") from None
        if not self._same(st) or st.st_size != self.size:
            raise LocalError(f"{self.path} was changed by another program while Ferry wrote it; it was not given "
                             f"the name {dest.name}. Run the same command again.")
        try:
            if mode is not None:
                portable.set_mode(Path(self.path), mode & 0o777)
            if mtime_ns is not None:
                os.utime(self.path, ns=(mtime_ns, mtime_ns))
            refuse_link(dest)
            os.replace(self.path, dest)
        except OSError as exc:
            raise os_error(exc, dest, "write") from None
        return dest

    def cut(self, size: int) -> SharedPart:
        """The part file cut to ``size`` (a plan's bound, once the real end is known), when it is still the one
        the owner made."""
        fd = self.open()
        try:
            os.ftruncate(fd, size)
        except OSError as exc:
            raise os_error(exc, Path(self.path), "write") from None
        finally:
            os.close(fd)
        return replace(self, size=size)

    def discard(self) -> None:
        try:
            st = os.lstat(self.path)
        except OSError:
            return
        if self._same(st):
            os.unlink(self.path)
