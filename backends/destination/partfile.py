"""The destination side of a download: ``NAME.part``, its resume record, the final rename.

Rules every backend gets for free here:

* never more bytes than promised: once the source's size is known (HEAD, a listing, ``SIZE``, a report, a
  torrent), a write past it is the server's error (``BadAnswer``), stopped at once, not a disk filled;
* the part file is opened with no-follow semantics and its folder checked (``place``): a link there is
  refused, never written through;
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

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadAnswer, Corrupt, LocalError
from ..core.words import human_size
from ..host import portable
from .place import no_space, os_error, refuse_link

Interval = tuple[int, int]

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
            and _same_etag(other.get("etag"), self.etag)
            and other.get("last_modified") == self.last_modified
        )


def _same_etag(a: str | None, b: str | None) -> bool:
    """Equal, or equal but for a weak ``W/`` prefix (Apache marks a tag weak within a second of a change)."""
    if a is None or b is None:
        return a == b
    return a.removeprefix("W/") == b.removeprefix("W/")


def open_new(path: Path, flags: int = os.O_RDWR) -> int:
    """Open (or create) ``path`` for writing, never through a link: ``O_NOFOLLOW`` where the OS has it, and the
    name checked with ``lstat`` everywhere."""
    refuse_link(path)
    try:
        return os.open(path, flags | os.O_CREAT | portable.O_NOFOLLOW | portable.O_CLOEXEC | portable.O_BINARY, 0o644)
    except OSError as exc:
        raise os_error(exc, path, "create") from exc


def _identity(info: os.stat_result) -> tuple:
    """What makes a file the same one: its device and inode, its size and last change of content."""
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def write_atomic(path: Path, data: bytes) -> None:
    """A small file (a resume record, a samplesheet) written whole under its name or not at all, through no link."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = open_new(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        refuse_link(path)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise os_error(exc, path, "write") from exc


def oversize(source: str, limit: int, name: str) -> BadAnswer:
    return BadAnswer(f"The server sent more than the {human_size(limit)} it announced for {name} ({source}); Ferry "
                     "stopped at once and kept nothing under that name. A server that does this is broken or "
                     "hostile: ask its owner.")


class PartFile:
    """``dest.part`` plus its resume record; one per transfer attempt."""

    def __init__(self, dest: Path | str) -> None:
        self.dest = portable.long_path(dest)  # Windows: a name near 260 characters, with .part and more after it
        self.part = self.dest.with_name(self.dest.name + ".part")
        self.state = self.dest.with_name(self.part.name + STATE_SUFFIX)
        self.fd: int | None = None
        self.identity: Identity | None = None
        self.last_save = 0.0
        #: the most bytes the file may have: the size the source announced (None: it said none, or the body is
        #: decoded here and bounded where it is decoded)
        self.limit: int | None = None

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
        self.limit = identity.size
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
            fd = open_new(self.part)
            try:
                portable.lock_exclusive(fd)
            except portable.Busy:
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
            free = portable.free_bytes(folder)
            have = getattr(os.fstat(self.fd), "st_blocks", 0) * 512
            if free is not None and size - max(have, 0) > free:
                raise no_space(folder, size - already, free)
            if not portable.allocate(self.fd, size):
                os.ftruncate(self.fd, size)
        except OSError as exc:
            raise os_error(exc, self.part, "reserve space for") from exc

    def restart(self) -> None:
        """Throw away everything written (the source changed): start from zero bytes."""
        self._truncate()
        self.identity = None

    # -- writing -----------------------------------------------------------------
    def write(self, data: bytes | memoryview, offset: int) -> None:
        """``data`` at ``offset``; past ``limit`` is the server's error (``BadAnswer``), and nothing is written."""
        if self.limit is not None and offset + len(data) > self.limit:
            raise oversize(self.identity.source if self.identity else str(self.dest), self.limit, self.dest.name)
        try:
            portable.pwrite_all(self.fd, data, offset)
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
        write_atomic(self.state, json.dumps(record).encode())
        self.last_save = time.monotonic()

    def sync(self) -> None:
        if self.fd is not None:
            try:
                portable.datasync(self.fd)
            except OSError as exc:
                raise os_error(exc, self.part, "flush") from exc

    # -- ending --------------------------------------------------------------------
    def finish(self, size: int | None = None) -> Path:
        """Make the verified file appear under its final name, durably."""
        if size is not None and os.fstat(self.fd).st_size != size:
            os.ftruncate(self.fd, size)
        self.sync()
        refuse_link(self.dest)  # a link put there meanwhile is not replaced in silence
        checked = os.fstat(self.fd)  # the very file whose bytes were hashed
        if not portable.RENAMES_OPEN_FILES:
            self.close()  # Windows renames no file that is open; elsewhere the lock is held through the rename
        try:
            os.replace(self.part, self.dest)
            there = os.lstat(self.dest)
        except OSError as exc:
            raise os_error(exc, self.dest, "rename the finished file to") from exc
        if _identity(there) != _identity(checked):  # "verified" is said of the file at its final name
            raise Corrupt(f"{self.dest} is not the file Ferry wrote and checked: another program replaced or changed "
                          "it as Ferry renamed it. Check who else writes there, then run the same command again.")
        self.state.unlink(missing_ok=True)
        self.close()
        portable.sync_folder(self.dest.parent)  # the rename is done; a folder fsync is a best effort
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
        os.close(self.fd)  # also drops the lock
        portable.forget(self.fd)
        self.fd = None


def recorded_bytes(part_record: Path) -> int | None:
    """The bytes a part file's resume record says are written and kept; None without a readable record."""
    try:
        record = json.loads(part_record.read_text())
        return sum(int(e) - int(s) for s, e in record.get("done", []))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def kept_bytes(dest: Path | str, limit: int = 100_000) -> int | None:
    """What a transfer to ``dest`` has on disk now, counted from the disk: a file's resume record (or the file,
    once whole); below a folder, its whole files plus what its part files' records keep. None: nothing there."""
    dest = Path(dest)
    part = dest.with_name(dest.name + ".part")
    record = part.with_name(part.name + STATE_SUFFIX)
    if record.exists() or part.exists():
        return recorded_bytes(record) or 0
    if dest.is_file():
        return dest.stat().st_size
    if not dest.is_dir():
        return None
    total, seen = 0, 0
    for folder, _, names in os.walk(dest):
        for name in names:
            seen += 1
            if seen > limit:
                return total
            path = Path(folder) / name
            if name.endswith(".part" + STATE_SUFFIX):
                total += recorded_bytes(path) or 0
            elif not name.endswith((".part", STATE_SUFFIX, ".tmp")) and not path.is_symlink():
                total += path.stat().st_size
    return total
