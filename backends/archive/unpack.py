"""``labferry unpack`` and ``labferry ls``: an archive's members, from its index (or one scan of a tar made
elsewhere), restored below DEST by several workers at once.

Names become paths only through ``backends.destination.Destination`` (``../``, absolute paths and names a disk
cannot hold are made safe and said); a file is a part file until its bytes match the index's SHA-256; a link is
made only when it stays inside DEST; a hard link only to a file restored here. A member that fails does not stop
the others: the sentence at the end says what was restored and what was not.
"""

from __future__ import annotations

import fnmatch
import os
import stat as statmod
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import BadRequest, Corrupt, LocalError
from ..core.words import counted
from ..destination import Destination
from ..destination.shared import SharedPart
from ..host import portable
from . import index, seekable, workers
from .layout import OPEN_COST, Member
from .workers import BATCH_PIECES, worker_count

#: the most members a tar made elsewhere is scanned for (its headers are read one by one)
MOST_SCANNED = 50_000_000


@dataclass
class Catalogue:
    members: list[Member]
    #: name → (its SHA-256, its pieces' SHA-256s, the size they were cut at); empty from a scan
    digests: dict[str, tuple[str, list[str], int]]
    indexed: bool
    size: int = 0  # the archive's length: a member whose data goes past it was cut off
    cut: str = ""  # why a scan stopped before the archive's end (a truncated or damaged tar)
    frames: seekable.FrameMap | None = None  # a .tar.zst's frames: offsets above are in the tar they decode to


@dataclass
class Unpacked:
    restored: int
    bytes: int
    seconds: float
    workers: int
    indexed: bool
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    top: str = ""  # the one folder every member is in (``run42``), as it was saved below DEST; "" when several


def catalogue(archive: Path, *, scan: bool = False) -> Catalogue:
    """The archive's members: from its index, or from one pass over its headers when it has none."""
    lines, size, frames = index_lines(archive, scan=scan)
    if lines is None:
        members, cut = _scanned(archive)
        return Catalogue(members, {}, False, size, cut)
    members = [index.as_member(x) for x in lines]
    return Catalogue(members, digests_of(lines), True, size, frames=frames)


def index_lines(archive: Path, *, scan: bool = False) -> tuple[list[dict] | None, int, seekable.FrameMap | None]:
    """The index's lines (None: the archive has none, or ``scan`` asked not to use it), the tar's length, and a
    .tar.zst's frames."""
    try:
        fd = os.open(archive, os.O_RDONLY | portable.O_BINARY)
    except OSError as exc:
        raise BadRequest(f"Ferry cannot open {archive} ({exc.strerror}). Check the path.") from None
    frames = None
    try:
        size = os.fstat(fd).st_size
        if seekable.is_seekable(fd):
            frames = seekable.read_map(fd, size, str(archive))
            size = frames.tar_size
            lines = index.read(fd, size, str(archive),
                               lambda at, n: seekable.read_range(fd, frames, at, n, str(archive)))
            if lines is None:
                raise Corrupt(f"{archive} has no labferry index; unpack it with: zstd -d < {archive} | tar -x")
        else:
            lines = None if scan else index.read(fd, size, str(archive))
    finally:
        os.close(fd)
    return lines, size, frames


def digests_of(lines: list[dict]) -> dict[str, tuple[str, list[str], int]]:
    """name → (its SHA-256, its pieces' SHA-256s, the size they were cut at), from the index's lines."""
    return {x["n"]: (x.get("h", ""), x.get("p", []), int(x.get("q", 0))) for x in lines}


def _scanned(archive: Path) -> tuple[list[Member], str]:
    """The members one pass over the headers finds, and why it stopped early ("" when it reached the end): a
    cut archive still gives what is in it."""
    members: list[Member] = []
    try:
        with tarfile.open(archive, "r:", encoding="utf-8", errors="surrogateescape", ignore_zeros=False) as tar:
            for info in tar:
                if len(members) >= MOST_SCANNED:
                    raise Corrupt(f"{archive} holds more than {MOST_SCANNED:,} members; Ferry stopped reading it.")
                member = from_info(info)
                if member is not None:
                    members.append(member)
    except tarfile.ReadError as exc:
        if not members:
            raise Corrupt(f"{archive} is not a tar archive Ferry can read ({exc}).") from None
        return members, str(exc)
    return members, ""


