"""The destination side of a download: ``NAME.part``, its resume record, the final rename.

Rules every backend gets for free here:

* the final name appears only after the data is complete and verified (atomic
  ``rename`` of ``NAME.part``), so a crash, a cancel or a failed checksum never
  leaves a half-written file under the real name;
* progress is recorded in a sidecar ``NAME.part.ferry`` (JSON: the source's
  identity and the byte ranges done), replaced atomically; a later run trusts the
  partial file only when the source's size and validators (ETag, Last-Modified)
  still match;
* an exclusive ``flock`` on the part file stops two Ferry processes (GUI and CLI,
  say) from writing the same file;
* space is reserved up front with ``fallocate`` where the file system supports
  it, so a full disk is reported at the start, not at 97 %.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import LocalError, NoSpace
from .chunks import Interval

STATE_SUFFIX = ".ferry"
STATE_VERSION = 1
#: this process's mark in every resume record it writes. A source without validators (no ETag, no
#: Last-Modified) cannot show that bytes an earlier run kept belong to the file it serves now: only this
#: run's own ranges are trusted for it, as curl and aria2c trust theirs within one run.
RUN = os.urandom(8).hex()


@dataclass(frozen=True)
class Identity:
    """What must not change between runs for a partial file to be trusted."""

    source: str
    size: int | None
    etag: str | None
    last_modified: str | None

    @property
    def validated(self) -> bool:
        """Whether the server gave anything that changes when the file does (besides its size)."""
        return bool(self.etag or self.last_modified)

    def matches(self, other: dict) -> bool:
        return (
            other.get("source") == self.source
            and other.get("size") == self.size
            and same_etag(other.get("etag"), self.etag)
            and other.get("last_modified") == self.last_modified
        )


def same_etag(a: str | None, b: str | None) -> bool:
    """Whether two ETags name the same version: equal, or equal but for a weak ``W/`` prefix. Apache marks the
    ETag of a file changed within the last second weak and the same tag strong a second later (its tag is
    inode, size and time), so a kill in that second, or a download that crosses it, saw a "different" file.
    Size and Last-Modified are compared beside it, so a weak tag alone never vouches for the bytes."""
    if a is None or b is None:
        return a == b
    return a.removeprefix("W/") == b.removeprefix("W/")


def human_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def check_destination(dest: Path, overwrite: bool) -> None:
    """Fail early, in words, when the destination cannot take the file."""
    folder = dest.parent
    if not folder.is_dir():
        raise LocalError(f"The destination folder {folder} does not exist. Create it first, or choose another folder.")
    if dest.is_dir():
        raise LocalError(f"{dest} is a folder. Give a file name, or the folder to put the file in.")
    if dest.exists() and not overwrite:
        raise LocalError(f"{dest} already exists. Remove it, choose another name, or pass --overwrite.")
    if os.statvfs(folder).f_flag & os.ST_RDONLY:
        raise LocalError(f"{folder} is on a read-only file system. Choose another destination folder.")
    if not os.access(folder, os.W_OK):
        raise LocalError(f"Ferry cannot write to {folder} (permission denied). Choose a folder you can write to.")


def room_for(dest: Path, size: int, already: int = 0) -> None:
    """Fail in words when the disk holding ``dest`` cannot take ``size - already`` more bytes."""
    folder = dest.parent
    try:
        stat = os.statvfs(folder)
    except OSError:
        return  # the transfer itself will say what is wrong with the folder
    free = stat.f_bavail * stat.f_frsize
    if size - already > free:
        raise _no_space(folder, size - already, free)


def _no_space(folder: Path, needed: int, free: int) -> NoSpace:
    return NoSpace(f"Not enough free space in {folder}: the file needs {human_size(needed)} more, only "
                   f"{human_size(free)} is free. Free some space or choose another folder.")


def os_error(exc: OSError, path: Path, doing: str) -> LocalError:
    if exc.errno == errno.ENOSPC:
        return NoSpace(f"The disk holding {path.parent} is full. Free some space there and run the transfer again.")
    if exc.errno in (errno.EROFS,):
        return LocalError(f"{path.parent} is on a read-only file system. Choose another destination folder.")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return LocalError(f"Ferry cannot write to {path.parent} (permission denied). Choose a folder you can write to.")
    if exc.errno == errno.EDQUOT:
        return NoSpace(f"Your disk quota on {path.parent} is used up. Free some space or ask IT for more.")
    return LocalError(f"Could not {doing} {path}: {exc.strerror}.")


_libc = None


def _fallocate(fd: int, size: int) -> bool:
    """Reserve ``size`` bytes without writing them; False where unsupported."""
    global _libc
    if not hasattr(os, "posix_fallocate"):
        return False
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    fn = getattr(_libc, "fallocate64", None) or getattr(_libc, "fallocate", None)
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if fn(fd, 0, 0, size) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
        return False  # glibc's posix_fallocate would write zeros: too slow for 300 GB
    raise OSError(err, os.strerror(err))


class PartFile:
    """``dest.part`` plus its resume record; one per transfer attempt."""

    def __init__(self, dest: Path | str) -> None:
        self.dest = Path(dest)
        self.part = self.dest.with_name(self.dest.name + ".part")
        self.state = self.dest.with_name(self.part.name + STATE_SUFFIX)
        self.fd: int | None = None
        self.identity: Identity | None = None
        self.last_save = 0.0

    # -- opening -----------------------------------------------------------------
    def open(self, identity: Identity) -> list[Interval]:
        """Open (or create) the part file; returns the byte ranges already done."""
        self.lock()
        return self.adopt(identity)

    def lock(self) -> None:
        """Create or open the part file and take the lock (before the source's identity is known)."""
        if self.fd is None:  # a restart after the source changed keeps the file (and its lock) open
            self._open_locked()

    def peek(self, source: str) -> list[Interval]:
        """The ranges a previous run recorded for ``source``: a hint until ``adopt`` confirms them."""
        try:
            record = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return []
        if record.get("version") != STATE_VERSION or record.get("source") != source:
            return []
        return [(int(s), int(e)) for s, e in record.get("done", [])]

    def adopt(self, identity: Identity, *, proven_later: bool = False) -> list[Interval]:
        """Settle on the source's identity: keep what a previous run did for the same file,
        else start empty; reserve the space. Returns the ranges already done.

        ``proven_later``: a checksum given by the user will prove the whole file at the end, so an earlier
        run's bytes may be kept even when the source has no validators (a mismatch then fails the job and
        drops the record, never exit 0)."""
        self.identity = identity
        done = self._trusted_ranges(identity, proven_later)
        if not done:
            self._truncate()
        if identity.size is not None:
            self._reserve(identity.size, already=sum(e - s for s, e in done))
        return done

    def _open_locked(self) -> None:
        """Open ``NAME.part`` and take its lock, or fail without touching it.

        The lock is on the inode. A winner that gives up an empty part file unlinks it under its lock
        (``close``), so a file opened just before that unlink can be locked by a second process that then
        writes to a name nobody sees: after locking, the path must still lead to the inode we hold.
        """
        for _ in range(5):
            try:
                fd = os.open(self.part, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise os_error(exc, self.part, "create") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)  # not ours: the file, its record and its lock belong to the other process
                raise LocalError(
                    f"{self.dest} is already being transferred by another Ferry process. Wait for it, or cancel "
                    "it there."
                ) from None
            try:
                same = os.stat(self.part).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return
            os.close(fd)  # the name was unlinked (or replaced) between our open and our lock: open it again
        raise LocalError(f"{self.part} keeps disappearing while Ferry opens it. Check what else writes to "
                         f"{self.dest.parent}, then run the transfer again.")

    def recorded(self, identity: Identity, proven_later: bool = False) -> list[Interval]:
        """The ranges the record holds when it was written for this very source (same size and validators;
        without validators, only by this run unless ``proven_later``); [] otherwise. The part file is not read."""
        try:
            record = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return []
        if record.get("version") != STATE_VERSION or not identity.matches(record):
            return []
        if not identity.validated and record.get("run") != RUN and not proven_later:
            return []  # another run's bytes from a server that cannot say whether its file changed
        return [(int(s), int(e)) for s, e in record.get("done", [])]

    def _trusted_ranges(self, identity: Identity, proven_later: bool = False) -> list[Interval]:
        if identity.size is None or os.fstat(self.fd).st_size != identity.size:
            return []
        return self.recorded(identity, proven_later)

    def _truncate(self) -> None:
        try:
            os.ftruncate(self.fd, 0)
        except OSError as exc:
            raise os_error(exc, self.part, "reset") from exc
        self.state.unlink(missing_ok=True)

    def _reserve(self, size: int, already: int) -> None:
        folder = self.dest.parent
        try:
            stat = os.statvfs(folder)
            free = stat.f_bavail * stat.f_frsize
            have = os.fstat(self.fd).st_blocks * 512
            need = size - max(have, 0)
            if need > free:
                raise _no_space(folder, size - already, free)
            if not _fallocate(self.fd, size):
                os.ftruncate(self.fd, size)
        except OSError as exc:
            raise os_error(exc, self.part, "reserve space for") from exc

    def restart(self) -> None:
        """Throw away everything written (the source changed): start from zero bytes."""
        self._truncate()
        self.identity = None

    # -- writing -----------------------------------------------------------------
    def write(self, data: bytes | memoryview, offset: int) -> None:
        try:
            view = memoryview(data)
            while view:
                n = os.pwrite(self.fd, view, offset)
                view, offset = view[n:], offset + n
        except OSError as exc:
            raise os_error(exc, self.part, "write to") from exc

    def save_state(self, done: list[Interval]) -> None:
        """Record progress (atomic replace); cheap enough to call after every lease."""
        if self.identity is None:
            return
        record = {
            "version": STATE_VERSION,
            "source": self.identity.source,
            "size": self.identity.size,
            "etag": self.identity.etag,
            "last_modified": self.identity.last_modified,
            "done": [[s, e] for s, e in done],
            "saved": time.time(),
            "run": RUN,
        }
        tmp = self.state.with_name(self.state.name + ".tmp")
        try:
            tmp.write_text(json.dumps(record))
            os.replace(tmp, self.state)
        except OSError as exc:
            raise os_error(exc, self.state, "save progress to") from exc
        self.last_save = time.monotonic()

    def sync(self) -> None:
        if self.fd is not None:
            try:
                os.fdatasync(self.fd)
            except OSError as exc:
                raise os_error(exc, self.part, "flush") from exc

    # -- ending --------------------------------------------------------------------
    def finish(self, size: int | None = None) -> Path:
        """Make the verified file appear under its final name, durably."""
        if size is not None and os.fstat(self.fd).st_size != size:
            os.ftruncate(self.fd, size)
        self.sync()
        try:
            os.replace(self.part, self.dest)
        except OSError as exc:
            raise os_error(exc, self.dest, "rename the finished file to") from exc
        self.state.unlink(missing_ok=True)
        self.close()
        try:
            dfd = os.open(self.dest.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass  # the rename is done; a folder fsync is a best effort on some file systems
        return self.dest

    def discard(self) -> None:
        """Remove the partial file and its record (cancel)."""
        self.close()
        self.part.unlink(missing_ok=True)
        self.state.unlink(missing_ok=True)

    def close(self) -> None:
        """Close (and unlock); an empty part file that never learned its source is removed."""
        if self.fd is None:
            return
        try:
            if self.identity is None and os.fstat(self.fd).st_size == 0 and not self.state.exists():
                self.part.unlink(missing_ok=True)  # still under our lock: nobody else is using it
        except OSError:
            pass
        os.close(self.fd)  # also drops the flock
        self.fd = None
