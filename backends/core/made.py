"""What an upload reads: a file here, or a file made on demand that is never written here.

``labferry copy FOLDER URL/NAME.tar --pack`` sends an archive that exists only as its layout
(``backends.archive.image``): any range of it is made from the sources when a stream asks for it. A backend
that uploads reads through ``open_local`` and takes the whole file's SHA-256 from ``whole_sha256``, so the same
parallel, resumable, range-checked path carries both. The archive package is composed above the protocols, so
they know it only as this protocol.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..host import portable


@runtime_checkable
class Made(Protocol):
    """A file made on demand: its name, size, mode and time as a file's, and its bytes at any offset."""

    name: str
    size: int
    mode: int
    mtime: float
    #: what a resume record keys on: the same key is the same bytes
    key: str

    def pread(self, length: int, offset: int) -> bytes: ...

    def sha256(self, halt: threading.Event | None = None) -> str:
        """The whole file's SHA-256, made in order (a thread beside the streams runs it); "" once ``halt`` is
        set (the upload stopped: Ctrl-C must not wait for a pass over 300 GB)."""
        ...


class LocalReader:
    """One stream's handle: ``pread`` at an offset, or ``seek`` and ``read`` as a file's."""

    def __init__(self, local: Path | str | Made) -> None:
        self.made = local if isinstance(local, Made) else None
        self.fd = -1 if self.made else os.open(local, os.O_RDONLY | portable.O_CLOEXEC | portable.O_BINARY)
        self.at = 0

    def pread(self, length: int, offset: int) -> bytes:
        return self.made.pread(length, offset) if self.made else portable.pread(self.fd, length, offset)

    async def read_at(self, length: int, offset: int) -> bytes:
        """``pread`` for a stream on the event loop: a made file's bytes are made in a thread (reading many
        small files, or waiting for its index), a file's read here as before."""
        if self.made is None:
            return self.pread(length, offset)
        return await asyncio.to_thread(self.made.pread, length, offset)

    def seek(self, offset: int) -> int:
        self.at = offset
        return offset

    def read(self, length: int) -> bytes:
        data = self.pread(length, self.at)
        self.at += len(data)
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            portable.forget(self.fd)  # its seek lock, where the OS has no pread (a reused number starts clean)
            self.fd = -1

    def __enter__(self) -> LocalReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_local(local: Path | str | Made) -> LocalReader:
    return LocalReader(local)


def whole_sha256(local: Path | str | Made, halt: threading.Event | None = None) -> str:
    """The whole file's SHA-256 (blocking: run it in a thread); "" once ``halt`` is set."""
    return whole_digest(local, "sha256", halt)


def whole_digest(local: Path | str | Made, algorithm: str, halt: threading.Event | None = None) -> str:
    """The whole file's digest (blocking: run it in a thread); a made file's SHA-256 is its own in-order pass,
    another algorithm (a server that offers only MD5) one more read of it. "" once ``halt`` is set: the
    transfer stopped, and a thread still reading would keep the process from ending."""
    if isinstance(local, Made) and algorithm == "sha256":
        return local.sha256(halt)
    digest = hashlib.new(algorithm)
    with open_local(local) as reader:
        at = 0
        while data := reader.pread(4 << 20, at):
            if halt is not None and halt.is_set():
                return ""
            digest.update(data)
            at += len(data)
    return digest.hexdigest()


def described(local: Path | str | Made) -> tuple[int, int, float]:
    """Size, mode and time, of a file here or of one made on demand."""
    if isinstance(local, Made):
        return local.size, local.mode, local.mtime
    info = os.stat(local)
    return info.st_size, info.st_mode, info.st_mtime


def packed_name(source: str) -> str:
    """The name ``--pack`` gives the archive of ``source`` when DEST is a folder: ``NAME.tar``."""
    return f"{Path(source).resolve().name}.tar"
