"""What one worker does with its share: pieces read at one offset and written at another, each hashed on the way.

These functions run in worker processes (``concurrent.futures``), so they take and return plain values: a job
is a tuple, a result a (piece number, SHA-256) pair. A file that changed since the walk (another size, another
time, another file under the name) stops the pack in a sentence: an archive that says it holds a file must hold
that file as it was.
"""

from __future__ import annotations

import hashlib
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path

from ..core.errors import Corrupt, LocalError
from ..destination.shared import SharedPart
from ..host import portable

CHUNK = 4 << 20
#: files up to this size are read whole (ahead, by ``READERS`` threads) and written with their header at once
SMALL = 1 << 20
READERS = 4
#: small files read ahead of the one being written
READ_AHEAD = 64

#: (piece number, source file or "", walk identity, header bytes, header offset, data offset, start, length)
PackJob = tuple[int, str, tuple, bytes, int, int, int, int]


def pack_batch(part: SharedPart, jobs: list[PackJob]) -> list[tuple[int, str]]:
    """The batch's pieces written in order. Small files are read ahead by ``READERS`` threads (``pread``
    lets go of the interpreter), so a cold disk's waits overlap the hashing and writing here."""
    fd = part.open()
    try:
        with ThreadPoolExecutor(max_workers=READERS) as readers:
            ahead: dict[int, Future] = {}

            def want(i: int) -> None:
                job = jobs[i]
                if job[1] and job[3] and job[7] <= SMALL:
                    ahead[i] = readers.submit(read_source, job[1], job[2], job[6], job[7])

            for i in range(min(READ_AHEAD, len(jobs))):
                want(i)
            results = []
            for i, job in enumerate(jobs):
                if i + READ_AHEAD < len(jobs):
                    want(i + READ_AHEAD)
                if i in ahead:
                    data = ahead.pop(i).result()
                    part.write(fd, job[3] + data, job[4])  # header and data in one write
                    results.append((job[0], hashlib.sha256(data).hexdigest()))
                else:
                    results.append(_pack_one(part, fd, job))
            return results
    finally:
        os.close(fd)


def _pack_one(part: SharedPart, fd: int, job: PackJob) -> tuple[int, str]:
    """A folder's or link's header, or a large file's piece (read and written ``CHUNK`` at a time)."""
    number, source, identity, header, header_at, data_at, start, length = job
    if header:
        part.write(fd, header, header_at)
    if not source:
        return number, hashlib.sha256().hexdigest()
    try:
        src = os.open(source, os.O_RDONLY | portable.O_NOFOLLOW | portable.O_BINARY)
    except OSError as exc:
        raise changed(source, f"it could not be opened again ({exc.strerror})") from None
    try:
        if os.fstat(src).st_ino != identity[1]:
            raise changed(source, "another file took its name")
        digest = _copy(part, fd, src, start, data_at, length, source, identity)
        st = os.fstat(src)
        if (st.st_size, st.st_mtime_ns) != identity[2:]:
            raise changed(source, f"its size or time changed (now {st.st_size:,} bytes)")
    finally:
        os.close(src)
    return number, digest.hexdigest()


def read_source(source: str, identity: tuple, start: int, length: int) -> bytes:
    """``length`` bytes of ``source`` from ``start``, when it is still the file the walk saw, unchanged."""
    try:
        src = os.open(source, os.O_RDONLY | portable.O_NOFOLLOW | portable.O_BINARY)
    except OSError as exc:
        raise changed(source, f"it could not be opened again ({exc.strerror})") from None
    try:
        st = os.fstat(src)
        if st.st_ino != identity[1]:  # not the device: another node of a cluster numbers its mounts its own way
            raise changed(source, "another file took its name")
        data = _read(src, start, length, source, identity)
        st = os.fstat(src)
        if (st.st_size, st.st_mtime_ns) != identity[2:]:
            raise changed(source, f"its size or time changed (now {st.st_size:,} bytes)")
        return data
    finally:
        os.close(src)


def _read(src: int, start: int, length: int, source: str, identity: tuple) -> bytes:
    data = portable.pread(src, length, start)
    while len(data) < length:
        more = portable.pread(src, length - len(data), start + len(data))
        if not more:
            raise changed(source, f"it is now shorter than the {identity[2]:,} bytes it had")
        data += more
    return data


