"""ChunkMap: every byte is fetched exactly once, whatever the streams do."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from backends.streams.chunks import ChunkMap, complement, merge, total

KiB = 1024


def test_merge_and_complement():
    assert merge([(5, 10), (0, 3), (3, 5), (20, 20)]) == [(0, 10)]
    assert complement([(2, 4), (6, 8)], 10) == [(0, 2), (4, 6), (8, 10)]
    assert complement([], 0) == []


def test_leases_go_in_file_order_and_cover_the_file():
    m = ChunkMap(10 * KiB, align=1)
    leases = [m.lease(3 * KiB) for _ in range(4)]
    assert [(le.start, le.end) for le in leases] == [(0, 3072), (3072, 6144), (6144, 9216), (9216, 10240)]
    assert m.lease(KiB) is None
    for le in leases:
        m.record(le, le.end - le.start)
        m.finish(le)
    assert m.complete and m.bytes_done == 10 * KiB


def test_steal_takes_the_back_half_of_the_lease_with_most_left():
    m = ChunkMap(100 * KiB, align=1)
    a = m.lease(100 * KiB)
    m.record(a, 20 * KiB)
    b = m.steal(min_split=KiB)
    assert (b.start, b.end) == (60 * KiB, 100 * KiB)
    assert a.end == 60 * KiB and a.cut
    assert m.steal(min_split=50 * KiB) is None  # nothing left worth a new request


def test_a_slow_victim_keeps_its_share_and_unworthy_leases_are_left_alone():
    m = ChunkMap(100 * KiB, align=1)
    slow, fast = m.lease(50 * KiB), m.lease(50 * KiB)
    m.record(slow, 10 * KiB)
    thief = m.steal(min_split=KiB, worth=lambda lease: lease is slow, keep=lambda lease: 0.25)
    assert (thief.start, thief.end) == (20 * KiB, 50 * KiB)  # the victim keeps a quarter of its 40 KiB
    assert slow.end == 20 * KiB and fast.end == 100 * KiB
    assert m.steal(min_split=KiB, worth=lambda lease: False) is None


def test_record_stops_at_a_cut_end():
    m = ChunkMap(100, align=1)
    a = m.lease(100)
    m.steal(min_split=10)
    assert m.record(a, 80) == 50  # the rest belongs to the thief now
    assert a.finished


def test_release_returns_the_unfetched_rest():
    m = ChunkMap(100, align=1)
    a = m.lease(60)
    m.record(a, 25)
    m.release(a)
    assert m.done_intervals() == [(0, 25)]
    b = m.lease(1000)
    assert (b.start, b.end) == (25, 100)  # merged with what was still pending


def test_resume_from_done_intervals():
    m = ChunkMap(100, done=[(0, 30), (50, 60)], align=1)
    assert m.bytes_done == 40 and m.pending_bytes == 60
    assert m.contiguous_prefix() == 30
    a = m.lease(100)
    assert (a.start, a.end) == (30, 50)


def test_contiguous_prefix_includes_live_leases():
    m = ChunkMap(100, align=1)
    a = m.lease(40)
    b = m.lease(40)
    m.record(b, 40)
    m.record(a, 10)
    assert m.contiguous_prefix() == 10
    m.record(a, 30)
    assert m.contiguous_prefix() == 80


ops = st.lists(
    st.tuples(st.sampled_from(["lease", "steal", "write", "finish", "fail"]), st.integers(0, 7),
              st.integers(1, 5000)),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(size=st.integers(0, 20000), align=st.sampled_from([1, 7, 512]), script=ops)
def test_random_stream_behaviour_never_loses_or_duplicates_bytes(size, align, script):
    m = ChunkMap(size, align=align)
    owned: dict[int, object] = {}
    written = bytearray(size)  # how many times each byte was written

    def write(lease, n):
        start = lease.cursor
        accepted = m.record(lease, n)
        for i in range(start, start + accepted):
            written[i] += 1

    for op, slot, n in script:
        lease = owned.get(slot)
        if op == "lease" and lease is None:
            owned[slot] = m.lease(n) or None
        elif op == "steal" and lease is None:
            owned[slot] = m.steal(max(1, n // 10)) or None
        elif op == "write" and lease is not None:
            write(lease, n)
        elif op == "finish" and lease is not None and lease.finished:
            m.finish(lease)
            owned[slot] = None
        elif op == "fail" and lease is not None:
            m.release(lease)
            owned[slot] = None
        if lease is not None and owned.get(slot) is lease and lease.finished:
            m.finish(lease)
            owned[slot] = None
    # drain: one stream finishes everything that is left
    for lease in list(owned.values()):
        if lease is not None:
            write(lease, lease.remaining)
            m.finish(lease)
    while (lease := m.lease(4096)) is not None:
        write(lease, lease.remaining)
        m.finish(lease)
    assert m.complete
    assert all(count == 1 for count in written), "a byte was written twice or never"
    assert total(m.done_intervals()) == size == m.bytes_done
