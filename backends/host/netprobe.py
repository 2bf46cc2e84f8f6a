"""Cheap measurements of a path, shared by backends (and the preflight later)."""

from __future__ import annotations

import asyncio
import errno
import select
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

from ..core.base import ProbeResult

#: a handshake begun early is used only this fresh (a queued job may start much later: measure again then)
EARLY_SECONDS = 20.0
_early: dict[tuple[str, int], tuple[socket.socket, float]] = {}
_early_lock = threading.Lock()


def begin_handshake(host: str, port: int) -> None:
    """Send a TCP SYN to ``host:port`` now and return at once; ``connect_time`` reads the round trip later.

    For a backend that knows where it will connect before it has imported what it connects with
    (aiohttp takes ~0.2 s to import): the handshake crosses the path meanwhile, so the round trip that
    decides how many streams to open is known when the first streams open, not one round trip later.
    Blocking only for name resolution (call it from a worker thread); errors are left to the real
    connections, which report them in words.
    """
    if not _KERNEL_RTT:
        return  # the handshake's time could only be read off a clock that runs on while Python imports
    with _early_lock:
        _drop_stale(time.monotonic())
        if (host, port) in _early:
            return
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, IndexError):
        return
    sock.setblocking(False)
    began = time.monotonic()
    if sock.connect_ex(address) not in (0, errno.EINPROGRESS):
        sock.close()
        return
    with _early_lock:
        old = _early.pop((host, port), None)
        _early[(host, port)] = (sock, began)
    if old:
        old[0].close()


def _drop_stale(now: float) -> None:
    for key, (sock, began) in list(_early.items()):
        if now - began > EARLY_SECONDS:
            sock.close()
            del _early[key]


def answered_rtt(host: str, port: int) -> float | None:
    """The round trip of an early handshake that the server has already answered, without waiting
    (None: none was begun, or its answer is still on its way - ``connect_time`` waits for it then)."""
    with _early_lock:
        entry = _early.get((host, port))
        if entry is None or not select.select([], [entry[0]], [], 0)[1]:
            return None
        del _early[(host, port)]
    sock = entry[0]
    try:
        return None if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) else kernel_rtt(sock)
    finally:
        sock.close()


def _take_early(host: str, port: int) -> tuple[socket.socket, float] | None:
    with _early_lock:
        _drop_stale(time.monotonic())
        return _early.pop((host, port), None)


async def _early_rtt(sock: socket.socket, began: float, timeout: float) -> float | None:
    """The round trip of a handshake ``begin_handshake`` started (waits for it if it is still on its way)."""
    loop = asyncio.get_running_loop()
    answered = loop.create_future()
    try:
        loop.add_writer(sock.fileno(), lambda: answered.done() or answered.set_result(None))
    except NotImplementedError:  # a loop that cannot watch a socket (Windows' Proactor): measured otherwise
        sock.close()
        return None
    try:
        await asyncio.wait_for(answered, max(0.0, timeout - (time.monotonic() - began)))
        if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            return None
        return kernel_rtt(sock)
    except asyncio.TimeoutError:
        return None
    finally:
        loop.remove_writer(sock.fileno())
        sock.close()


async def connect_time(host: str, port: int, timeout: float = 10.0) -> float | None:
    """Seconds for one TCP handshake to ``host:port``: one round trip, measured cheaply (or the one
    ``begin_handshake`` started)."""
    early = _take_early(host, port)
    if early is not None:
        return await _early_rtt(*early, timeout)
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=1)
        began = time.monotonic()
        _, writer = await asyncio.wait_for(asyncio.open_connection(*infos[0][4][:2]), timeout)
        spent = time.monotonic() - began
        kernel = kernel_rtt(writer.get_extra_info("socket"))
        writer.close()
        return kernel or spent
    except (OSError, asyncio.TimeoutError, IndexError):
        return None  # the real requests will report the problem in words


def kernel_rtt(sock) -> float | None:
    """The round trip the kernel measured on a connected TCP socket (Linux ``TCP_INFO.tcpi_rtt``).

    The event loop's own clock reads a loopback handshake as 2-5 ms when the loop is busy (a login
    being spawned, imports in another thread): enough to take a LAN for a long path. The kernel
    times the SYN and its answer where they happen.
    """
    if sock is None or not _KERNEL_RTT:
        return None
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    except OSError:
        return None
    if len(raw) < _TCPI_RTT + 4:
        return None
    rtt_us = struct.unpack_from("I", raw, _TCPI_RTT)[0]
    return rtt_us / 1e6 if rtt_us else None


_TCPI_RTT = 68  # offset of tcpi_rtt (µs) in struct tcp_info: 8 bytes of u8 fields, then 15 u32 before it
_KERNEL_RTT = sys.platform.startswith("linux") and hasattr(socket, "TCP_INFO")


class RateSampler:
    """A running byte count sampled over time; its rate over the later part of a probe.

    A probe of a few seconds spends its first round trips in TCP slow start, more so the
    longer the path; counting those would understate every stream count, and unevenly.
    So probes report the bytes and seconds of their last ``share`` only.
    """

    def __init__(self, counter, share: float = 0.5) -> None:
        self.counter, self.share = counter, share
        self.samples: list[tuple[float, int]] = []

    def take(self) -> None:
        self.samples.append((time.monotonic(), self.counter()))

    def steady(self) -> tuple[int, float]:
        """(bytes, seconds) over the last ``share`` of the time since the first byte."""
        moving = [s for s in self.samples if s[1] > 0]
        if len(moving) < 2:
            return (moving[0][1] if moving else 0), 0.0
        t0, t1 = moving[0][0], moving[-1][0]
        since = t1 - (t1 - t0) * self.share
        start = next(s for s in moving if s[0] >= since)
        if start is moving[-1]:
            start = moving[-2]
        return moving[-1][1] - start[1], moving[-1][0] - start[0]


class StreamPool(Protocol):
    """What a backend gives ``sweep_down``: streams it can start and stop, and the bytes they read."""

    async def start(self, count: int) -> None: ...

    async def stop(self, count: int) -> None: ...

    def moved(self) -> int: ...


async def sweep_down(pool: StreamPool, counts: list[int], level_seconds: float, rtt_ms: float | None,
                     on_level: Callable[[ProbeResult], None] | None = None) -> list[ProbeResult]:
    """Load the path with the most streams, then drop to each smaller count; one result per level.

    Why from above: a probe of a few seconds started from nothing sees streams before their first
    losses, so a lone stream looks far better than it lasts (100 ms/1e-3: 110 Mbit/s probed, 27 over
    1 GiB). Streams that have carried the path for seconds have met its losses; when some are dropped,
    the rest show what they can hold. Each level is judged over its later 60 %, after the drop.
    The first level also waits for every stream's handshake and slow start.
    """
    counts = sorted(set(counts), reverse=True)
    await pool.start(counts[0])
    sampler = RateSampler(pool.moved, share=0.6)
    levels = []
    running = counts[0]
    for index, count in enumerate(counts):
        if count < running:
            await pool.stop(running - count)
            running = count
        sampler.samples.clear()
        sampler.take()
        until = time.monotonic() + level_seconds * (1.5 if index == 0 else 1.0)
        while time.monotonic() < until:
            await asyncio.sleep(0.05)
            sampler.take()
        moved, spent = sampler.steady()
        levels.append(ProbeResult(count, moved, spent, rtt_ms))
        if on_level:
            on_level(levels[-1])
    await pool.stop(running)
    return levels
