"""Running ``globus-url-copy``: its argv and its ``-vb`` progress (its errors in words: ``faults.py``).

The process is started with an argv list (never a shell), in its own process group so a
cancel stops it and whatever it forked, and with the parent-death signal so it never
outlives Ferry. Its ``-vb`` output is a line per second per transfer, ended by ``\\r``::

       454819840 bytes       216.83 MB/sec avg       216.83 MB/sec inst

and a ``Source:/Dest:/  name`` block before each file, which the parser turns into
events without blocking the engine's loop (the output is read by the loop itself, a
few hundred bytes a second).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.errors import LocalError
from ..core.made import Made
from ..host.procs import child_argv, child_kwargs

TOOL = "globus-url-copy"
#: bytes of a made file written to the tool's stdin at a time
FEED_CHUNK = 4 << 20
_BYTES = re.compile(rb"^\s*(\d+) bytes\s+([\d.]+) MB/sec avg")
_INST = re.compile(rb"([\d.]+) MB/sec inst")


@dataclass
class Options:
    streams: int = 1
    tcp_bs: int | None = None
    recursive: bool = False
    concurrency: int = 1
    verify: str | None = None  # checksum algorithm for -verify-checksum
    sync_level: int | None = None  # -sync -sync-level N
    restart_retries: int = 3
    restart_interval: int = 2
    stall_timeout: int = 120
    seconds: float | None = None  # -t (probe)
    offset: int = 0  # -off: the bytes before it are already here (a resumed download)
    udt: bool = False  # -udt: the data channel over UDT (gsiftp:// only: the tool asks for it with the GSI driver)
    extra: list[str] = field(default_factory=list)


def argv(opts: Options, source: str, dest: str, tool: str = TOOL) -> list[str]:
    # UDT goes in stream mode, without -p: any -p (even -p 1) asks for extended block mode, and over UDT the copy
    # then hangs before its first byte (tried against globus-gridftp-server 13.24)
    args = [tool, "-vb", "-cd", *([] if opts.udt else ["-p", str(max(1, opts.streams))])]
    if opts.tcp_bs:
        args += ["-tcp-bs", str(opts.tcp_bs)]
    if opts.recursive:
        args += ["-r", "-fast", "-cc", str(max(1, opts.concurrency))]
    if opts.verify:
        args += ["-verify-checksum", "-checksum-alg", opts.verify]
    if opts.sync_level is not None:
        args += ["-sync", "-sync-level", str(opts.sync_level)]
    if opts.offset:
        args += ["-off", str(opts.offset)]
    if opts.udt:
        args += ["-udt"]
    if opts.seconds:
        args += ["-t", str(max(1, round(opts.seconds)))]
    elif opts.restart_retries:  # none when the bytes come from a pipe (``--pack``): it cannot be read again
        args += ["-rst", "-rst-retries", str(opts.restart_retries), "-rst-interval", str(opts.restart_interval)]
    args += ["-stall-timeout", str(opts.stall_timeout), *opts.extra, "--", source, dest]
    return args


class Progress:
    """Parses ``-vb`` output as it arrives: ``on_bytes(n)`` per progress line, ``on_source(url)``
    and ``on_file(name)`` as each file starts (the name is relative to the source URL)."""

    def __init__(self, on_bytes: Callable[[int], None], on_file: Callable[[str], None] | None = None,
                 on_source: Callable[[str], None] | None = None) -> None:
        self.on_bytes, self.on_file, self.on_source = on_bytes, on_file, on_source
        self._buffer = b""
        self._after_dest = False
        self.last_bytes = 0
        self.last_inst: float | None = None  # bytes/s over the last report's interval

    def feed(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = re.split(rb"[\r\n]", self._buffer)
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        if m := _BYTES.match(line):
            self.last_bytes = int(m.group(1))
            if inst := _INST.search(line):
                self.last_inst = float(inst.group(1)) * 1024 * 1024  # globus-url-copy's MB is MiB
            self.on_bytes(self.last_bytes)
        elif line.startswith(b"Source:"):
            if self.on_source:
                self.on_source(line[7:].strip().decode("utf-8", "replace"))
        elif line.startswith(b"Dest:"):
            self._after_dest = True
        elif self._after_dest and line.startswith(b"  ") and line.strip():
            self._after_dest = False
            name = line.strip().split(b"  ->  ")[0].decode("utf-8", "replace")
            if self.on_file:
                self.on_file(name)


async def run(args: list[str], progress: Progress, feed: Made | None = None) -> tuple[int, str]:
    """Run to the end; returns (exit status, stderr). Cancelling kills the process group. ``feed``: a file made
    on demand (``--pack``), written in order to the tool's stdin (its source given as ``-``)."""
    proc = await asyncio.create_subprocess_exec(
        *child_argv(args), stdin=asyncio.subprocess.DEVNULL if feed is None else asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True, **child_kwargs())

    async def pump_out() -> None:
        assert proc.stdout is not None
        while data := await proc.stdout.read(65536):
            progress.feed(data)

    async def pump_err() -> bytes:
        assert proc.stderr is not None
        return await proc.stderr.read()

    try:
        pumps = [pump_out(), pump_err()] + ([_pump_in(proc, feed)] if feed is not None else [])
        _, err, *_ = await asyncio.gather(*pumps)
        status = await proc.wait()
    except BaseException:
        _kill(proc)
        await asyncio.shield(proc.wait())
        raise
    return status, err.decode("utf-8", "replace")


async def _pump_in(proc: asyncio.subprocess.Process, feed: Made) -> None:
    """``feed``'s bytes, first to last, into the tool's stdin (made in a thread: a range of an archive made on
    demand reads its source files). A tool that ended early breaks the pipe: its exit status says why."""
    assert proc.stdin is not None
    at = 0
    try:
        while at < feed.size:  # bounded by the made file's size, every read at least a byte
            data = await asyncio.to_thread(feed.pread, min(FEED_CHUNK, feed.size - at), at)
            if not data:
                raise LocalError(f"{feed.name} ended at byte {at:,} of {feed.size:,} while it was sent.")
            proc.stdin.write(data)
            await proc.stdin.drain()
            at += len(data)
    except (BrokenPipeError, ConnectionResetError):
        return
    finally:
        proc.stdin.close()


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
