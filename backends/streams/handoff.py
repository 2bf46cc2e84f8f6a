"""Connections one file of a list hands to the next in its lane (``Handoff``), so the link stays full across
files; the streams that hold them are ``parallel.ParallelTransfer``'s, the lanes ``folder.fetch_folder``'s."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

MiB = 1024 * 1024
#: a file borrows a free slot of its lane's budget only while this much of it is left
BORROW_FROM = 16 * MiB


@dataclass
class Handoff:
    """Connections one file hands to the next in a list job's lane, so the link stays full across files.

    Every stream holds one of ``slots`` (the large files' share of the budget) while it lives; ``on_tail`` is
    called once, when the first stream ends for want of work: the file's last bytes are in flight, and the next
    file may start on the connections this one gives back. A slot nobody waits for (the list's last files) is
    borrowed by a file still moving, up to ``most`` streams. Without it, the next file began only once the last
    stream, the final check and the rename were done: a quarter of the link idle ~0.2–0.3 s, then a slow start,
    at each of a 1 GiB study's file boundaries (traced at 50 ms / 1e-3, docs/benchmarks.md)."""

    slots: asyncio.Semaphore
    on_tail: Callable[[], None] | None = None
    #: the most streams one file may run, borrowing slots no other file waits for (the list's last files)
    most: int = 1
