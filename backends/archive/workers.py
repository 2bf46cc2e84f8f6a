"""What one worker does with its share: pieces read at one offset and written at another, each hashed on the way.

These functions run in worker processes (``concurrent.futures``), so they take and return plain values: a job
is a tuple, a result a (piece number, SHA-256) pair. A file that changed since the walk (another size, another
time, another file under the name) stops the pack in a sentence: an archive that says it holds a file must hold
that file as it was.
"""

from __future__ import annotations

import functools
import hashlib
import os
import signal
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import Corrupt
from ..destination.shared import SharedPart
from ..host import portable
from . import headers
from .faults import changed

CHUNK = 4 << 20
#: the most pieces in one batch handed to a worker (the pack also bounds a batch by bytes)
BATCH_PIECES = 2000
#: files up to this size are read whole (ahead, by ``READERS`` threads) and written with their header at once
SMALL = 1 << 20
READERS = 4

#: (piece number, source file or "", walk identity, the header's ``meta`` (first pieces) or None, header offset,
#: data offset, start, length, hashed: False for a piece of a large file, whose own SHA-256 and pieces' are made
#: by the pack's in-order pass (the worker then has the kernel copy it, never reading it through itself))
PackJob = tuple[int, str, tuple, tuple | None, int, int, int, int, bool]
#: small files read by one reader thread at a time (a future a file cost more than the reading)
READ_GROUP = 32
#: the most bytes gathered before one write: small files side by side in the archive go out together
RUN_BYTES = 4 << 20


def pack_batch(part: SharedPart, jobs: list[PackJob]) -> list[tuple[int, str]]:
    """The batch's pieces written in order. Small files are read ahead, ``READ_GROUP`` at a time, by
    ``READERS`` threads (``pread`` lets go of the interpreter), so a cold disk's waits overlap the hashing and
    writing here; small files side by side in the archive go out in one write of up to ``RUN_BYTES``."""
    fd = part.open()
    out = _Run(part, fd)
    try:
        with ThreadPoolExecutor(max_workers=READERS) as readers:
            groups = _small_groups(jobs)
            ends = dict(groups)
            ahead = {start: readers.submit(_read_group, jobs[start:end]) for start, end in groups[:READERS * 2]}
            following = READERS * 2
            results = []
            i = 0
            while i < len(jobs):
                if i in ahead:
                    end = ends[i]
                    if following < len(groups):
                        start2, end2 = groups[following]
                        ahead[start2] = readers.submit(_read_group, jobs[start2:end2])
                        following += 1
                    for job, data in zip(jobs[i:end], ahead.pop(i).result(), strict=True):
                        header = headers.header(*job[3])
                        if len(header) != job[5] - job[4]:
                            raise RuntimeError(f"the header of {job[1]} came out another length than planned")
                        out.add(job[4], header + data + bytes(-len(data) % 512))
                        results.append((job[0], hashlib.sha256(data).hexdigest()))
                    i = end
                    continue
                out.flush()
                results.append(_pack_one(part, fd, jobs[i]))
                i += 1
            out.flush()
            return results
    finally:
        os.close(fd)


def _small(job: PackJob) -> bool:
    return bool(job[1]) and job[3] is not None and job[7] <= SMALL


def _small_groups(jobs: list[PackJob]) -> list[tuple[int, int]]:
    """(start, end) of each run of at most ``READ_GROUP`` small-file jobs, in order."""
    groups, i = [], 0
    while i < len(jobs):
        if not _small(jobs[i]):
            i += 1
            continue
        end = i
        while end < len(jobs) and end - i < READ_GROUP and _small(jobs[end]):
            end += 1
        groups.append((i, end))
        i = end
    return groups


def _read_group(jobs: list[PackJob]) -> list[bytes]:
    return [read_source(job[1], job[2], job[6], job[7]) for job in jobs]


class _Run:
    """Bytes for consecutive places of the part file, written in one call when the next one is elsewhere or
    ``RUN_BYTES`` are held."""

    def __init__(self, part: SharedPart, fd: int) -> None:
        self.part, self.fd = part, fd
        self.start, self.held, self.size = 0, [], 0

    def add(self, offset: int, data: bytes) -> None:
        if self.held and offset != self.start + self.size:
            self.flush()
        if not self.held:
            self.start = offset
        self.held.append(data)
        self.size += len(data)
        if self.size >= RUN_BYTES:
            self.flush()

    def flush(self) -> None:
        if self.held:
            self.part.write(self.fd, b"".join(self.held), self.start)
            self.held, self.size = [], 0


def _pack_one(part: SharedPart, fd: int, job: PackJob) -> tuple[int, str]:
    """A folder's or link's header, or a large file's piece: copied by the kernel where its digest is the
    in-order pass's to make (``hashed`` False), else read, hashed and written ``CHUNK`` at a time."""
    number, source, identity, meta, header_at, data_at, start, length, hashed = job
    if meta is not None:
        part.write(fd, headers.header(*meta), header_at)
    if not source:
        return number, hashlib.sha256().hexdigest()
    with checked_source(source, identity) as src:
        if not hashed and part.copy_in(fd, src, length, start, data_at):
            return number, ""
        digest = _copy(part, fd, src, start, data_at, length, source, identity)
    return number, digest.hexdigest() if hashed else ""


def read_source(source: str, identity: tuple, start: int, length: int) -> bytes:
    """``length`` bytes of ``source`` from ``start``, when it is still the file the walk saw, unchanged."""
    with checked_source(source, identity) as src:
        return _read(src, start, length, source, identity)


