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

import hashlib
import os
import threading
from pathlib import Path

from ..destination import os_error
from ..host import portable

BLOCK = 4 * 1024 * 1024


class FollowingHasher:
    def __init__(self, path: str | os.PathLike, algorithms: tuple[str, ...] = ("sha256",)) -> None:
        self._path = path
        self._fd = os.open(path, os.O_RDONLY | portable.O_CLOEXEC | portable.O_BINARY)
        self._reopened = False
        self._hashes = {alg: hashlib.new(alg) for alg in algorithms}
        self._pos = 0
        self._target = 0
        self._stopped = False
        self._error: OSError | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="ferry-hasher", daemon=True)
        self._thread.start()

    @property
    def position(self) -> int:
        return self._pos

    def advance(self, upto: int) -> None:
        """Bytes ``[0, upto)`` are final; hash them when the thread gets to it."""
        if upto > self._target:
            with self._cond:
                self._target = max(self._target, upto)
                self._cond.notify()

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
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pos >= self._target and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                start, end = self._pos, self._target
            try:
                while start < end:
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