def from_info(info: tarfile.TarInfo) -> Member | None:
    kind = ("file" if info.isreg() else "dir" if info.isdir() else "symlink" if info.issym()
            else "hardlink" if info.islnk() else None)
    if kind is None:
        return None
    m = Member(info.name.rstrip("/"), kind, info.size if kind == "file" else 0, info.mode,
               _nanoseconds(info.pax_headers.get("mtime"), info.mtime), info.linkname)
    m.offset, m.data = info.offset, info.offset_data
    return m


def _nanoseconds(pax: str | None, seconds: float) -> int:
    """A pax time ("1600000000.123456789") to the nanosecond; a float would lose the last digits."""
    whole, _, fraction = (pax or "").partition(".")
    if whole.lstrip("-").isdigit() and (not fraction or fraction.isdigit()):
        return int(whole) * 1_000_000_000 + int((fraction + "000000000")[:9])
    return int(seconds) * 1_000_000_000


def chosen(members: list[Member], only: list[str] | None) -> list[Member]:
    """The members ``--only`` names (a glob; a folder's glob takes what is inside it too); all without it."""
    keep = [m for m in members if m.name != index.INDEX_NAME]
    if not only:
        return keep
    return [m for m in keep if any(fnmatch.fnmatchcase(m.name, g) or fnmatch.fnmatchcase(m.name, g.rstrip("/") + "/*")
                                   for g in only)]


def unpack(archive: Path, dest: Path, *, only: list[str] | None = None, workers_asked: int | None = None,
           scan: bool = False, progress=None, runner=None) -> Unpacked:
    """``runner``: the ranks of an MPI job (``ranks.Runner``), instead of worker processes here."""
    began = time.monotonic()
    archive = Path(archive).expanduser()
    cat = catalogue(archive, scan=scan)
    members = chosen(cat.members, only)
    if only and not members:
        raise BadRequest(f"No member of {archive.name} matches {' '.join(only)}; see them with labferry ls.")
    target = Destination(Path(dest).expanduser())
    target.claim_all([m.name for m in members if m.kind != "dir"], [m.name for m in members if m.kind == "dir"])
    count = runner.ranks if runner is not None else worker_count(workers_asked)
    result = Unpacked(0, 0, 0.0, count, cat.indexed)
    tops = {m.name.split("/", 1)[0] for m in members}
    result.top = target.claim(tops.pop(), folder=True) if len(tops) == 1 else ""
    for m in members:
        if m.kind == "dir":
            target.folder(target.claim(m.name, folder=True))
    _files(archive, cat, [m for m in members if m.kind == "file"], target, (count, runner), result, progress)
    make_links(target, [m for m in members if m.kind in ("symlink", "hardlink")], result)
    folder_times(target, [m for m in members if m.kind == "dir"])
    renamed = target.renamed_note(origin="the archive")
    if renamed:
        result.notes.append(renamed)
    _say_cut(archive, cat, members, result)
    if not cat.indexed:
        result.notes.append(f"{archive.name} has no index (another tool made it, or it was cut before its end): "
                            "sizes were checked, there were no checksums to compare.")
    result.seconds = time.monotonic() - began
    return result


def _say_cut(archive: Path, cat: Catalogue, members: list[Member], result: Unpacked) -> None:
    """A cut archive: what was restored, and that the rest is missing (the run then ends in ``Corrupt``)."""
    lost = [m for m in members if m.kind == "file" and m.data + m.size > cat.size]
    if cat.cut or lost:
        result.failed.append(f"{archive.name} ends at byte {cat.size:,}"
                             + (f", inside {counted(len(lost), 'member')}" if lost else "")
                             + (f", and its headers stop there ({cat.cut})" if cat.cut else ""))


