"""A file written in order from its first byte to its last (a folder's small file, a tar member, a file of a
list): ``NAME.part`` until it is whole and checked, never more bytes than promised, never through a link."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..host import portable
from .partfile import open_new, oversize
from .place import os_error, refuse_link


class WholeFile:
    """``with WholeFile(path, limit, source) as out: out.write(…); out.commit()`` — the part file goes unless
    committed. ``limit``: the size the server announced (None: it said none); a byte more is the server's error
    (``BadAnswer``). ``source``: the address, for that sentence."""

    def __init__(self, path: Path, limit: int | None, source: str, buffer: int = 0) -> None:
        self.path = Path(path)
        self.part = self.path.with_name(self.path.name + ".part")
        self.limit, self.source = limit, source
        self.written = 0  # accepted (with ``buffer``, the last of them may be held here yet)
        self.fd: int | None = None
        #: with ``buffer``, writes reach the file this much at a time (one system call where a TLS record came
        #: ~16 KiB at a time); ``flush`` sends what is held. The part file is made at the first write (or
        #: flush), so a file within the buffer can be made, written and read back in one hand-over to a worker
        #: thread (``backends/https/folder.py``). Making a file took ~1 ms of kernel time on ext4 right after a
        #: thousand others were deleted: time the event loop could not spend on the other files' sockets.
        self.buffer = buffer
        self._held = bytearray()
        self._opening = threading.Lock()  # pieces (``write_at``) come from several threads

    def __enter__(self) -> WholeFile:
        refuse_link(self.part)  # said before a byte is fetched; the part file is made at the first write (or
        return self  # flush), on the thread that writes it, never through a link (``open_new``)

    def _open(self) -> None:
        self.fd = open_new(self.part, os.O_WRONLY | os.O_TRUNC)

    def __exit__(self, kind, value, tb) -> None:
        self.close()
        if self.part is not None and os.path.lexists(self.part):
            self.part.unlink(missing_ok=True)  # not committed: nothing half-written stays behind

    def write(self, data: bytes | memoryview) -> None:
        if self.limit is not None and self.written + len(data) > self.limit:
            raise oversize(self.source, self.limit, self.path.name)
        if self.buffer:
            self._held += data
            self.written += len(data)
            if len(self._held) >= self.buffer:
                self.flush()
            return
        self._write_all(data)
        self.written += len(data)

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        """``data`` at ``offset``: a file fetched in pieces, each written by its own thread in its own place
        (``backends/https/lean.py``); ``written`` counts them all. Only within the promised size."""
        if self.limit is None or offset < 0 or offset + len(data) > self.limit:
            raise oversize(self.source, self.limit or 0, self.path.name)
        with self._opening:
            if self.fd is None:
                self._open()
            self.written += len(data)
        try:
            portable.pwrite_all(self.fd, data, offset)
        except OSError as exc:
            raise os_error(exc, self.part, "write to") from None

    def flush(self) -> None:
        if self.fd is None:
            self._open()
        if self._held:
            self._write_all(self._held)
            self._held.clear()

    def _write_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.fd is None:
            self._open()
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            raise os_error(exc, self.part, "write to") from None

    def close(self) -> None:
        if self.fd is not None:
            portable.forget(self.fd)
            os.close(self.fd)
            self.fd = None

    def commit(self, mtime: float | None = None, mode: int | None = None, *, mtime_ns: int | None = None) -> Path:
        """The file under its final name (its mode and time first, the rename last); ``mtime_ns``: a time to the
        nanosecond (an archive's member)."""
        self.flush()
        self.close()
        try:
            if mode is not None:
                portable.set_mode(self.part, mode & 0o777)
            if mtime_ns is not None:
                os.utime(self.part, ns=(mtime_ns, mtime_ns))
            elif mtime is not None:
                os.utime(self.part, (mtime, mtime))
            refuse_link(self.path)
            os.replace(self.part, self.path)
        except OSError as exc:
            raise os_error(exc, self.path, "write") from None
        self.part = None
        return self.path


def write_whole(path: str, data: bytes | memoryview, mode: int | None = None, mtime_ns: int | None = None) -> bool:
    """A small file whose bytes are all here and already checked (an archive's member), under ``path``: made as
    ``NAME.part`` with ``O_EXCL`` (never through a link), its mode and time set on the open file, renamed over a
    name that is not a link. About seven system calls where ``WholeFile`` makes a dozen: unpacking a million-file
    archive spends most of its time on them.

    Returns whether the final name then holds the very file written here. A second process writing the same
    name (another unpack into the same DEST) may remove this part file and make its own, which the rename would
    then name: False, so "checked" is never said over bytes this process did not write."""
    part = path + ".part"
    fd = _made_exclusive(part)
    try:
        try:
            mine = os.fstat(fd)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            stamped = portable.stamp_open(fd, None if mode is None else mode & 0o777, mtime_ns)
        finally:
            os.close(fd)
        if not stamped:
            if mode is not None:
                portable.set_mode(part, mode & 0o777)
            if mtime_ns is not None:
                os.utime(part, ns=(mtime_ns, mtime_ns))
        refuse_link(path)
        try:
            os.replace(part, path)
        except FileNotFoundError:
            return False  # the part file was taken away: the other writer's file is not this one
        there = os.lstat(path)
    except BaseException as exc:
        try:
            os.unlink(part)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise os_error(exc, Path(path), "write") from None
        raise
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def _made_exclusive(part: str) -> int:
    """A new ``part``; one left by a stopped run is removed first (``unlink`` removes a link, never what it
    leads to), a link there is refused in words."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | portable.O_NOFOLLOW | portable.O_CLOEXEC | portable.O_BINARY
    for _ in range(2):
        try:
            return os.open(part, flags, 0o644)
        except FileExistsError:
            refuse_link(Path(part))
            try:
                os.unlink(part)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise os_error(exc, Path(part), "replace") from None
        except OSError as exc:
            raise os_error(exc, Path(part), "create") from None
    raise os_error(FileExistsError(17, "made again by another process"), Path(part), "create")


def move_into_place(made: Path, final: Path, mtime: float | None = None, mode: int | None = None) -> None:
    """A file another program wrote whole (tar, globus-url-copy, libtorrent) into a private folder below DEST,
    moved to its final name: a plain file with one link, never a link, never onto a link."""
    import stat as statmod

    from ..core.errors import Corrupt

    st = os.lstat(made)
    if not statmod.S_ISREG(st.st_mode) or st.st_nlink != 1:
        raise Corrupt(f"{final.name} arrived as something other than a plain file (a link or a device); Ferry "
                      "stopped and kept nothing under that name.")
    if mode is not None:
        portable.set_mode(made, mode & 0o777)
    if mtime is not None:
        os.utime(made, (mtime, mtime))
    refuse_link(final)
    os.replace(made, final)



