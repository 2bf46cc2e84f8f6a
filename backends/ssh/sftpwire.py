"""SFTP (version 3, draft-ietf-secsh-filexfer-02) spoken over an OpenSSH channel to the server's subsystem.

An SFTP-only account (``ForceCommand internal-sftp``) may run no ``dd``, so the shell path cannot read it at
offsets; paramiko could, but its Python data path moves ~250 Mbit/s per core and holds the GIL, so several
paramiko sessions share one core. Here the system's OpenSSH carries the bytes (its C ciphers, one multiplexed
master per stream, as the shell path does) and Ferry speaks the few SFTP packets it needs over the channel's
pipes: ``INIT``, ``OPEN``, pipelined ``READ``s or ``WRITE``s, ``CLOSE``. Requests are answered in order by OpenSSH's
sftp-server, and every answer is matched to its request by id and offset regardless.
"""

from __future__ import annotations

import asyncio
import errno
import struct
from collections import deque

FXP_INIT, FXP_VERSION, FXP_OPEN, FXP_CLOSE, FXP_READ, FXP_WRITE = 1, 2, 3, 4, 5, 6
FXP_STATUS, FXP_HANDLE, FXP_DATA = 101, 102, 103
FX_OK, FX_EOF, FX_NO_SUCH_FILE, FX_PERMISSION_DENIED = 0, 1, 2, 3
FXF_READ, FXF_WRITE = 0x01, 0x02
MAX_PACKET = 1 << 20  # sftp-server's own messages are at most 256 KiB; anything larger is not SFTP


class SftpStatus(OSError):
    """An SFTP status other than OK, as the ``OSError`` ``sftp_error`` turns into a sentence."""


def _status_error(payload: bytes) -> SftpStatus:
    code = struct.unpack_from(">I", payload, 4)[0]
    message = ""
    if len(payload) >= 12:
        size = struct.unpack_from(">I", payload, 8)[0]
        message = payload[12:12 + size].decode("utf-8", "replace")
    number = {FX_NO_SUCH_FILE: errno.ENOENT, FX_PERMISSION_DENIED: errno.EACCES}.get(code, errno.EIO)
    return SftpStatus(number, message or f"SFTP status {code}")


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


class SftpChannel:
    """One SFTP session on one channel process (its stdin and stdout are the session's two directions)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._ids = iter(range(1, 1 << 31))
        #: READs sent and not yet answered: (request id, offset, length), oldest first
        self.asked: deque[tuple[int, int, int]] = deque()

    async def start(self) -> None:
        self._send(FXP_INIT, struct.pack(">I", 3))
        kind, _ = await self._packet()
        if kind != FXP_VERSION:
            raise ConnectionError(f"the server's SFTP subsystem answered INIT with packet type {kind}")

    async def open_read(self, path: str) -> bytes:
        """A handle for reading ``path``."""
        return await self._open(path, FXF_READ)

    async def open_write(self, path: str) -> bytes:
        """A handle for writing into ``path``, which exists already (an upload's part, made at its full size)."""
        return await self._open(path, FXF_WRITE)

    async def _open(self, path: str, flags: int) -> bytes:
        rid = next(self._ids)
        self._send(FXP_OPEN, struct.pack(">I", rid) + _string(path.encode("utf-8")) + struct.pack(">II", flags, 0))
        kind, payload = await self._answer(rid)
        if kind == FXP_HANDLE:
            return payload[8:8 + struct.unpack_from(">I", payload, 4)[0]]
        raise _status_error(payload) if kind == FXP_STATUS else ConnectionError(f"OPEN answered with type {kind}")

    def ask_read(self, handle: bytes, offset: int, length: int) -> None:
        rid = next(self._ids)
        self._send(FXP_READ, struct.pack(">I", rid) + _string(handle) + struct.pack(">QI", offset, length))
        self.asked.append((rid, offset, length))

    def ask_write(self, handle: bytes, offset: int, data: bytes) -> None:
        rid = next(self._ids)
        self._send(FXP_WRITE, struct.pack(">I", rid) + _string(handle) + struct.pack(">Q", offset) + _string(data))
        self.asked.append((rid, offset, len(data)))

    async def write_answer(self) -> tuple[int, int]:
        """The oldest WRITE's answer: (its offset, its length), once the server says it is written."""
        rid, offset, length = self.asked.popleft()
        kind, payload = await self._answer(rid)
        if kind == FXP_STATUS and struct.unpack_from(">I", payload, 4)[0] == FX_OK:
            return offset, length
        raise _status_error(payload) if kind == FXP_STATUS else ConnectionError(f"WRITE answered with type {kind}")

    async def flush(self) -> None:
        await self.proc.stdin.drain()

    async def read_answer(self) -> tuple[int, int, bytes | None]:
        """The oldest READ's answer: (its offset, the length asked, the bytes; None at the end of the file)."""
        rid, offset, length = self.asked.popleft()
        kind, payload = await self._answer(rid)
        if kind == FXP_DATA:
            size = struct.unpack_from(">I", payload, 4)[0]
            return offset, length, payload[8:8 + size]
        if kind == FXP_STATUS and struct.unpack_from(">I", payload, 4)[0] == FX_EOF:
            return offset, length, None
        raise _status_error(payload) if kind == FXP_STATUS else ConnectionError(f"READ answered with type {kind}")

    async def close_handle(self, handle: bytes, *, writing: bool = False) -> None:
        while self.asked:
            await (self.write_answer() if writing else self.read_answer())
        rid = next(self._ids)
        self._send(FXP_CLOSE, struct.pack(">I", rid) + _string(handle))
        await self._answer(rid)

    # -- packets -----------------------------------------------------------------------------------
    def _send(self, kind: int, payload: bytes) -> None:
        self.proc.stdin.write(struct.pack(">IB", len(payload) + 1, kind) + payload)

    async def _answer(self, rid: int) -> tuple[int, bytes]:
        kind, payload = await self._packet()
        if len(payload) < 4 or struct.unpack_from(">I", payload)[0] != rid:
            raise ConnectionError("the server's SFTP subsystem answered out of order")
        return kind, payload

    async def _packet(self) -> tuple[int, bytes]:
        try:
            head = await self.proc.stdout.readexactly(5)
            length, kind = struct.unpack(">IB", head)
            if not 1 <= length <= MAX_PACKET:
                raise ConnectionError(f"the server's SFTP subsystem sent a packet of {length} bytes")
            return kind, await self.proc.stdout.readexactly(length - 1)
        except asyncio.IncompleteReadError:
            raise ConnectionError("the SFTP channel closed") from None