def _files(archive: Path, cat: Catalogue, files: list[Member], target: Destination, run_on: tuple,
           result: Unpacked, progress) -> None:
    """``run_on``: (worker processes, or the MPI ranks' runner)."""
    lost = {m.name for m in files if m.data + m.size > cat.size}
    files = [m for m in files if m.name not in lost]  # cut off: said by ``_say_cut``, nothing half-made
    jobs, shared, total = [], {}, sum(m.size for m in files)
    for m in files:
        whole, pieces, piece = cat.digests.get(m.name, ("", [], 0))
        if not pieces or piece < 512 or len(pieces) != -(-m.size // piece):
            path = target.file_path(target.claim(m.name))  # checked for a link by ``write_whole``, ``WholeFile``
            jobs.append((len(jobs), m.name, m.data, m.size, whole, (path, m.mode, m.mtime_ns), 0))
            continue
        path = target.file(target.claim(m.name))
        part = SharedPart.make(path, m.size)
        shared[m.name] = (part, path, m)
        for k, start in enumerate(range(0, m.size, piece)):
            jobs.append((len(jobs), m.name, m.data + start, min(piece, m.size - start), pieces[k], part, start))
    bad: dict[str, str] = {}
    done = [0]

    def finished(results: list[tuple[int, str]]) -> None:
        for number, why in results:
            done[0] += jobs[number][3]
            if why:
                bad.setdefault(jobs[number][1], why)
        if progress:
            progress(done[0], total)

    if cat.frames is not None:  # each batch the jobs of a few frames: a frame is decoded once
        batches = _by_frame(jobs, cat.frames)
    else:
        batches = [jobs[i:i + BATCH_PIECES] for i in range(0, len(jobs), BATCH_PIECES)]
        batches = [b for batch in batches for b in _split_large(batch)]
    count, runner = run_on
    try:
        workers.run(batches, workers.unpack_batch, (str(archive), cat.frames), count, finished, runner,
                    cost=lambda batch: sum(job[3] + OPEN_COST for job in batch))
    except BaseException:
        for part, _, _ in shared.values():
            part.discard()
        raise
    for name, (part, path, m) in shared.items():
        if name in bad:
            part.discard()
        else:
            part.finish(path, m.mtime_ns, m.mode)
    result.failed.extend(bad.values())
    result.restored += len(files) - len(bad)
    result.bytes += sum(m.size for m in files if m.name not in bad)


def _by_frame(jobs: list, frames: seekable.FrameMap) -> list[list]:
    """Jobs grouped by the frame that holds them (in order), about ``BATCH_PIECES`` a batch."""
    batches: list[list] = []
    current: list = []
    last = -1
    for job in sorted(jobs, key=lambda j: j[2]):
        frame = frames.frames_for(job[2], job[3])[0]
        if current and frame != last and (len(current) >= BATCH_PIECES or isinstance(job[5], SharedPart)):
            batches.append(current)
            current = []
        current.append(job)
        last = frame
    if current:
        batches.append(current)
    return batches


def _split_large(batch: list) -> list[list]:
    """A batch of one large file's pieces split so each piece can go to another worker."""
    out, small = [], []
    for job in batch:
        (out.append([job]) if isinstance(job[5], SharedPart) else small.append(job))
    return out + ([small] if small else [])


def make_links(target: Destination, links: list[Member], result: Unpacked) -> None:
    from ..destination.links import make_hard_link, make_symlink

    for m in links:
        where = target.file(target.claim(m.name))
        try:
            if m.kind == "symlink":
                make_symlink(target.root, where, m.linkname)
            else:
                make_hard_link(target.root, where, target.file(target.claim(m.linkname)))
            result.restored += 1
        except LocalError as exc:
            result.notes.append(str(exc))


def folder_times(target: Destination, folders: list[Member]) -> None:
    """Folders' modes and times last (restoring a file inside changes its folder's time), deepest first."""
    for m in sorted(folders, key=lambda m: -m.name.count("/")):
        path = target.path(target.claim(m.name, folder=True))
        try:
            portable.set_mode(path, statmod.S_IMODE(m.mode))
            os.utime(path, ns=(m.mtime_ns, m.mtime_ns), follow_symlinks=False)
        except OSError:
            pass  # a folder's time is worth no failure
