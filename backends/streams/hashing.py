"""Hash a file while it is still being written, right behind the transfer.

Parallel streams write out of order, so a digest cannot be fed from the network.
Instead a thread reads back the part of the file that is already complete from
offset 0 (the *contiguous prefix*, which ``ChunkMap`` grows front to back) and
hashes it. hashlib and ``pread`` release the GIL, so this runs on another core
while the event loop keeps receiving; at the end only the last few chunks are
left to hash. Reading back from the page cache also checks what is on disk, not
what was in a socket buffer.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from ..destination import os_error
from ..host import portable

T = TypeVar("T")

BLOCK = 4 * 1024 * 1024


#: threads that hash every file in flight, shared (hashlib and ``pread`` release the GIL: more than the cores
#: buy nothing); a thread started per file cost the event loop a wait for its start each time, a fifth of the
#: loop's time in a study of 1,000 small runs
WORKERS = 4
TURN = 64 * 1024 * 1024
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="ferry-hasher")
        return _pool


class FollowingHasher:
    """Hashes ``[0, upto)`` of a file as ``advance`` says it is final, on the shared hashing threads: a turn
    hashes whatever is final, then gives its thread back, so many files in flight share a few threads."""

    def __init__(self, path: str | os.PathLike, algorithms: tuple[str, ...] = ("sha256",)) -> None:
        self._path = path
        self._fd = os.open(path, os.O_RDONLY | portable.O_CLOEXEC | portable.O_BINARY)
        self._reopened = False
        self._hashes = {alg: hashlib.new(alg) for alg in algorithms}
        self._pos = 0
        self._target = 0
        self._stopped = False
        self._turn = False  # a turn is queued or running on the shared threads
        self._error: OSError | None = None
        self._cond = threading.Condition()

    @property
    def position(self) -> int:
        return self._pos

    def advance(self, upto: int) -> None:
        """Bytes ``[0, upto)`` are final; hash them when a hashing thread gets to it."""
        if upto <= self._target:
            return
        with self._cond:
            self._target = max(self._target, upto)
            if self._turn or self._stopped or self._error is not None:
                return
            self._turn = True
        _workers().submit(self._run)

    def finish(self, size: int) -> dict[str, str]:
        """Block until ``[0, size)`` is hashed; returns ``{algorithm: hexdigest}``.

        Call from a worker thread (the engine uses ``asyncio.to_thread``).
        """
        self.advance(size)
        with self._cond:
            while self._pos < size and self._error is None and not self._stopped:
                self._cond.wait()
        self.stop()
        if self._error is not None:
            raise os_error(self._error, Path(self._path), "read back") from self._error
        return {alg: h.hexdigest() for alg, h in self._hashes.items()}

    def stop(self) -> None:
        """No more hashing; waits for a running turn to end before its file is closed."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            while self._turn:
                self._cond.wait()
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _run(self) -> None:
        """One turn: hash up to the target (it may move while hashing), at most ``TURN`` bytes, then give the
        thread back (a file arriving as fast as it is hashed would otherwise hold a thread the others wait for)."""
        turn_ends = self._pos + TURN
        while True:
            with self._cond:
                if self._stopped or self._pos >= self._target:
                    self._turn = False
                    self._cond.notify_all()
                    return
                if self._pos >= turn_ends:
                    _workers().submit(self._run)  # to the back of the queue, still this file's turn
                    return
                start, end = self._pos, min(self._target, turn_ends)
            try:
                while start < end and not self._stopped:
                    data = self._read(min(BLOCK, end - start), start)
                    if not data:
                        raise OSError(f"the file ended at {start} bytes while hashing")
                    for h in self._hashes.values():
                        h.update(data)
                    start += len(data)
                    self._pos = start
            except OSError as exc:
                with self._cond:
                    self._error = exc
                    self._turn = False
                    self._cond.notify_all()
                return
            with self._cond:
                self._cond.notify_all()

    def _read(self, size: int, at: int) -> bytes:
        """``pread``; a descriptor some file systems will not read through once the file grew under another one
        (fusefat's FAT answers EPERM) is opened again, once."""
        try:
            return portable.pread(self._fd, size, at)
        except OSError:
            if self._reopened:
                raise
            self._reopened = True
            fresh = os.open(self._path, os.O_RDONLY | portable.O_CLOEXEC | portable.O_BINARY)
            os.close(self._fd)
            self._fd = fresh
            return portable.pread(self._fd, size, at)


def algorithms_for(checksum) -> tuple[str, ...]:
    """The digests to compute while a file arrives: SHA-256 always, and the given checksum's algorithm when it is
    another one (an MD5 known only afterwards, from a sidecar or the server, costs one more pass then)."""
    if checksum is not None and checksum.algorithm != "sha256":
        return ("sha256", checksum.algorithm)
    return ("sha256",)


def hash_file(path: str | os.PathLike, algorithms: tuple[str, ...] = ("sha256",)) -> dict[str, str]:
    """Digest a whole file (a blocking helper for backends without a following hasher)."""
    hashes = {alg: hashlib.new(alg) for alg in algorithms}
    with open(path, "rb", buffering=0) as fh:
        while data := fh.read(BLOCK):
            for h in hashes.values():
                h.update(data)
    return {alg: h.hexdigest() for alg, h in hashes.items()}


def read_back(path: str | os.PathLike, algorithms: tuple[str, ...]) -> dict[str, str]:
    """``hash_file`` for a file just written, its errors in the destination's words (a blocking helper)."""
    try:
        return hash_file(path, algorithms)
    except OSError as exc:
        raise os_error(exc, Path(path), "read back") from exc


async def finished_in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread, ``finished`` (the work is one small file's: bounded)."""
    return await finished(asyncio.ensure_future(asyncio.to_thread(work)))


async def finished(running: asyncio.Future, under_way: Callable[[], bool] = lambda: True):
    """``running``'s result. On a cancel, ``under_way()`` says whether the work has begun on the caller's file:
    then it is waited for, so the caller never closes or removes a file a thread still writes or reads;
    otherwise it is dropped."""
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        if under_way():
            await asyncio.wait([running])
            if not running.cancelled():
                running.exception()  # seen: the cancel is what the caller hears
        else:
            running.cancel()
        raise


def manifest_digest(hashes: dict[str, str]) -> str:
    """A folder's digest: sha256 of its manifest, one ``HEX  PATH`` line per file in path order."""
    lines = "".join(f"{hashes[rel]}  {rel}\n" for rel in sorted(hashes))
    return hashlib.sha256(lines.encode("utf-8", "surrogateescape")).hexdigest()


def written_prefix(fd: int) -> int:
    """How far from offset 0 a file written out of order by another process is filled in.

    A tool that writes blocks at offsets (globus-url-copy's parallel streams) leaves holes
    where blocks have not arrived; ``SEEK_HOLE`` finds the first one, which is where the
    contiguous prefix ends. The last page before it may still be being copied in, so the
    caller keeps a margin behind the returned offset, and cross-checks the digest.
    """
    try:
        return os.lseek(fd, 0, os.SEEK_HOLE)
    except OSError:  # ENXIO: the file is still empty
        return 0
