"""Measuring an SSH path for the preflight: N OpenSSH connections reading for a few seconds.

Each stream is a multiplexed master (the same connections a transfer uses) running one
fixed script that reads a file over and over (``READ_LOOP``), or ``/dev/zero`` when the
user named no file, so a short file never ends a probe early and no test file is needed.
Bytes are counted and dropped. The clock starts once every stream is logged in (SSH
logins take several round trips each and sshd limits how many run at once), so the
figure is the path's rate with N streams, not the login time.
"""

from __future__ import annotations

import asyncio
import time

from ..base import ProbeResult, TransferOptions
from ..errors import TransferError
from ..netprobe import RateSampler
from . import scripts
from .openssh import Master, ssh_error

READ = 1 << 20
#: the source when no file was named: endless, costs the server nothing, needs no disk
ZERO = "/dev/zero"
# read the file again and again (or /dev/zero once, endlessly) until the channel is closed
READ_LOOP = scripts._PATH + '; [ -r "$f" ] || exit 91; while :; do cat "$f" || exit 92; done'


async def _drain(proc, stop_at: float, counter: list[int], began: list[float]) -> None:
    while time.monotonic() < stop_at:
        try:
            data = await asyncio.wait_for(proc.stdout.read(READ), max(0.01, stop_at - time.monotonic()))
        except asyncio.TimeoutError:
            return
        if not data:
            return
        if not began:
            began.append(time.monotonic())
        counter[0] += len(data)


async def probe(url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult:
    from .session import SshSession

    session = await SshSession.open(url, TransferOptions(streams=streams, backend_options=options.backend_options))
    masters: list[Master] = []
    procs = []
    try:
        if session.openssh is None:
            raise TransferError(f"Measuring {session.target.host} needs an SSH key or agent login and an account "
                                "that may run commands; this one can only use SFTP.")
        path = session.target.path.strip()
        if path in ("", "/", "/~", "/~/", "~", "~/"):
            source = ZERO
        else:
            source = await asyncio.to_thread(session.control.absolute, session.target.path)
            entry = await asyncio.to_thread(session.control.stat, source)
            if entry is None:
                raise TransferError(f"There is no {source} on {session.target.host} to measure with. Name a large "
                                    "file, or leave the path out to read zeros.")
            if entry.is_dir or entry.size == 0:
                source = ZERO
        masters = list(await asyncio.gather(*(session.openssh.open_master() for _ in range(streams))))
        for master in masters:
            proc = await master.channel(scripts.command(READ_LOOP))
            proc.stdin.write(scripts.encode_path(source))
            await proc.stdin.drain()
            procs.append(proc)
        counter, began = [0], []
        stop_at = time.monotonic() + seconds + (session.rtt_s or 0.05) * 2
        sampler = RateSampler(lambda: counter[0])
        await sampler.follow(asyncio.gather(*(_drain(p, stop_at, counter, began) for p in procs)))
        if not counter[0]:
            err = b""
            for proc in procs:
                if proc.returncode is not None:
                    err = await proc.stderr.read()
                    break
            raise ssh_error(err.decode("utf-8", "replace") or "the server sent nothing", session.target)
        moved, spent = sampler.steady()
        rtt = session.rtt_s * 1000 if session.rtt_s else None
        return ProbeResult(streams, moved, spent, rtt)
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
        await asyncio.gather(*(p.wait() for p in procs), return_exceptions=True)
        await asyncio.gather(*(m.stop() for m in masters), return_exceptions=True)
        await session.close()
