"""A list's last small files in pieces, so that no lane sits idle while others fetch the list's tail.

With whole files, the lanes whose last file came early sat idle while the others fetched theirs: 40 × 4 MiB on
16 lanes (50 ms / 1e-3) is eight lanes with three files and eight with two, and the last 0.8 s ran on half the
lanes. The last files of the list (as many as the lanes it may have) are asked for in pieces (``Range``) instead,
each written in its place (``WholeFile.write_at``) by the lane free first; the lane that brings a file's last
piece reads the file back and hashes it. A piece answered with anything but a 206 of exactly its span is
``NotPlain``: the whole file goes to the full client, as any file the lean path does not take.
"""

from __future__ import annotations

import asyncio
import threading

#: a piece is at least this size; a file has at most MAX_PIECES
PIECE_LEAST = 1 << 20
MAX_PIECES = 4


class Pieces:
    """The pieces of one file still to arrive: the lane that brings the last one reads the file back."""

    def __init__(self, count: int) -> None:
        self.left = count
        self._lock = threading.Lock()

    def last_in(self) -> bool:
        with self._lock:
            self.left -= 1
            return self.left == 0


def spans(size: int, pieces: int) -> list[tuple[int, int]]:
    """``size`` bytes as ``pieces`` spans of (first, last) byte, the same length but for the last."""
    each = -(-size // pieces)
    return [(first, min(size, first + each) - 1) for first in range(0, size, each)]


def pieces_for(sizes: list[int], lanes: int) -> list[int]:
    """How many pieces each of a list's small files (in the order they are fetched) is asked for in: the last
    ``lanes`` files, each in pieces of at least ``PIECE_LEAST``; the others whole (1)."""
    tail = max(0, len(sizes) - lanes)
    return [1 if at < tail else max(1, min(MAX_PIECES, size // PIECE_LEAST)) for at, size in enumerate(sizes)]


async def all_pieces(files: list) -> dict[str, str]:
    """A file's digests once all its parts are in: the lean path's ``_File``s (``done``, ``call``), the whole file
    or its pieces. When one fails, or the file is cancelled, the others are given up, and each being written is
    waited for, so the file is never closed under a lane; the first failure is what the caller hears."""
    runs = [asyncio.wrap_future(file.done) for file in files]
    first = None
    try:
        done, _ = await asyncio.wait(runs, return_when=asyncio.FIRST_EXCEPTION)
        first = next((run.exception() for run in done if not run.cancelled() and run.exception()), None)
    finally:
        if not all(run.done() for run in runs):
            writing = []
            for file, run in zip(files, runs, strict=True):
                if file.call.abort():
                    writing.append(run)
                else:
                    run.cancel()
            if writing:
                await asyncio.wait(writing)
    if first is not None:
        raise first
    return next(digests for digests in (run.result() for run in runs) if digests)
