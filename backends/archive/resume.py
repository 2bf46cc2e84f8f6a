"""A pack stopped by Ctrl-C, SIGTERM or a batch system's time limit goes on where it stopped.

``NAME.tar.part`` stays, and beside it ``NAME.tar.part.ferry`` records which pieces are written and their
SHA-256s, with a key of the whole plan (every header, offset and source file's identity, and the piece size).
The same command makes the same plan; when the keys agree, the pieces recorded are not written again. A source
that changed meanwhile changes the key, and the pack starts over: a resumed archive never mixes two states of
a folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from ..destination import STATE_SUFFIX, write_atomic
from .layout import Layout

#: how often the record is written while a pack runs (and always when it stops)
SAVE_EVERY = 5.0
#: the same under MPI, where a stopped rank 0 may not get to write it (a batch system kills the job's ranks
#: together): what the ranks did reaches it once a round (``ranks.ROUNDS``), and is kept each second
SAVE_EVERY_RANKED = 1.0
#: the largest record read back (a digest a piece: 300,000 files make about 25 MB)
MOST_RECORD = 512 << 20


def plan_key(layout: Layout, piece: int) -> str:
    digest = hashlib.sha256(f"piece {piece} end {layout.end}\n".encode())
    for m in layout.members:
        digest.update(f"{m.meta!r} {m.offset} {m.identity}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


class Record:
    """The pieces written so far, kept beside the part file."""

    def __init__(self, archive: Path, key: str, every: float = SAVE_EVERY) -> None:
        """``every``: seconds between saves (``SAVE_EVERY_RANKED`` under MPI, where a batch system's SIGTERM
        gives a job little time)."""
        self.path = Path(f"{archive}.part{STATE_SUFFIX}")
        self.key = key
        self.done: dict[int, str] = {}
        self.saved = time.monotonic()
        self.every = every

    def load(self, part: Path, size: int) -> dict[int, str]:
        """What an earlier run of the same plan wrote; nothing when there was none or it was another plan."""
        try:
            if os.path.getsize(part) != size or os.path.getsize(self.path) > MOST_RECORD:
                return {}
            kept = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(kept, dict) or kept.get("plan") != self.key or not isinstance(kept.get("done"), dict):
            return {}
        # "": a large file's piece, copied by the kernel, whose digest the in-order pass makes again
        self.done = {int(k): v for k, v in kept["done"].items() if isinstance(v, str) and len(v) in (0, 64)}
        return dict(self.done)

    def note(self, results: list[tuple[int, str]]) -> None:
        self.done.update(results)
        if time.monotonic() - self.saved >= self.every:
            self.save()

    def save(self) -> None:
        write_atomic(self.path, json.dumps({"plan": self.key, "done": self.done}).encode())
        self.saved = time.monotonic()

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)
