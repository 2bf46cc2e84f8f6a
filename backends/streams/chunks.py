"""ChunkMap: which bytes of a file are done, waiting, or being fetched, and by whom.

One helper for every backend that splits a file across parallel streams (HTTP
ranges, SFTP offsets), instead of one copy per protocol. Its rules:

* Work is handed out in file order from the *pending* list, in leases of a size
  the caller chooses (guided self-scheduling: big leases early, small ones near the
  end, so all streams finish together and the done region grows front to back,
  which lets the hasher follow right behind the transfer).
* When nothing is pending, an idle stream may *steal* the back half of the lease
  with the most left to do (aria2 and axel do the same), so no stream finishes
  alone at the end. The victim's lease end shrinks; its request still covers the
  old end, so it must stop reading at the new end (``Lease.cut``).
* Everything is in one thread (the engine's event loop): no locks.

Intervals are half-open ``[start, end)`` byte offsets.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from itertools import count

Interval = tuple[int, int]


def merge(intervals: list[Interval]) -> list[Interval]:
    """Sorted, non-overlapping, non-empty intervals covering the same bytes."""
    out: list[list[int]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def complement(intervals: list[Interval], size: int) -> list[Interval]:
    """The gaps of merged ``intervals`` inside ``[0, size)``."""
    gaps, pos = [], 0
    for start, end in merge(intervals):
        start, end = max(0, start), min(size, end)
        if start > pos:
            gaps.append((pos, start))
        pos = max(pos, end)
    if pos < size:
        gaps.append((pos, size))
    return gaps


def total(intervals: list[Interval]) -> int:
    return sum(e - s for s, e in intervals)


@dataclass(eq=False)
class Lease:
    """A stream's current piece of work: it has written ``[start, cursor)``."""

    id: int
    start: int
    end: int
    cursor: int = 0
    cut: bool = False  # end was shortened by a steal: the request runs past ``end``
    requested_end: int = 0  # where the request for this lease was made to end

    @property
    def remaining(self) -> int:
        return self.end - self.cursor

    @property
    def finished(self) -> bool:
        return self.cursor >= self.end


#: stands for the size of a file whose size is not known yet (``ChunkMap(None)``)
UNKNOWN_SIZE = 1 << 62


