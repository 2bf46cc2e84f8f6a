"""``labferry pack``: sources to one tar, written by several workers at once at offsets laid out beforehand.

The archive is ``NAME.part`` until its index is written and synced; only then does it take its name. Small
files are dealt to the workers in batches that go to whichever worker is free, so they finish together; a
large file's pieces are dealt the same way, and its own SHA-256 is read in order beside them (a thread here:
hashlib lets go of the interpreter while it hashes).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import TransferError
from ..core.words import human_size
from ..destination import check_destination
from ..destination.shared import SharedPart
from ..host import portable
from . import workers
from .index import IndexWriter, assembled, pieces_per_member
from .layout import OPEN_COST, PIECE, Layout, Member, Piece, plan
from .resume import SAVE_EVERY, SAVE_EVERY_RANKED, Record, plan_key
from .workers import BATCH_PIECES, worker_count

#: a batch is at most ``BATCH_PIECES`` pieces, or about this many bytes: small enough that the workers end together
BATCH_BYTES = 256 << 20


@dataclass
class Packed:
    archive: Path
    members: int
    files: int
    data_bytes: int
    size: int
    seconds: float
    workers: int
    notes: list[str] = field(default_factory=list)


def pack(sources: list[str], archive: Path, *, workers_asked: int | None = None, dereference: bool = False,
         overwrite: bool = False, piece: int = PIECE, compress: str | None = None, progress=None,
         runner=None) -> Packed:
    """``archive`` made from ``sources``. A stop (Ctrl-C, SIGTERM) keeps ``NAME.part`` and its record, and
    the same call goes on from there; any other failure leaves nothing. ``compress="zstd"``: zstd's seekable
    format (``zpack.py``), which starts over after a stop. ``runner``: the ranks of an MPI job
    (``ranks.Runner``), instead of worker processes here."""
    began = time.monotonic()
    layout = plan(sources, dereference=dereference, piece=piece)
    archive = Path(archive).expanduser()
    check_destination(archive, overwrite)
    count = runner.ranks if runner is not None else worker_count(workers_asked)
    if compress == "zstd":
        size = _pack_zstd(layout, archive, count, piece, progress, runner)
        return Packed(archive, len(layout.members), sum(m.kind == "file" for m in layout.members),
                      layout.data_bytes, size, time.monotonic() - began, count, layout.notes)
    lines_ready = IndexWriter(layout, piece)
    record = Record(archive, plan_key(layout, piece), SAVE_EVERY_RANKED if runner is not None else SAVE_EVERY)
    kept = record.load(Path(f"{archive}.part"), lines_ready.total)
    part = SharedPart.make(archive, lines_ready.total, keep=bool(kept))
    try:
        digests = _write_members(layout, part, count, progress, record, runner)
        _write_index(lines_ready, part, digests)
        made = part.finish(archive)
    except TransferError:
        part.discard()
        record.forget()
        raise
    except BaseException:
        record.save()  # stopped: the same command goes on from here
        raise
    record.forget()
    resumed = [f"went on from {human_size(sum(layout.pieces[n].length for n in kept))} packed before"] if kept else []
    return Packed(made, len(layout.members), sum(m.kind == "file" for m in layout.members), layout.data_bytes,
                  lines_ready.total, time.monotonic() - began, count, layout.notes + resumed)


def _write_members(layout: Layout, part: SharedPart, count: int, progress, record: Record,
                   runner=None) -> dict[int, list[str]]:
    """Every piece written (but those ``record`` holds); returns each member's digests (one, or one a piece)."""
    by_piece: dict[int, str] = dict(record.done)
    done = [sum(layout.pieces[n].length for n in by_piece)]

    def finished(results: list[tuple[int, str]]) -> None:
        for number, digest in results:
            by_piece[number] = digest
            done[0] += layout.pieces[number].length
        record.note(results)
        if progress:
            progress(done[0], layout.data_bytes)

    with _WholeDigests.beside(layout) as whole:  # its ``cut``: the large files, whose pieces it hashes
        jobs = [_job(n, piece, layout.members[piece.member], piece.member in whole.cut)
                for n, piece in enumerate(layout.pieces) if n not in by_piece]
        batches = _batches(jobs, [layout.pieces[job[0]] for job in jobs], count)
        workers.run(batches, workers.pack_batch, part, count, finished, runner,
                    cost=lambda batch: sum(j[7] + OPEN_COST for j in batch))
        whole.join()
    return assembled(layout, whole.fill(by_piece), whole.digests)


