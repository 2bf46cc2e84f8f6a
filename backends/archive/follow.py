"""``labferry copy URL/NAME.tar DEST/ --unpack``: the archive unpacked while it arrives.

The download is an ordinary one (its streams, its resume by range, its checks of the archive as a whole) into
``DEST/NAME.tar``. Beside it a thread reads the archive's members in order as far as the download has them (the
part file's resume record says which bytes are written) and writes each through the destination module into
a part file of its own. A member gets its final name only at the end, once the whole archive is there and its
SHA-256 matches the one the archive's index gives; a tar made elsewhere has no index, and only its sizes are
checked (said). Then the archive is removed. A member that fails is removed and the archive kept, so that
``labferry unpack`` can be run on it.

Anything odd while following (a part file replaced by a restart, a read that saw bytes not yet settled) is
never trusted: the members are unpacked again from the finished archive, in one pass.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import threading
import time
from pathlib import Path

from ..core.errors import Corrupt, LocalError, NoSpace, TransferError
from ..core.words import counted, human_size
from ..destination import STATE_SUFFIX, Destination
from ..destination.shared import SharedPart
from ..host import portable
from . import index
from .address import is_archive, wants_zstd
from .browse import MOST_SCANNED, digests_of, from_info, index_lines
from .folder import Unpacked, folder_times, make_links
from .layout import Member

#: seconds between looks at the download's record while the follower waits for more of the archive
POLL = 0.2
#: bytes read and written at a time
CHUNK = 1 << 20

class Stopped(Exception):
    """The download ended without the archive (a failure, a cancel, a pause): the follower stops."""


class ArrivingArchive(io.RawIOBase):
    """``NAME.tar`` read in order while it is downloaded: a read waits until the bytes are written (the first
    range of ``NAME.tar.part``'s record reaches them) or the download ends. A wait lasts as long as the download
    does, whose own timeouts bound it: ``halt`` ends it."""

    def __init__(self, archive: Path, halt: threading.Event, whole: threading.Event) -> None:
        super().__init__()
        self.archive, self.halt, self.whole = archive, halt, whole
        self.part = Path(f"{archive}.part")
        self.record = Path(f"{self.part}{STATE_SUFFIX}")
        self.fd: int | None = None
        self.inode = 0
        self.at = 0
        self._record_seen: tuple[tuple, int] = ((), 0)  # the record's (inode, time, size) last read → its answer

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        ready = self._wait(self.at + 1)
        if ready <= self.at:
            return 0  # the end of the whole archive
        data = portable.pread(self.fd, min(len(buffer), ready - self.at), self.at)
        buffer[:len(data)] = data
        self.at += len(data)
        return len(data)

    def _wait(self, want: int) -> int:
        """How far the archive is readable once it reaches ``want`` bytes (less only at its very end)."""
        while True:
            if self.halt.is_set():
                raise Stopped()
            whole = self.whole.is_set()
            self._open(self.archive if whole else self.part)
            ready = os.fstat(self.fd).st_size if whole else self._recorded()
            if ready >= want or whole:
                return ready
            time.sleep(POLL)

    def _open(self, path: Path) -> None:
        if self.fd is not None:
            return
        try:
            self.fd = os.open(path, os.O_RDONLY | portable.O_BINARY | portable.O_NOFOLLOW)
        except FileNotFoundError:
            return  # the download has not made its part file yet
        except OSError as exc:
            raise LocalError(f"Ferry cannot read {path} ({exc.strerror}) to unpack it.") from None
        self.inode = os.fstat(self.fd).st_ino

    def _recorded(self) -> int:
        """The bytes from the start that the download's record says are written (0 before it has one)."""
        if self.fd is None:
            return 0
        try:
            seen = os.stat(self.record)
            if (seen.st_ino, seen.st_mtime_ns, seen.st_size) == self._record_seen[0]:
                return self._record_seen[1]  # unchanged since the last look (one ``stat`` every POLL)
            done = json.loads(self.record.read_text()).get("done") or []
            first = min((int(s), int(e)) for s, e in done[:100_000]) if done else (0, 0)
        except (OSError, ValueError, TypeError, AttributeError, IndexError):
            return 0  # being replaced, or not there yet: the next look sees it
        ready = first[1] if first[0] == 0 else 0
        self._record_seen = ((seen.st_ino, seen.st_mtime_ns, seen.st_size), ready)
        return ready

    def same_as_finished(self) -> bool:
        """Whether what was read is the finished archive's very file (a restart may have made another)."""
        try:
            return self.fd is not None and os.stat(self.archive).st_ino == self.inode
        except OSError:
            return False

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            portable.forget(self.fd)
            self.fd = None
        super().close()


class Follower:
    """Unpacks ``archive`` into its folder while the download that makes it runs (``start``), then checks and
    names every member once it has arrived (``complete``), or removes what it made (``stop``)."""

    def __init__(self, archive: Path) -> None:
        self.archive = Path(archive)
        self.halt, self.whole = threading.Event(), threading.Event()
        self.target = Destination(self.archive.parent)
        self.held: dict[str, tuple[SharedPart, Path, Member, str]] = {}  # name → (part, path, member, SHA-256)
        self.others: list[Member] = []  # folders and links, made at the end
        self.refused: dict[str, str] = {}  # members the destination's rules did not let in → why
        self.error: BaseException | None = None
        self.reader: ArrivingArchive | None = None
        self.thread = threading.Thread(target=self._follow, daemon=True, name="unpack as it arrives")

    def start(self) -> None:
        self.thread.start()

    def _follow(self) -> None:
        self.reader = ArrivingArchive(self.archive, self.halt, self.whole)
        try:
            self._unpack(io.BufferedReader(self.reader, CHUNK))
        except Stopped:
            pass
        except BaseException as exc:  # said at the end, or replaced by a clean pass over the finished archive
            self.error = exc

    def stop(self) -> None:
        """The download failed or was stopped: nothing half-made stays (its own part file stays, to resume)."""
        self.halt.set()
        self.thread.join(timeout=60)
        self._discard()

    def _discard(self) -> None:
        for part, _, _, _ in self.held.values():
            part.discard()
        self.held.clear()
        self.others.clear()
        self.refused.clear()
        if self.reader is not None:
            self.reader.close()

    def _unpack(self, raw) -> None:
        """Every member of the stream, in order: files into part files (hashed), folders and links noted."""
        stream = raw
        if wants_zstd(self.archive.name, None):
            import zstandard

            stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        with tarfile.open(fileobj=stream, mode="r|", encoding="utf-8", errors="surrogateescape") as tar:
            for count, info in enumerate(tar):
                if self.halt.is_set():  # between members too: a buffered read may hold many of them
                    raise Stopped()
                if count >= MOST_SCANNED:
                    raise Corrupt(f"{self.archive.name} holds more than {MOST_SCANNED:,} members; Ferry stopped "
                                  "reading it.")
                member = from_info(info)
                if member is None or member.name == index.INDEX_NAME:
                    continue
                if member.kind != "file":
                    self.others.append(member)
                    if member.kind == "dir":
                        self.target.folder(self.target.claim(member.name, folder=True))
                    continue
                self._file(member, tar.extractfile(info))

    def _file(self, member: Member, data) -> None:
        if member.name in self.held:  # a name twice in one tar: the later one is what tar restores
            self.held.pop(member.name)[0].discard()
        try:
            path = self.target.file(self.target.claim(member.name))
        except NoSpace:
            raise
        except LocalError as exc:  # a name no disk can hold, a link in the way: this member is not made
            self.refused[member.name] = str(exc)
            return
        part = SharedPart.make(path, member.size)
        digest, done = hashlib.sha256(), 0
        fd = part.open()
        try:
            while done < member.size:
                chunk = data.read(min(CHUNK, member.size - done))
                if not chunk:
                    raise Corrupt(f"{self.archive.name} ends inside {member.name}.")
                part.write(fd, chunk, done)
                digest.update(chunk)
                done += len(chunk)
        except BaseException:
            part.discard()  # a stop or a fault halfway through this member: nothing of it stays
            raise
        finally:
            os.close(fd)
        self.held[member.name] = (part, path, member, digest.hexdigest())

    def complete(self) -> Unpacked:
        """The archive is whole (the download checked it): every member followed to the end, compared with the
        index, and named; raises ``Corrupt`` naming what was not restored (the archive then stays)."""
        began = time.monotonic()
        self.whole.set()
        self.thread.join()
        if self.halt.is_set():  # cancelled while the follower read the last of it
            self._discard()
            raise Stopped()
        if self.error is not None or not (self.reader and self.reader.same_as_finished()):
            try:
                self._again()
            except Stopped:  # cancelled while checking: the pass ends, and nothing it made stays
                self._discard()
                raise
        try:
            lines, _, _ = index_lines(self.archive)
        except BaseException:  # an index that is refused: nothing this pass made stays
            self._discard()
            raise
        result = Unpacked(0, 0, 0.0, 1, lines is not None)
        expected = digests_of(lines) if lines is not None else {}
        for name, (part, path, member, digest) in sorted(self.held.items()):
            if lines is not None and expected.get(name, ("",))[0] != digest:
                part.discard()
                why = "is not in the archive's index" if name not in expected else "does not match its checksum"
                result.failed.append(f"{name} {why}")
                continue
            part.finish(path, member.mtime_ns, member.mode)
            result.restored += 1
            result.bytes += member.size
        self._missing(expected, result)
        result.notes.extend(list(self.refused.values())[:20])
        make_links(self.target, [m for m in self.others if m.kind in ("symlink", "hardlink")], result)
        folder_times(self.target, [m for m in self.others if m.kind == "dir"])
        self._say(result, began)
        return result

    def _again(self) -> None:
        """One clean pass over the finished archive, after anything odd while following it."""
        self._discard()
        self.target = Destination(self.archive.parent)
        self.error = None
        self.reader = ArrivingArchive(self.archive, self.halt, self.whole)  # a cancel (``halt``) ends this pass too
        try:
            self._unpack(io.BufferedReader(self.reader, CHUNK))
        except (tarfile.ReadError, TransferError, OSError) as exc:
            self._discard()
            why = f"is not a tar archive Ferry can read ({exc})" if isinstance(exc, tarfile.ReadError) else (
                f"could not be unpacked ({getattr(exc, 'strerror', None) or exc})")
            raise Corrupt(f"{self.archive.name} {why.rstrip('.')}. Nothing was unpacked; the archive is kept at "
                          f"{self.archive}, and labferry unpack restores what it holds.") from None

    def _missing(self, expected: dict, result: Unpacked) -> None:
        """Files the index lists that the archive's stream did not hold."""
        seen = set(self.held) | set(self.refused) | {m.name for m in self.others}
        lost = [n for n in expected if n not in seen and n != index.INDEX_NAME]
        if lost:
            result.failed.append(f"{counted(len(lost), 'file')} the index lists were not in the archive")

    def _say(self, result: Unpacked, began: float) -> None:
        renamed = self.target.renamed_note(origin="the archive")
        if renamed:
            result.notes.append(renamed)
        tops = {n.split("/", 1)[0] for n in [*self.held, *(m.name for m in self.others)]}
        result.top = self.target.claim(tops.pop(), folder=True) if len(tops) == 1 else ""
        if not result.indexed:
            result.notes.append(f"{self.archive.name} has no index (another tool made it): sizes were checked, "
                                "there were no checksums to compare.")
        result.seconds = time.monotonic() - began
        if self.reader is not None:
            self.reader.close()
        if result.failed:
            raise Corrupt(f"Unpacked {counted(result.restored, 'member')} ({human_size(result.bytes)}); not "
                          f"restored: {'; '.join(result.failed[:5])}. The archive is kept at {self.archive}.")
        self.archive.unlink(missing_ok=True)


def followed(name: str) -> bool:
    """Whether ``--unpack`` can open an archive of this name as it arrives."""
    return is_archive(name)