class ChunkMap:
    """``size=None``: leases can be handed out before the size is known (speculative
    first requests); ``set_size`` clips everything once the first answer tells it."""

    def __init__(self, size: int | None, done: list[Interval] | None = None, align: int = 64 * 1024) -> None:
        if size is not None and size < 0:
            raise ValueError("size must be >= 0")
        self.size_known = size is not None
        size = UNKNOWN_SIZE if size is None else size
        self.size = size
        self.align = max(1, align)
        self._done = merge([(max(0, s), min(size, e)) for s, e in (done or [])])
        self._pending = complement(self._done, size)
        self._active: dict[int, Lease] = {}
        self._ids = count(1)
        self._bytes_done = total(self._done)
        self.steals = 0

    # -- state -----------------------------------------------------------------
    @property
    def bytes_done(self) -> int:
        return self._bytes_done

    @property
    def pending_bytes(self) -> int:
        return total(self._pending)

    @property
    def active(self) -> list[Lease]:
        return list(self._active.values())

    @property
    def complete(self) -> bool:
        return not self._pending and not self._active and self._bytes_done == self.size

    def pending_start(self) -> int:
        """Where the first pending byte is (the size when nothing is pending)."""
        return self._pending[0][0] if self._pending else self.size

    def is_active(self, lease: Lease) -> bool:
        return self._active.get(lease.id) is lease

    def done_intervals(self) -> list[Interval]:
        """Everything written so far, including the part of each live lease."""
        live = [(lease.start, lease.cursor) for lease in self._active.values()]
        return merge(self._done + live)

    def contiguous_prefix(self) -> int:
        """How many bytes from offset 0 are written without a gap."""
        done = self.done_intervals()
        return done[0][1] if done and done[0][0] == 0 else 0

    def set_size(self, size: int) -> None:
        """The file's real size: pending work and live leases past it are clipped away."""
        self.size, self.size_known = size, True
        self._done = [(s, min(e, size)) for s, e in self._done if s < size]
        self._pending = [(s, min(e, size)) for s, e in self._pending if s < size]
        for lease in self._active.values():
            lease.end = max(lease.start, min(lease.end, size))  # a lease past the end becomes empty
        self._bytes_done = total(self._done) + sum(lease.cursor - lease.start for lease in self._active.values())

    def reset_done(self, done: list[Interval]) -> None:
        """Replace what counts as done (a resume record turned out stale); live leases stay."""
        self._done = merge([(max(0, s), min(self.size, e)) for s, e in done])
        live = [(lease.start, lease.end) for lease in self._active.values()]
        self._pending = complement(self._done + live, self.size)
        self._bytes_done = total(self._done) + sum(lease.cursor - lease.start for lease in self._active.values())

    # -- handing out work ------------------------------------------------------
    def lease(self, max_bytes: int) -> Lease | None:
        """The next ``max_bytes`` (at most) of pending work, in file order."""
        if not self._pending:
            return None
        start, end = self._pending[0]
        cut = min(end, self._round_up(start + max(1, max_bytes)))
        if cut >= end:
            self._pending.pop(0)
        else:
            self._pending[0] = (cut, end)
        return self._open(start, cut)

    def lease_within(self, max_bytes: int, ready: list[Interval], min_bytes: int = 1) -> Lease | None:
        """Like ``lease``, but only of bytes inside ``ready`` (merged intervals of a source still arriving, as
        a relay's spool is): the first pending byte that has arrived, up to ``max_bytes`` and no further than
        its ready interval reaches; a piece shorter than ``min_bytes`` only when it ends where the pending
        work does (the file's end, or a gap another lease holds)."""
        for index, (p_start, p_end) in enumerate(self._pending):
            for r_start, r_end in ready:
                start, end = max(p_start, r_start), min(p_end, r_end)
                if start >= end or (end - start < min_bytes and end < p_end):
                    continue
                cut = min(end, self._round_up(start + max(1, max_bytes)))
                rest = [(p_start, start), (cut, p_end)]
                self._pending[index:index + 1] = [(s, e) for s, e in rest if e > s]
                return self._open(start, cut)
        return None

    def steal(self, min_split: int, rank=None, worth=None, keep=None) -> Lease | None:
        """Split the live lease with the most work left; the caller takes its back half.

        ``rank`` orders candidates (default: bytes left; a caller that knows each
        stream's rate passes seconds left). Leases with less than ``2 * min_split``
        left, or that ``worth`` (a caller's judgement) turns down, are not worth the
        extra request. ``keep`` gives the share of the rest the victim keeps (default half;
        a slow victim should keep less than a fast thief takes, a thief that starts late more).
        """
        candidates = [lease for lease in self._active.values()
                      if lease.remaining >= 2 * max(1, min_split) and (worth is None or worth(lease))]
        if not candidates:
            return None
        victim = max(candidates, key=rank or (lambda lease: lease.remaining))
        share = min(0.9, max(0.0, keep(victim))) if keep else 0.5
        kept = max(min_split, int(victim.remaining * share))
        mid = self._round_up(victim.cursor + kept)
        if mid >= victim.end:  # alignment overshot a short lease: split exactly
            mid = victim.cursor + kept
        old_end = victim.end
        victim.end = mid
        victim.cut = True
        self.steals += 1
        return self._open(mid, old_end)

    def record(self, lease: Lease, nbytes: int) -> int:
        """Count ``nbytes`` written at ``lease.cursor``; returns how many belong to the lease.

        Fewer than ``nbytes`` means the lease ended inside this read (it was cut by a
        steal, or the server sent more than asked): the rest must not be written.
        """
        take = max(0, min(nbytes, lease.end - lease.cursor))
        lease.cursor += take
        self._bytes_done += take
        return take

    def finish(self, lease: Lease) -> None:
        """The lease is complete (``cursor == end``)."""
        if not lease.finished:
            raise ValueError("lease is not finished")
        self._close(lease)

    def release(self, lease: Lease) -> None:
        """Give back what a failed stream did not fetch; what it wrote stays done."""
        if lease.cursor < lease.end:
            bisect.insort(self._pending, (lease.cursor, lease.end))
            self._pending = merge(self._pending)
        self._close(lease)

    def release_all(self) -> None:
        for lease in list(self._active.values()):
            self.release(lease)

    # -- internals ---------------------------------------------------------------
    def _open(self, start: int, end: int) -> Lease:
        lease = Lease(id=next(self._ids), start=start, end=end, cursor=start, requested_end=end)
        self._active[lease.id] = lease
        return lease

    def _close(self, lease: Lease) -> None:
        self._active.pop(lease.id, None)
        if lease.cursor > lease.start:
            self._done = merge(self._done + [(lease.start, lease.cursor)])

    def _round_up(self, offset: int) -> int:
        return min(self.size, -(-offset // self.align) * self.align)
