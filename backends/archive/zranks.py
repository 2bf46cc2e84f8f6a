"""``labferry pack --compress zstd`` under ``mpirun``/``srun``: the frames compressed by every rank and written
by the rank that made them.

A frame's compressed size is known only once it is made, so its place in the archive is too. The frames go out
a window at a time (``AHEAD`` a rank): every rank makes its frames and keeps them, rank 0 learns their sizes,
works out each one's offset (the frames stay in tar order) and hands the offsets back, and every rank writes
its own frames there, into the one part file on the shared file system. Only sizes and digests travel to rank
0, never the frames: as in ParFu, the writing is spread like the compressing. The part file is made as large as
zstd can ever make the frames (its bound), and cut to the real end once the seek table is written.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..destination.shared import SharedPart
from ..host import portable
from . import seekable
from .layout import Layout
from .zpack import AHEAD, make_frame

#: frames this process made and has yet to write (a rank's share of the window under way)
_KEPT: dict[int, bytes] = {}
#: what the seek table and a frame's own bytes may add to a stretch of tar (zstd's ZSTD_COMPRESSBOUND margin)
_MARGIN = 1 << 10


def _bound(decoded: int) -> int:
    """The most bytes a frame of ``decoded`` tar bytes can take: zstd's compress bound, or a raw frame's."""
    return decoded + (decoded >> 8) + _MARGIN


def made(_common, jobs: list) -> list[tuple[int, int, int, list]]:
    """On a rank: its frames of the window made and kept; returns (frame, compressed size, tar bytes, digests)."""
    out = []
    for job in jobs:
        frame, blob, decoded, digests = make_frame(job)
        _KEPT[frame] = blob
        out.append((frame, len(blob), decoded, digests))
    return out


def written(part: SharedPart, places: list[tuple[int, int]]) -> list[int]:
    """On a rank: the frames it kept written at the offsets rank 0 worked out."""
    fd = part.open()
    try:
        for frame, offset in places:
            part.write(fd, _KEPT.pop(frame), offset)
        portable.datasync(fd)
    finally:
        os.close(fd)
    return [frame for frame, _ in places]


def write_frames_ranked(layout: Layout, archive: Path, runner, tail, level: int, progress, on_digests,
                        tail_size: int) -> int:
    """Every frame made and written by the ranks, then rank 0 writes ``tail()``'s frame (``tail_size`` tar
    bytes: the index, known before the pack) and the seek table and names the file. Returns its size."""
    from .zpack import _all_compressed, _compress, frames_of, piece_span, segments

    frames = frames_of(layout)
    jobs = [(i, segments(layout, numbers), _all_compressed(layout, numbers), level) for i, numbers in
            enumerate(frames)]
    decoded_sizes = [sum(piece_span(layout, n)[1] - piece_span(layout, n)[0] for n in numbers) for numbers in frames]
    total = layout.data_bytes
    # the index's frame (written by rank 0 at the end) and the seek table: their most, known now (checked below)
    tail_bound = _bound(tail_size) + len(seekable.seek_table([(0, 0)] * (len(frames) + 1)))
    part = SharedPart.make(archive, sum(_bound(n) for n in decoded_sizes) + tail_bound)
    ranks, at, table, done = runner.ranks, 0, [], 0
    sizes: dict[int, tuple[int, int, list]] = {}  # the window's frames: compressed size, tar bytes, digests
    try:
        for start in range(0, len(jobs), ranks * AHEAD):
            window = jobs[start:start + ranks * AHEAD]
            shares = [[window[r::ranks]] for r in range(ranks)]
            sizes.clear()
            runner.round(shares, made, None, lambda result: sizes.update((f, (n, d, g)) for f, n, d, g in result))
            places = {}
            for frame in sorted(sizes):
                n, decoded, digests = sizes[frame]
                places[frame] = at
                at += n
                table.append((n, decoded))
                on_digests(digests)
                done += decoded
            runner.round([[[(j[0], places[j[0]]) for j in share[0]]] for share in shares], written, part,
                         lambda _: None)
            if progress:
                progress(min(done, total), total)
        raw = tail()
        at = _finish(part, archive, at, table, (_compress(raw, level), len(raw)), tail_bound)
    except BaseException:
        part.discard()
        raise
    return at


def _finish(part: SharedPart, archive: Path, at: int, table: list, index: tuple[bytes, int], room: int) -> int:
    """The index's frame and the seek table after the frames, the part file cut to its end and named."""
    from ..core.errors import LocalError

    last, decoded = index
    table.append((len(last), decoded))
    if len(last) + len(seekable.seek_table(table)) > room:
        raise LocalError(f"The index of {archive.name} is larger than Ferry planned for; pack it without mpirun.")
    fd = part.open()
    try:
        part.write(fd, last, at)
        at += len(last)
        end = seekable.seek_table(table)
        part.write(fd, end, at)
        at += len(end)
        portable.datasync(fd)
    finally:
        os.close(fd)
    part.cut(at).finish(archive)
    return at
