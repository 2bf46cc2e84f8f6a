"""Streams for the preflight's sweep over SSH: OpenSSH connections reading and dropping data.

Each stream is a multiplexed master (the same connections a transfer uses) running one
fixed script that reads a file over and over (``READ_LOOP``), or ``/dev/zero`` when the
user named no file, so a short file never ends a level early and no test file is needed.
All streams log in before the clock starts (SSH logins take several round trips each and
sshd limits how many run at once); ``netprobe.sweep_down`` then drops them level by level.
"""

from __future__ import annotations

import asyncio

from ..core.base import ProbeResult, TransferOptions
from ..core.errors import TransferError
from ..host.netprobe import sweep_down
from ..host.procs import reap
from . import scripts
from .openssh import Master, ssh_error

READ = 1 << 20
#: the source when no file was named: endless, costs the server nothing, needs no disk
ZERO = "/dev/zero"
# read the file again and again (or /dev/zero once, endlessly) until the channel is closed
READ_LOOP = scripts._PATH + '; [ -r "$f" ] || exit 91; while :; do cat "$f" || exit 92; done'


class SshStreams:
    def __init__(self, openssh, source: str, target) -> None:
        self.openssh, self.source, self.target = openssh, source, target
        self.bytes = 0
        self.streams: list[tuple[Master, asyncio.subprocess.Process, asyncio.Task]] = []

    def moved(self) -> int:
        return self.bytes

    async def start(self, count: int) -> None:
        masters = await asyncio.gather(*(self.openssh.open_master() for _ in range(count)), return_exceptions=True)
        failed = [m for m in masters if isinstance(m, BaseException)]
        ready = [m for m in masters if isinstance(m, Master)]
        if failed and not ready:
            raise failed[0]
        for master in ready:
            proc = await master.channel(scripts.command(READ_LOOP))
            proc.stdin.write(scripts.encode_path(self.source))
            await proc.stdin.drain()
            self.streams.append((master, proc, asyncio.create_task(self._drain(proc))))
        await asyncio.sleep(0.2)
        if not self.bytes and all(proc.returncode is not None for _, proc, _ in self.streams):
            err = await self.streams[0][1].stderr.read()
            await self.stop(len(self.streams))
            raise ssh_error(err.decode("utf-8", "replace") or "the server sent nothing", self.target)

    async def _drain(self, proc) -> None:
        while data := await proc.stdout.read(READ):
            self.bytes += len(data)

    async def stop(self, count: int) -> None:
        dropped, self.streams = self.streams[len(self.streams) - count:], self.streams[:len(self.streams) - count]
        for _, _, task in dropped:
            task.cancel()
        await asyncio.gather(*(t for _, _, t in dropped), return_exceptions=True)
        await asyncio.gather(*(reap(p) for _, p, _ in dropped), return_exceptions=True)
        await asyncio.gather(*(m.stop() for m, _, _ in dropped), return_exceptions=True)


async def sweep(url: str, counts: list[int], seconds: float, options: TransferOptions, on_level=None
                ) -> list[ProbeResult]:
    from .session import SshSession

    session = await SshSession.open(url, TransferOptions(streams=max(counts), backend_options=options.backend_options))
    pool = None
    try:
        if session.openssh is None:
            raise TransferError(f"Measuring {session.target.host} needs an SSH key or agent login and an account "
                                "that may run commands; this one can only use SFTP.")
        source = await _source(session)
        rtt = session.rtt_s * 1000 if session.rtt_s else None
        pool = SshStreams(session.openssh, source, session.target)
        return await sweep_down(pool, counts, seconds, rtt, on_level)
    finally:
        if pool is not None:
            await pool.stop(len(pool.streams))
        await session.close()


async def _source(session) -> str:
    """The named file, or zeros when the address names no file (or a folder, or an empty file)."""
    path = session.target.path.strip()
    if path in ("", "/", "/~", "/~/", "~", "~/"):
        return ZERO
    source = await asyncio.to_thread(session.control.absolute, session.target.path)
    entry = await asyncio.to_thread(session.control.stat, source)
    if entry is None:
        raise TransferError(f"There is no {source} on {session.target.host} to measure with. Name a large file, "
                            "or leave the path out to read zeros.")
    return ZERO if entry.is_dir or entry.size == 0 else source
