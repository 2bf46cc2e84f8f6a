"""What joins the laptop's hop of a relay to the agent: the ranges its upload verified, told as they grow; the
ranges of a download's spool the agent has, asked for as they grow; and a sink that keeps a hop's figures."""

from __future__ import annotations

import asyncio
import threading
import time

from backends.core.abilities import StreamRatesSink
from backends.core.base import Sink
from backends.core.errors import TransferError
from backends.streams.chunks import Interval

TELL_EVERY = 0.25  # seconds: how far the agent's view of the first hop may lag behind it
ASK_EVERY = 0.25


class RangesReporter:
    """Hands the first hop's verified ranges to the agent from a thread of its own: the upload's saves
    (``on_ranges``) never wait on the agent's round trip, and a burst of saves is one message."""

    def __init__(self, client, relay: str) -> None:
        self.client, self.relay = client, relay
        self._latest: list[Interval] | None = None
        self._cond = threading.Condition()
        self._closing = False
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name="relay-ranges", daemon=True)
        self._thread.start()

    def tell(self, done: list[Interval]) -> None:
        with self._cond:
            self._latest = list(done)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._latest is None and not self._closing:
                    self._cond.wait()
                done, self._latest = self._latest, None
                if done is None:
                    return
            try:
                self.client.call("relay_ranges", relay=self.relay, done=done)
            except (TransferError, OSError, ValueError) as exc:
                self.error = exc  # the agent went away: the first hop goes on; its end tells the agent all
            time.sleep(TELL_EVERY)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(30)


class AgentArrivals:
    """``Arriving`` for a download relay: the agent's spool, as ``relay_status`` reports it."""

    def __init__(self, client, relay: str, status: dict) -> None:
        self.client, self.relay = client, relay
        self.size = int(status["size"])
        self.mode = 0o644
        self.mtime = float(status["mtime"])
        self.status = status
        self.complete_seen_at: float | None = None

    def ready(self) -> list[Interval]:
        return [(int(s), int(e)) for s, e in self.status.get("ready", [])]

    async def _ask(self) -> dict:
        status = await asyncio.to_thread(self.client.call, "relay_status", relay=self.relay)
        if status.get("failed"):
            raise TransferError(status["failed"])
        if status.get("size") is not None and int(status["size"]) != self.size:
            raise TransferError("The relay's first hop began its file again with another size; run the copy again.")
        self.status = status
        if status.get("sha256") and self.complete_seen_at is None:
            self.complete_seen_at = time.time()
        return status

    async def more(self, timeout: float) -> None:
        before = self.status.get("ready")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (await self._ask()).get("ready") != before:
                return
            await asyncio.sleep(ASK_EVERY)

    async def whole(self) -> str:
        while not self.status.get("sha256"):
            await self._ask()
            if not self.status.get("sha256"):
                await asyncio.sleep(ASK_EVERY)
        return self.status["sha256"]


class HopSink:
    """Passes a hop's progress to the job's sink and keeps its figures: when its first byte moved, the most
    streams, so history can show each hop."""

    def __init__(self, sink: Sink, label: str, last: bool) -> None:
        self.sink, self.label, self.last = sink, label, last
        self.first_byte_at: float | None = None
        self.streams = 0

    def progress(self, bytes_done: int, bytes_total: int | None, streams: int) -> None:
        if bytes_done and self.first_byte_at is None:
            self.first_byte_at = time.time()
        self.streams = max(self.streams, streams)
        self.sink.progress(bytes_done, bytes_total, streams)

    def stream_rates(self, rates: list[float]) -> None:
        if isinstance(self.sink, StreamRatesSink):
            self.sink.stream_rates(rates)

    def note(self, message: str) -> None:
        self.sink.note(f"{self.label}: {message}")

    def stage(self, stage: str) -> None:
        if self.last:  # the job verifies once, at its end; a first hop's check is not the job's
            self.sink.stage(stage)
