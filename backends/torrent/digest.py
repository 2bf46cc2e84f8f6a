"""The sha256 of a fetched torrent, computed behind the download instead of after it.

libtorrent checks every piece against the torrent's own hashes; Ferry also records the
sha256 of the result, like every backend. Hashing 1 GiB after the last piece took ~0.7 s
of a ~12 s fetch on the emulated 50 ms path. So the files are hashed while pieces still
arrive: front to back, as far as the pieces are complete *and written*. libtorrent 2.1
holds verified pieces in its own buffers for a while (hashing the files right behind
the pieces read blocks that were not on disk yet: tried), so the hasher only moves up to
a point that a flush has covered: when the complete prefix has grown, ``flush_cache`` is
asked for, and the prefix known at that moment is safe once libtorrent answers with
``cache_flushed_alert`` (it handles flushes in order).

Pieces arrive front to back when the fetch is sequential (one seed host: order costs
nothing there); in a swarm, rarest-first order leaves most of the hashing to the end, as
before.
"""

from __future__ import annotations

from pathlib import Path

import libtorrent as lt

from ..streams.hashing import FollowingHasher, hash_file
from .browse import data_files

#: ask for a flush when the complete prefix has grown by this much since the last safe point
STEP = 32 * 1024 * 1024


class TorrentDigest:
    def __init__(self, info: lt.torrent_info, root: Path) -> None:
        self.root = root
        self.piece_length = info.piece_length()
        self.num_pieces = info.num_pieces()
        self.total = info.total_size()  # the byte stream the pieces cover, pads included
        self.files = data_files(info)
        self._hashers: dict[str, FollowingHasher] = {}
        self._complete = 0  # pieces [0, _complete) have passed their hash check
        self._asked: int | None = None  # the prefix (bytes) a requested flush will make safe
        self._safe = 0  # bytes [0, _safe) of the torrent are verified and on disk

    @property
    def total_data(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def flush_pending(self) -> bool:
        return self._asked is not None

    def wants_flush(self, pieces: list[bool]) -> bool:
        """Whether to ask libtorrent for a flush now (the complete prefix grew by a STEP since the last one);
        True also records the prefix that flush will cover, so the caller must then ask for it."""
        while self._complete < self.num_pieces and pieces[self._complete]:
            self._complete += 1
        prefix = min(self.total, self._complete * self.piece_length)
        if self._asked is not None or prefix - self._safe < STEP:
            return False
        self._asked = prefix
        return True

    def flushed(self) -> None:
        """libtorrent answered a flush: what was complete when it was asked for is on disk; hash up to there."""
        if self._asked is None:
            return
        self._safe, self._asked = max(self._safe, self._asked), None
        for name, offset, size in self.files:
            if offset >= self._safe or not size:
                continue
            hasher = self._hashers.get(name)
            if hasher is None:
                try:
                    hasher = self._hashers[name] = FollowingHasher(self.root / name)
                except OSError:
                    continue  # hashed from the start at the end instead
            hasher.advance(min(size, self._safe - offset))

    def finish(self) -> dict[str, str]:
        """Every file's sha256 (blocking: call in a worker thread once all pieces are flushed)."""
        digests = {}
        for name, _, size in self.files:
            hasher = self._hashers.pop(name, None)
            digests[name] = hasher.finish(size)["sha256"] if hasher else hash_file(self.root / name)["sha256"]
        return digests

    def stop(self) -> None:
        """Stop the hashing threads (a cancelled job; after ``finish`` there are none left)."""
        hashers, self._hashers = list(self._hashers.values()), {}
        for hasher in hashers:
            hasher.stop()
