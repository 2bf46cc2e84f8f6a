"""Reading a child process's output pipe without copying the data through Python.

asyncio's pipe transport copies every chunk three times on its way to a file (into a
bytes object, into the StreamReader's buffer, out again for ``pwrite``). On Linux,
``splice(2)`` moves pipe pages straight into the page cache at an offset, so an SSH
stream's payload never enters Python; only the short framing lines do. Elsewhere the
same class falls back to ``read`` + ``pwrite``.
"""

from __future__ import annotations

import asyncio
import os

from . import portable

CHUNK = 1 << 20
CAN_SPLICE = hasattr(os, "splice")
F_SETPIPE_SZ = 1031


def widen(fd: int, size: int = 1 << 20) -> None:
    """Ask for a bigger pipe (fewer wake-ups); best effort."""
    try:
        import fcntl

        fcntl.fcntl(fd, F_SETPIPE_SZ, size)
    except (ImportError, OSError):  # no fcntl (Windows), or a pipe size this OS does not take
        pass


class _Buffered:
    """What both sources share: bytes read past what a caller wanted are kept in ``_buf`` and come first;
    ``_read_raw`` reads the child's output itself."""

    def __init__(self) -> None:
        self._buf = bytearray()  # read past a line, or given back with ``unread``

    async def _read_raw(self, limit: int) -> bytes:
        raise NotImplementedError

    async def readline(self, limit: int = 256) -> bytes:
        """One line (with its newline); b"" at end of stream, or what there was if it ends first."""
        while b"\n" not in self._buf and len(self._buf) < limit:
            chunk = await self._read_raw(limit)
            if not chunk:
                break
            self._buf += chunk
        line, sep, rest = bytes(self._buf).partition(b"\n")
        self._buf = bytearray(rest)
        return line + sep

    async def read_some(self, limit: int = CHUNK) -> bytes:
        """Whatever is there (up to ``limit``, at least one byte); b"" at end of stream."""
        if self._buf:
            data = bytes(self._buf[:limit])
            del self._buf[:len(data)]
            return data
        return await self._read_raw(limit)

    def unread(self, data: bytes) -> None:
        """Give back bytes read past what the caller wanted (they come first again)."""
        if data:
            self._buf[:0] = data

    async def discard(self, count: int) -> int:
        """Skip ``count`` bytes; returns how many there were."""
        skipped = 0
        while skipped < count:
            chunk = await self.read_some(min(CHUNK, count - skipped))
            if not chunk:
                break
            skipped += len(chunk)
        return skipped


class PipeSource(_Buffered):
    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        os.set_blocking(fd, False)
        widen(fd)
        self._loop = asyncio.get_running_loop()

    async def _readable(self) -> None:
        future = self._loop.create_future()
        self._loop.add_reader(self.fd, lambda: future.done() or future.set_result(None))
        try:
            await future
        finally:
            self._loop.remove_reader(self.fd)

    async def _read_raw(self, limit: int) -> bytes:
        while True:
            try:
                return os.read(self.fd, limit)
            except BlockingIOError:
                await self._readable()

    async def into_file(self, file_fd: int, offset: int, count: int) -> int:
        """Move up to ``count`` bytes into ``file_fd`` at ``offset``; returns how many (0 at end of stream)."""
        if self._buf:
            data = bytes(self._buf[:count])
            del self._buf[:len(data)]
            return portable.pwrite(file_fd, data, offset)
        while True:
            try:
                if CAN_SPLICE:
                    return os.splice(self.fd, file_fd, min(CHUNK, count), offset_dst=offset,
                                     flags=os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK)
                data = os.read(self.fd, min(CHUNK, count))
                return portable.pwrite(file_fd, data, offset) if data else 0
            except BlockingIOError:
                await self._readable()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class StreamSource(_Buffered):
    """``PipeSource``'s methods over an asyncio ``StreamReader`` (a subprocess's ``stdout=PIPE``), for loops that
    cannot poll a pipe (Windows' Proactor loop reads it with overlapped I/O): every byte passes through Python
    once, then ``pwrite``. Slower than splicing, but the only way to read a child process there."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__()
        self.reader = reader

    async def _read_raw(self, limit: int) -> bytes:
        return await self.reader.read(limit)

    async def into_file(self, file_fd: int, offset: int, count: int) -> int:
        """Move up to ``count`` bytes into ``file_fd`` at ``offset``; returns how many (0 at end of stream)."""
        data = await self.read_some(min(CHUNK, count))
        if not data:
            return 0
        written = portable.pwrite(file_fd, data, offset)
        self.unread(data[written:])  # a short write: the rest comes first next time
        return written

    def close(self) -> None:
        """The reader belongs to its process, which is reaped with it."""
