"""A source still arriving, told by a small JSON file beside it (a relay's spool on a Ferry agent).

The hop that feeds the spool (the laptop's upload, reported range by range to the agent) has the agent write
what has arrived and been checked into ``arrivals.json``; the hop that sends the spool on reads it. A file, not
a call: the job that reads it is an ordinary queued job of the agent's engine, which survives the agent's
restart with its options (the file's path) and finds the same file again.

Format: ``{"size": N, "mode": M, "mtime": T, "ready": [[start, end], …], "sha256": HEX or null,
"failed": SENTENCE or null}``; ``sha256`` is set once every byte is there.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from ..core.base import TransferRequest
from ..core.errors import TransferError
from .chunks import Interval, merge

POLL = 0.1  # seconds between looks at the file while a hop waits for more


def write_arrivals(path: Path | str, *, size: int, mode: int, mtime: float, ready: list[Interval],
                   sha256: str | None = None, failed: str | None = None) -> None:
    """Replace the file atomically (a reader never sees half of it)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"size": size, "mode": mode, "mtime": mtime, "ready": [list(r) for r in merge(ready)],
                               "sha256": sha256, "failed": failed}))
    os.replace(tmp, path)


def read_arrivals(path: Path | str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


class ArrivalFile:
    """``Arriving`` read from an arrivals file; re-read only when the file changed."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._seen: tuple[int, int] | None = None
        self._state: dict = {}
        self._refresh()
        if not self._state:
            raise TransferError(f"The relay's record {self.path} is missing; start the relayed copy again.")
        self.size = int(self._state["size"])
        self.mode = int(self._state.get("mode") or 0o644)
        self.mtime = float(self._state.get("mtime") or time.time())

    def _refresh(self) -> None:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return
        key = (info.st_mtime_ns, info.st_ino)
        if key != self._seen:
            try:
                self._state = read_arrivals(self.path)
                self._seen = key
            except (OSError, ValueError):
                pass  # replaced while read: the next look sees the new one

    def ready(self) -> list[Interval]:
        self._refresh()
        return [(int(s), int(e)) for s, e in self._state.get("ready", [])]

    def _check(self) -> None:
        if self._state.get("failed"):
            raise TransferError(self._state["failed"])

    async def more(self, timeout: float) -> None:
        before = self._seen
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._refresh()
            self._check()
            if self._seen != before:
                return
            await asyncio.sleep(POLL)

    async def whole(self) -> str:
        while True:
            self._refresh()
            self._check()
            if self._state.get("sha256"):
                return self._state["sha256"]
            await asyncio.sleep(POLL)


def arrivals_of(request: TransferRequest):
    """The request's ``Arriving``: the object a caller handed down, or the file its options name."""
    if request.arriving is not None:
        return request.arriving
    if request.options.arriving:
        return ArrivalFile(request.options.arriving)
    return None


def ready_bytes(ready: list[Interval]) -> int:
    return sum(e - s for s, e in ready)
