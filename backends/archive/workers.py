"""What one worker does with its share: pieces read at one offset and written at another, each hashed on the way.

These functions run in worker processes (``concurrent.futures``), so they take and return plain values: a job
is a tuple, a result a (piece number, SHA-256) pair. A file that changed since the walk (another size, another
time, another file under the name) stops the pack in a sentence: an archive that says it holds a file must hold
that file as it was.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from ..core.errors import Corrupt, LocalError
from ..destination.shared import SharedPart
from ..host import portable

CHUNK = 4 << 20

#: (piece number, source file or "", walk identity, header bytes, header offset, data offset, start, length)
PackJob = tuple[int, str, tuple, bytes, int, int, int, int]


def pack_batch(part: SharedPart, jobs: list[PackJob]) -> list[tuple[int, str]]:
    fd = part.open()
    try:
        return [_pack_one(part, fd, job) for job in jobs]
    finally:
        os.close(fd)


def _pack_one(part: SharedPart, fd: int, job: PackJob) -> tuple[int, str]:
    number, source, identity, header, header_at, data_at, start, length = job
    if header:
        part.write(fd, header, header_at)
    digest = hashlib.sha256()
    if not source:
        return number, digest.hexdigest()
    try:
        src = os.open(source, os.O_RDONLY | portable.O_NOFOLLOW | portable.O_BINARY)
    except OSError as exc:
        raise changed(source, f"it could not be opened again ({exc.strerror})") from None
    try:
        st = os.fstat(src)
        if (st.st_dev, st.st_ino) != identity[:2]:
            raise changed(source, "another file took its name")
        done = 0
        while done < length:
            data = portable.pread(src, min(CHUNK, length - done), start + done)
            if not data:
                raise changed(source, f"it is now shorter than the {identity[2]:,} bytes it had")
            digest.update(data)
            part.write(fd, data, data_at + done)
            done += len(data)
        st = os.fstat(src)
        if (st.st_size, st.st_mtime_ns) != identity[2:]:
            raise changed(source, f"its size or time changed (now {st.st_size:,} bytes)")
    finally:
        os.close(src)
    return number, digest.hexdigest()


def changed(source: str, why: str) -> LocalError:
    return LocalError(f"{source} changed while it was packed ({why}); the archive was not finished. Run the same "
                      "command again once nothing writes to it.")


def whole_digest(source: str, identity: tuple) -> str:
    """A large file's own SHA-256, read in order (its pieces went to several workers)."""
    digest = hashlib.sha256()
    with open(source, "rb", buffering=0) as f:
        if os.fstat(f.fileno())[1] != identity[1]:
            raise changed(source, "another file took its name")
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


#: (piece number, member name, data offset in the archive, length, expected SHA-256 or "",
#:  where it goes: a SharedPart for a large file, else the final path; start within the member)
UnpackJob = tuple[int, str, int, int, str, object, int]


def unpack_batch(archive: str, jobs: list[UnpackJob]) -> list[tuple[int, str]]:
    """Each job's bytes read from the archive and written out; returns (piece number, "" or why it failed)."""
    fd = os.open(archive, os.O_RDONLY | portable.O_BINARY)
    try:
        return [(job[0], _unpack_one(fd, job)) for job in jobs]
    finally:
        os.close(fd)


def _unpack_one(fd: int, job: UnpackJob) -> str:
    from ..destination import WholeFile

    number, name, at, length, expected, where, start = job
    digest = hashlib.sha256()
    if isinstance(where, SharedPart):
        out = where.open()
        try:
            for done, data in _chunks(fd, at, length, name):
                digest.update(data)
                where.write(out, data, start + done)
        finally:
            os.close(out)
        return "" if not expected or digest.hexdigest() == expected else f"{name}: a piece does not match its checksum"
    path, mode, mtime = where
    with WholeFile(Path(path), length, name) as made:
        for _, data in _chunks(fd, at, length, name):
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
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures: list[Future] = [pool.submit(work, common, batch) for batch in batches]
        try:
            for future in _as_done(futures):
                on_done(future.result())
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _as_done(futures: list[Future]):
    from concurrent.futures import as_completed

    return as_completed(futures)