@contextmanager
def checked_source(source: str, identity: tuple) -> Iterator[int]:
    """``source`` opened (never through a link), when it is still the file the walk saw; on leaving, its size
    and time must still be the walk's, or the bytes read from it are refused."""
    try:
        src = os.open(source, os.O_RDONLY | portable.O_NOFOLLOW | portable.O_BINARY)
    except OSError as exc:
        raise changed(source, f"it could not be opened again ({exc.strerror})") from None
    try:
        if os.fstat(src).st_ino != identity[1]:  # not the device: another node numbers its mounts its own way
            raise changed(source, "another file took its name")
        yield src
        st = os.fstat(src)
        if (st.st_size, st.st_mtime_ns) != identity[2:]:
            raise changed(source, f"its size or time changed (now {st.st_size:,} bytes)")
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


def worker_count(asked: int | None) -> int:
    """``--workers auto``: one a core."""
    return max(1, asked if asked else (os.cpu_count() or 1))


def whole_digest(source: str, identity: tuple, halt, piece: int) -> tuple[str, list[str]]:
    """A large file's own SHA-256 and each ``piece``'s, read in order in one pass (its pieces went to several
    workers, which had the kernel copy them); ``halt``: an event that ends it early (the pack stopped)."""
    digest, pieces = hashlib.sha256(), []
    with checked_source(source, identity) as src:
        for at in range(0, identity[2], piece):
            own = hashlib.sha256()
            for start in range(at, min(at + piece, identity[2]), CHUNK):
                if halt.is_set():
                    return "", []
                data = _read(src, start, min(CHUNK, at + piece - start, identity[2] - start), source, identity)
                digest.update(data)
                own.update(data)
            pieces.append(own.hexdigest())
    return digest.hexdigest(), pieces


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
        if source is not None:
            return [(job[0], _unpack_one(fd, job, source)) for job in jobs]
        results = []
        for group in _runs(jobs):
            if len(group) == 1:
                results.append((group[0][0], _unpack_one(fd, group[0])))
            else:
                results.extend(_unpack_run(fd, group))
        return results
    finally:
        os.close(fd)


def _runs(jobs: list[UnpackJob]) -> Iterator[list[UnpackJob]]:
    """The jobs in groups whose bytes lie close together in the archive (small whole members, in order): one
    ``pread`` of up to ``RUN_BYTES`` serves a group, where a read a member cost a system call each."""
    group: list[UnpackJob] = []
    for job in jobs:
        small = not isinstance(job[5], SharedPart) and job[3] <= SMALL
        if group and (not small or job[2] < group[-1][2] or job[2] + job[3] - group[0][2] > RUN_BYTES):
            yield group
            group = []
        if not small:
            yield [job]
            continue
        group.append(job)
    if group:
        yield group


def _unpack_run(fd: int, group: list[UnpackJob]) -> list[tuple[int, str]]:
    """Small members read in one ``pread``, each checked against its SHA-256 and written whole
    (``write_whole``); a member whose bytes the archive does not hold is said, the others go on."""
    from ..destination import write_whole

    first = group[0][2]
    span = group[-1][2] + group[-1][3] - first
    data = memoryview(portable.pread(fd, span, first))
    results = []
    for number, name, at, length, expected, (path, mode, mtime), _ in group:
        piece = data[at - first:at - first + length]
        if len(piece) < length:
            raise Corrupt(f"The archive ends inside {name}, {len(piece):,} of its {length:,} bytes in.")
        if expected and hashlib.sha256(piece).hexdigest() != expected:
            results.append((number, f"{name} does not match its checksum"))
            continue
        if write_whole(path, piece, mode, mtime):
            results.append((number, ""))
        else:
            results.append((number, f"{name} was replaced by another process as it was named"))
    return results


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
    """The member's bytes ``CHUNK`` at a time, the next read by a helper thread while this one is hashed and
    written (``pread``, SHA-256 and ``pwrite`` all leave the GIL): the disk reads the archive while the kernel
    writes the file, where one after the other left each waiting on the other (L-shaped set, one worker)."""
    done = 0
    ahead = _ahead().submit(portable.pread, fd, min(CHUNK, length), at) if length else None
    while done < length:
        data = ahead.result()
        if not data:
            raise Corrupt(f"The archive ends inside {name}, {done:,} of its {length:,} bytes in.")
        after = done + len(data)
        if after < length:
            ahead = _ahead().submit(portable.pread, fd, min(CHUNK, length - after), at + after)
        yield done, data
        done = after


@functools.cache
def _ahead() -> ThreadPoolExecutor:
    """The one read-ahead thread of this process (a worker's, or the command's own with one worker)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="archive-read-ahead")


def run(batches: list, work, common, workers: int, on_done, runner=None, cost=None) -> None:
    """``work(common, batch)`` for every batch, on ``workers`` processes (or here, with one), or across the
    ranks of an MPI job (``runner``: ``ranks.Runner``, dealing batches by ``cost(batch)``); ``on_done`` gets
    each batch's results as it ends, in the order they end."""
    if runner is not None:
        runner.run(batches, work, common, on_done, cost=cost)
        return
    if workers <= 1:
        for batch in batches:
            on_done(work(common, batch))
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=ignore_interrupts)
    futures: list[Future] = [pool.submit(work, common, batch) for batch in batches]
    try:
        for future in as_completed(futures):
            on_done(future.result())
    finally:
        # a stop (Ctrl-C reaches the parent; the workers ignore it) waits only for the batches running now
        pool.shutdown(wait=True, cancel_futures=True)


def ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops handing out work and records what is done."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
