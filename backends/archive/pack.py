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
from dataclasses import dataclass, field
from pathlib import Path

from ..destination import check_destination
from ..destination.shared import SharedPart
from ..host import portable
from . import index, workers
from .layout import BLOCK, PIECE, Layout, Member, Piece, header_of, plan

#: a batch is at most this many pieces, or about this many bytes: small enough that the workers end together
BATCH_PIECES = 2000
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


def worker_count(asked: int | None) -> int:
    """``--workers auto``: one a core."""
    return max(1, asked if asked else (os.cpu_count() or 1))


def pack(sources: list[str], archive: Path, *, workers_asked: int | None = None, dereference: bool = False,
         overwrite: bool = False, piece: int = PIECE, progress=None) -> Packed:
    began = time.monotonic()
    layout = plan(sources, dereference=dereference, piece=piece)
    archive = Path(archive).expanduser()
    check_destination(archive, overwrite)
    count = worker_count(workers_asked)
    lines_ready = _IndexWriter(layout, piece)
    part = SharedPart.make(archive, lines_ready.total)
    try:
        digests = _write_members(layout, part, count, progress)
        lines_ready.write(part, digests)
        made = part.finish(archive)
    except BaseException:
        part.discard()
        raise
    return Packed(made, len(layout.members), sum(m.kind == "file" for m in layout.members), layout.data_bytes,
                  lines_ready.total, time.monotonic() - began, count, layout.notes)


def _write_members(layout: Layout, part: SharedPart, count: int, progress) -> dict[int, list[str]]:
    """Every piece written; returns each member's digests (one, or one a piece, in order)."""
    jobs = [_job(n, piece, layout.members[piece.member]) for n, piece in enumerate(layout.pieces)]
    batches = _batches(jobs, layout.pieces, count)
    counts = pieces_per_member(layout)
    whole = _WholeDigests(layout, [i for i, n in counts.items() if n > 1])
    by_piece: dict[int, str] = {}
    done = [0]

    def finished(results: list[tuple[int, str]]) -> None:
        for number, digest in results:
            by_piece[number] = digest
            done[0] += layout.pieces[number].length
        if progress:
            progress(done[0], layout.data_bytes)

    whole.start()
    try:
        workers.run(batches, workers.pack_batch, part, count, finished)
    finally:
        whole.join()
    digests: dict[int, list[str]] = {}
    for number, piece in enumerate(layout.pieces):
        digests.setdefault(piece.member, []).append(by_piece[number])
    for i, digest in whole.digests.items():
        digests[i] = [digest, *digests[i]]  # the file's own first, then its pieces'
    return digests


def pieces_per_member(layout: Layout) -> dict[int, int]:
    counts: dict[int, int] = {}
    for piece in layout.pieces:
        counts[piece.member] = counts.get(piece.member, 0) + 1
    return counts


def _job(number: int, piece: Piece, member: Member) -> workers.PackJob:
    source = member.source if member.kind == "file" and piece.length else ""
    return (number, source, member.identity, member.header if piece.first else b"", member.offset,
            member.data + piece.start, piece.start, piece.length)


def _batches(jobs: list, pieces: list[Piece], count: int) -> list[list]:
    """Jobs grouped, the costliest first (so the last batches to start are short ones)."""
    total = sum(p.cost for p in pieces)
    most = max(1 << 20, min(BATCH_BYTES, total // max(1, count * 8)))
    order = sorted(range(len(jobs)), key=lambda n: -pieces[n].cost)
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
    """Large files' own SHA-256s, read in order while the workers write their pieces."""

    def __init__(self, layout: Layout, members: list[int]) -> None:
        super().__init__(daemon=True, name="whole-file digests")
        self.layout, self.members = layout, members
        self.digests: dict[int, str] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for i in self.members:
                m = self.layout.members[i]
                self.digests[i] = workers.whole_digest(m.source, m.identity)
        except BaseException as exc:  # handed to the caller in ``join``
            self.error = exc

    def join(self, timeout: float | None = None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error


class _IndexWriter:
    """The index member: its size known before the pack starts (digests have a fixed length, and its header is
    one plain block: a short name, whole seconds), written last."""

    def __init__(self, layout: Layout, piece: int) -> None:
        self.layout, self.piece = layout, piece
        self.stamp = time.time_ns() // 1_000_000_000 * 1_000_000_000
        self.data_offset = layout.end + BLOCK
        counts = pieces_per_member(layout)
        blank = {i: ["0" * 64] * (n + 1 if n > 1 else n) for i, n in counts.items()}
        self.size = len(self._data(blank))
        self.total = self.data_offset + self.size + len(index.trailer(self.size))

    def _data(self, digests: dict[int, list[str]]) -> bytes:
        lines = []
        for i, m in enumerate(self.layout.members):
            found = digests.get(i, [])
            whole = found[0] if m.kind == "file" else None
            lines.append(index.entry(m, whole, found[1:] if len(found) > 1 else None, self.piece))
        return index.encode(lines, self.data_offset)

    def write(self, part: SharedPart, digests: dict[int, list[str]]) -> None:
        data = self._data(digests)
        member = index.member_for(data, self.stamp)
        header = header_of(member)
        if len(data) != self.size or len(header) != BLOCK:
            raise RuntimeError("the index came out another size than planned")
        fd = part.open()
        try:
            part.write(fd, header, self.layout.end)
            part.write(fd, data, self.data_offset)
            part.write(fd, index.trailer(len(data)), self.data_offset + len(data))
            portable.datasync(fd)
        finally:
            os.close(fd)