def _copy(part: SharedPart, fd: int, src: int, start: int, data_at: int, length: int, source: str,
          identity: tuple):
    digest = hashlib.sha256()
    done = 0
    while done < length:
        data = portable.pread(src, min(CHUNK, length - done), start + done)
        if not data:
            raise changed(source, f"it is now shorter than the {identity[2]:,} bytes it had")
        digest.update(data)
        part.write(fd, data, data_at + done)
        done += len(data)
    return digest


def changed(source: str, why: str) -> LocalError:
    return LocalError(f"{source} changed while it was packed ({why}); the archive was not finished. Run the same "
                      "command again once nothing writes to it.")


def whole_digest(source: str, identity: tuple, halt) -> str:
    """A large file's own SHA-256, read in order (its pieces went to several workers); ``halt``: an event
    that ends it early (the pack stopped)."""
    digest = hashlib.sha256()
    with open(source, "rb", buffering=0) as f:
        if os.fstat(f.fileno()).st_ino != identity[1]:
            raise changed(source, "another file took its name")
        for chunk in iter(lambda: f.read(CHUNK), b""):
            if halt.is_set():
                return ""
            digest.update(chunk)
    return digest.hexdigest()


#: (piece number, member name, data offset in the archive, length, expected SHA-256 or "",
#:  where it goes: a SharedPart for a large file, else the final path; start within the member)
UnpackJob = tuple[int, str, int, int, str, object, int]


def unpack_batch(common: tuple, jobs: list[UnpackJob]) -> list[tuple[int, str]]:
    """Each job's bytes read from the archive (``common``: its path, and its zstd frames or None) and written
    out; returns (piece number, "" or why it failed)."""
    archive, frames = common
    fd = os.open(archive, os.O_RDONLY | portable.O_BINARY)
    source = _Frames(fd, frames, archive) if frames is not None else None
    try:
        return [(job[0], _unpack_one(fd, job, source)) for job in jobs]
    finally:
        os.close(fd)


class _Frames:
    """Tar bytes from a .tar.zst's frames, the frame last decoded kept (a batch's jobs share a few frames)."""

    def __init__(self, fd: int, frames, where: str) -> None:
        self.fd, self.frames, self.where = fd, frames, where
        self.number, self.data = -1, b""

    def chunks(self, at: int, length: int, name: str):
        from . import seekable

        done = 0
        for number in self.frames.frames_for(at, length):
            if number != self.number:
                self.number, self.data = number, seekable.decode(self.fd, self.frames, number, self.where)
            base = self.frames.tar_starts[number]
            piece = self.data[max(0, at + done - base):at + length - base]
            if piece:
                yield done, piece
                done += len(piece)
        if done < length:
            raise Corrupt(f"The archive ends inside {name}, {done:,} of its {length:,} bytes in.")


def _unpack_one(fd: int, job: UnpackJob, frames: _Frames | None = None) -> str:
    from ..destination import WholeFile

    number, name, at, length, expected, where, start = job
    chunks = frames.chunks(at, length, name) if frames is not None else _chunks(fd, at, length, name)
    digest = hashlib.sha256()
    if isinstance(where, SharedPart):
        out = where.open()
        try:
            for done, data in chunks:
                digest.update(data)
                where.write(out, data, start + done)
        finally:
            os.close(out)
        return "" if not expected or digest.hexdigest() == expected else f"{name}: a piece does not match its checksum"
    path, mode, mtime = where
    with WholeFile(Path(path), length, name) as made:
        for _, data in chunks:
            digest.update(data)
            made.write(data)
        if expected and digest.hexdigest() != expected:
            return f"{name} does not match its checksum"
        made.commit(mode=mode, mtime_ns=mtime)
    return ""


def _chunks(fd: int, at: int, length: int, name: str):
    done = 0
    while done < length:
        data = portable.pread(fd, min(CHUNK, length - done), at + done)
        if not data:
            raise Corrupt(f"The archive ends inside {name}, {done:,} of its {length:,} bytes in.")
        yield done, data
        done += len(data)


def run(batches: list, work, common, workers: int, on_done) -> None:
    """``work(common, batch)`` for every batch, on ``workers`` processes (or here, with one); ``on_done`` gets
    each batch's results as it ends, in the order they end."""
    if workers <= 1:
        for batch in batches:
            on_done(work(common, batch))
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_interrupts)
    futures: list[Future] = [pool.submit(work, common, batch) for batch in batches]
    try:
        for future in as_completed(futures):
            on_done(future.result())
    finally:
        # a stop (Ctrl-C reaches the parent; the workers ignore it) waits only for the batches running now
        pool.shutdown(wait=True, cancel_futures=True)


def _ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops handing out work and records what is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