def _pack_zstd(layout: Layout, archive: Path, count: int, piece: int, progress, runner=None) -> int:
    """``runner``: the MPI job's ranks make and write the frames (``zranks``), else ``count`` workers here."""
    from .zpack import LEVEL, write_frames

    writer = IndexWriter(layout, piece)
    by_piece: dict[int, str] = {}
    with _WholeDigests.beside(layout) as whole:

        def tail() -> bytes:
            whole.join()
            return writer.tail(assembled(layout, whole.fill(by_piece), whole.digests))

        if runner is not None:
            from .zranks import write_frames_ranked

            return write_frames_ranked(layout, archive, runner, tail, LEVEL, progress, by_piece.update,
                                       writer.total - layout.end)
        return write_frames(layout, archive, count, tail, LEVEL, progress, by_piece.update)


def _job(number: int, piece: Piece, member: Member, whole: bool) -> workers.PackJob:
    """``whole``: the member is a large file cut in pieces, whose digests the in-order pass makes."""
    source = member.source if member.kind == "file" and piece.length else ""
    return (number, source, member.identity, member.meta if piece.first else None, member.offset,
            member.data + piece.start, piece.start, piece.length, not whole)


def _batches(jobs: list, pieces: list[Piece], count: int) -> list[list]:
    """Jobs grouped: large pieces first, costliest first, then runs of small files in the archive's order (a
    folder's files read together), so the last batches to start are short ones."""
    total = sum(p.cost for p in pieces)
    most = max(1 << 20, min(BATCH_BYTES, total // max(1, count * 8)))
    large = sorted((n for n in range(len(jobs)) if pieces[n].cost >= most), key=lambda n: -pieces[n].cost)
    order = large + [n for n in range(len(jobs)) if pieces[n].cost < most]
    batches, current, size = [], [], 0
    for n in order:
        current.append(jobs[n])
        size += pieces[n].cost
        if len(current) >= BATCH_PIECES or size >= most:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


class _WholeDigests(threading.Thread):
    """Large files' own SHA-256s and their pieces', read in order while the workers have the kernel copy the
    pieces: each large byte is read through Ferry once, and hashed once."""

    def __init__(self, layout: Layout, members: list[int]) -> None:
        super().__init__(daemon=True, name="whole-file digests")
        self.layout, self.members = layout, members
        self.digests: dict[int, str] = {}
        self.pieces: dict[int, list[str]] = {}
        chosen = set(members)
        #: each large file's piece size, by member
        self.cut = {p.member: p.length for p in layout.pieces if p.first and p.member in chosen}
        self.error: BaseException | None = None
        self.halt = threading.Event()

    @classmethod
    @contextmanager
    def beside(cls, layout: Layout) -> Iterator[_WholeDigests]:
        """The thread running while the block writes the pieces; a stop or failure ends it early (its digests
        are not wanted then)."""
        whole = cls(layout, [i for i, n in pieces_per_member(layout).items() if n > 1])
        whole.start()
        try:
            yield whole
        except BaseException:
            whole.halt.set()
            whole.join(raising=False)
            raise

    def run(self) -> None:
        try:
            for i in self.members:
                m = self.layout.members[i]
                self.digests[i], self.pieces[i] = workers.whole_digest(m.source, m.identity, self.halt, self.cut[i])
        except BaseException as exc:  # handed to the caller in ``join``
            self.error = exc

    def join(self, timeout: float | None = None, raising: bool = True) -> None:
        super().join(timeout)
        if self.error is not None and raising:
            raise self.error

    def fill(self, by_piece: dict[int, str]) -> dict[int, str]:
        """The pieces' digests the workers left to this pass ("" from a worker), from its reading."""
        for number, piece in enumerate(self.layout.pieces):
            if not by_piece.get(number) and piece.member in self.pieces:
                by_piece[number] = self.pieces[piece.member][piece.start // self.cut[piece.member]]
        return by_piece


def _write_index(writer: IndexWriter, part: SharedPart, digests: dict[int, list[str]]) -> None:
    fd = part.open()
    try:
        part.write(fd, writer.tail(digests), writer.layout.end)
        portable.datasync(fd)
    finally:
        os.close(fd)
