"""Choosing globus-url-copy's ``-p`` (parallel streams) and ``-tcp-bs`` (TCP buffer) for a path.

globus-url-copy cannot change its stream count once running, so ``--streams auto`` is
decided before the start, from the best of what Ferry knows:

1. the benchmark log: the stream count of the fastest recent transfer to that host with
   this backend (the engine passes it as ``initial_streams``), or a preflight
   recommendation stored with the site (``backend_options["streams"]``);
2. otherwise the round-trip time measured by one TCP handshake to the server, through the
   same table the other backends start from (``tuner.initial_streams``): on the emulated
   1 Gbit/s paths 32 streams filled 50 ms at loss 1e-4 and 64 were needed at 100 ms/1e-3
   (bare ``-p 8`` reached only 284 Mbit/s there).

``-tcp-bs`` sets SO_SNDBUF/SO_RCVBUF on every data socket, which *switches off* Linux's
receive autotuning and is silently capped at ``net.core.rmem_max``. So Ferry passes it
only when it helps: when the per-stream share of the bandwidth-delay product is larger
than what autotuning may grow to (``tcp_rmem`` max) yet fits under ``rmem_max``. Where
autotuning already covers the path, forcing a buffer can only hurt. An explicit
``tcp_bs`` in the options (from the preflight or the user) always wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.options import read_options
from ..core.words import counted
from ..host.hosttcp import host_tcp
from ..streams.tuner import initial_streams
from .options import GridftpOptions

#: below this many bytes per stream, more streams only add set-up cost
MIN_BYTES_PER_STREAM = 16 * 1024 * 1024
#: the bottleneck assumed when nothing better is known (most lab paths are 1–10 Gbit/s)
DEFAULT_BOTTLENECK_BPS = 10e9


@dataclass(frozen=True)
class Plan:
    streams: int
    tcp_bs: int | None
    why: str  # in words, for the job's notes


def kernel_buffers() -> tuple[int | None, int | None]:
    """(largest buffer a program may set, largest buffer autotuning may grow to), receive side."""
    tcp = host_tcp()
    return tcp.rmem_max, tcp.autotune_max


def choose_streams(streams, *, learned: int | None, rtt_s: float | None, size: int | None,
                   maximum: int) -> tuple[int, str]:
    if isinstance(streams, int):
        return max(1, min(streams, 64)), f"{counted(streams, 'stream')} as asked"
    if learned:
        return max(1, min(learned, maximum)), f"{counted(learned, 'stream')}, the best recent result to this site"
    guess = initial_streams(rtt_s, size, maximum, MIN_BYTES_PER_STREAM)
    rtt = f"{rtt_s * 1000:.0f} ms" if rtt_s is not None else "an unknown round trip"
    return guess, f"{counted(guess, 'stream')} for {rtt}"


def choose_buffer(streams: int, rtt_s: float | None, *, explicit: int | None = None,
                  bottleneck_bps: float | None = None, kernel: tuple[int | None, int | None] | None = None,
                  ) -> tuple[int | None, str]:
    if explicit:
        return explicit, f"TCP buffer {explicit} bytes as configured"
    if not rtt_s:
        return None, "TCP buffers left to the kernel's autotuning (round trip unknown)"
    rmem_max, autotune_max = kernel if kernel is not None else kernel_buffers()
    bdp = (bottleneck_bps or DEFAULT_BOTTLENECK_BPS) / 8 * rtt_s
    per_stream = int(bdp / max(1, streams) * 1.25)
    if autotune_max and per_stream <= autotune_max:
        return None, (f"TCP buffers left to autotuning: each stream needs about {per_stream // 1024} KiB "
                      f"and the kernel may grow to {autotune_max // 1024} KiB")
    if rmem_max and per_stream <= rmem_max:
        return per_stream, f"TCP buffer {per_stream // 1024} KiB per stream (bandwidth-delay product / streams)"
    return None, (f"TCP buffers left to autotuning: each stream would need {per_stream // 1024} KiB, more than "
                  "this host allows (net.core.rmem_max); see the preflight for the sysctl settings")


def needs_rtt(options) -> bool:
    """Whether the plan depends on the round trip (otherwise the copy need not wait for it)."""
    extra = read_options(GridftpOptions, options.backend_options)
    if extra.transport == "udt":
        return False
    return options.streams == "auto" and not (options.initial_streams or extra.streams) or bool(extra.bottleneck_bps)


def plan(options, *, rtt_s: float | None, size: int | None) -> Plan:
    """The stream count and buffer for one run, with the reasons in words (the transport is already decided:
    ``transport.pinned``)."""
    extra = read_options(GridftpOptions, options.backend_options)
    if extra.transport == "udt":
        return Plan(1, None, "UDT, one flow (globus-url-copy -udt runs in stream mode, without parallel streams or "
                             "TCP buffers)")
    learned = options.initial_streams or extra.streams
    streams, why_streams = choose_streams(options.streams, learned=learned, rtt_s=rtt_s, size=size,
                                          maximum=options.max_streams)
    tcp_bs, why_buffer = choose_buffer(streams, rtt_s, explicit=extra.tcp_bs,
                                       bottleneck_bps=extra.bottleneck_bps)
    return Plan(streams, tcp_bs, f"{why_streams}; {why_buffer}.")
