"""``labferry pack --compress zstd``: the same laid-out tar, cut into frames that workers compress at once.

A frame is a stretch of the tar from one piece's start to a later piece's end (about ``FRAME`` bytes of small
members, or one piece of a large file), so every member and every piece lies inside frames of its own and can
be read back by decoding only those. Compressed sizes are known only once a frame is made, so the frames are
written in order as they come back (at most a few per worker in flight), then the index's frame, then the
seek table (``seekable.py``).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from ..core.formats import compressed_already
from ..destination import WholeFile
from ..host import portable
from . import headers, seekable, workers
from .layout import Layout, Piece

#: the tar bytes of small members a frame gathers (a large file's piece is a frame of its own)
FRAME = 4 << 20
#: zstd's level: 3 is its default, about 3× on FASTQ and VCF text at ~150 MB/s a core
LEVEL = 3
#: frames in flight a worker (made but not yet written in order)
AHEAD = 3

#: a stretch of a frame: (piece number or -1, its header's meta or None, source or "", identity, start in the
#: source, length, zero bytes after it); its bytes are the header, then the data, then the zeros
Segment = tuple[int, tuple | None, str, tuple, int, int, int]


def piece_span(layout: Layout, number: int) -> tuple[int, int]:
    """The tar bytes piece ``number`` covers: from its header (a first piece) to its data's end (its padding
    too, for a member's last piece)."""
    piece = layout.pieces[number]
    m = layout.members[piece.member]
    begin = m.offset if piece.first else m.data + piece.start
    end = m.data + piece.start + piece.length
    last = piece.start + piece.length >= m.size
    return begin, (m.end if last else end)


def frames_of(layout: Layout, frame: int = FRAME) -> list[list[int]]:
    """The pieces in tar order, grouped into frames; members compressed already go into frames of their own
    (stored raw), so neither kind of data decides how the other is stored."""
    frames: list[list[int]] = []
    current: list[int] = []
    size, kind = 0, None
    for number in range(len(layout.pieces)):
        begin, end = piece_span(layout, number)
        raw = compressed_already(layout.members[layout.pieces[number].member].name)
        if current and (raw != kind or end - begin >= frame):
            frames.append(current)
            current, size = [], 0
        current.append(number)
        size, kind = size + end - begin, raw
        if size >= frame:
            frames.append(current)
            current, size = [], 0
    if current:
        frames.append(current)
    return frames


def segments(layout: Layout, numbers: list[int]) -> list[Segment]:
    out = []
    for number in numbers:
        piece: Piece = layout.pieces[number]
        m = layout.members[piece.member]
        begin, end = piece_span(layout, number)
        header = m.meta if piece.first else None
        source = m.source if m.kind == "file" and piece.length else ""
        out.append((number, header, source, m.identity, piece.start, piece.length,
                    end - (m.data if piece.first else begin) - piece.length))
    return out


def make_frame(job: tuple[int, list[Segment], bool, int]) -> tuple[int, bytes, int, list[tuple[int, str]]]:
    """In a worker: the frame's tar bytes read and hashed a piece at a time, then compressed (or stored raw)."""

    frame, parts, raw, level = job
    data = bytearray()
    digests = []
    for number, meta, source, identity, start, length, zeros in parts:
        if meta is not None:
            data += headers.header(*meta)
        if source:
            piece = workers.read_source(source, identity, start, length)
            digests.append((number, hashlib.sha256(piece).hexdigest()))
            data += piece
        elif number >= 0:
            digests.append((number, hashlib.sha256().hexdigest()))
        data += bytes(zeros)
    out = seekable.raw_frame(bytes(data)) if raw else _compress(bytes(data), level)
    return frame, out, len(data), digests


def write_frames(layout: Layout, archive: Path, count: int, tail, level: int, progress, on_digests) -> int:
    """Every frame written in order into ``NAME.part``, then ``tail()`` (the index member, made once every
    digest is in) as the last frame, and the seek table; then the file under its name. Returns its size."""
    frames = frames_of(layout)
    jobs = [(i, segments(layout, numbers), _all_compressed(layout, numbers), level) for i, numbers in
            enumerate(frames)]
    table: list[tuple[int, int]] = []
    with WholeFile(archive, None, str(archive)) as out:
        done = [0]

        def take(result) -> None:
            _, blob, decoded, digests = result
            out.write(blob)
            table.append((len(blob), decoded))
            on_digests(digests)
            done[0] += decoded
            if progress:
                progress(min(done[0], layout.data_bytes), layout.data_bytes)

        _in_order(jobs, count, take)
        last = tail()
        blob = _compress(last, level)
        out.write(blob)
        table.append((len(blob), len(last)))
        out.write(seekable.seek_table(table))
        out.flush()
        portable.datasync(out.fd)
        out.commit()
    return archive.stat().st_size


def _compress(data: bytes, level: int) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=level).compress(data)


def _all_compressed(layout: Layout, numbers: list[int]) -> bool:
    members = {layout.pieces[n].member for n in numbers}
    files = [layout.members[i] for i in members if layout.members[i].kind == "file"]
    return bool(files) and all(compressed_already(m.name) for m in files)


def _in_order(jobs: list, count: int, take) -> None:
    """``make_frame`` for every job on ``count`` processes, ``take`` called in the jobs' order."""
    if count <= 1:
        for job in jobs:
            take(make_frame(job))
        return
    pool = ProcessPoolExecutor(max_workers=count, initializer=workers.ignore_interrupts)
    pending: dict = {}
    following = submitted = 0
    try:
        while following < len(jobs):
            while submitted < len(jobs) and submitted - following < count * AHEAD:
                pending[submitted] = pool.submit(make_frame, jobs[submitted])
                submitted += 1
            take(pending.pop(following).result())  # the next in order; later ones wait, made, in ``pending``
            following += 1
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

