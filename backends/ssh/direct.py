"""OpenSSH streams without ControlMaster: every channel is a login of its own.

Windows' OpenSSH client has no ControlMaster (``-M``/``-S``), and Windows' event loop (the
Proactor) cannot poll a pipe, so there a stream is one ``ssh host COMMAND`` process: its own
TCP connection and login, its output read through the loop's own subprocess pipes
(``StreamSource``). A range reader or a tar stream lives for the whole transfer, so a stream
still logs in once; an upload's range costs a login each, which its 32 MiB leases pay for.

The command starts with ``echo FERRY-UP``: the line says the login is over, so the login slot
(sshd's MaxStartups) is given back then, as a master's is when its socket appears, and a
chatty login script's lines before it are skipped. An SFTP-only account never prints it (its
``internal-sftp`` waits for a client): after ``MASTER_WAIT`` the first login gives up and the
paramiko control connection finds the account out and carries the data.
"""

from __future__ import annotations

import asyncio
import os
import subprocess

from ..core.errors import Transient
from ..host.pipes import StreamSource
from ..host.procs import child_argv, child_kwargs, reap
from .openssh import MASTER_WAIT, Master, OpenSsh, ssh_error

READY = b"FERRY-UP\n"
#: lines a login script may print before the command's first one
JUNK_LINES = 50


class DirectSsh(OpenSsh):
    """``OpenSsh`` whose streams are ``DirectLogin``s."""

    multiplexed = False

    async def _log_in(self) -> Master:
        return DirectLogin(self)  # logs in with its first channel, inside ``login_slots``


class DirectLogin(Master):
    """A stream whose channels are each a login (``socket`` None: ``channel_argv`` makes a plain login)."""

    def __init__(self, ssh: OpenSsh) -> None:
        super().__init__(ssh, None)

    async def start(self) -> None:
        """Nothing to do: the first channel logs in."""

    async def channel(self, command: str, *, stdin: bool = True, stdout=subprocess.PIPE,
                      subsystem: bool = False) -> asyncio.subprocess.Process:
        """``command`` over a new login, returned once the server runs it (its ``FERRY-UP`` line read)."""
        if subsystem or stdout is not subprocess.PIPE:
            raise ValueError("a direct login carries commands whose output is its own pipe")
        dial = await asyncio.shield(self.ssh.dial())
        argv = [*self.ssh.base_argv(), *dial.argv, "--", self.ssh.target.alias, f"echo FERRY-UP; {command}"]
        async with self.ssh.login_slots():
            proc = await asyncio.create_subprocess_exec(
                *child_argv(argv), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, limit=1 << 20, env={**os.environ, **dial.env} if dial.env else None,
                **child_kwargs())
            try:
                await asyncio.wait_for(self._logged_in(proc), MASTER_WAIT)
            except asyncio.TimeoutError:
                await reap(proc)
                raise Transient(f"The SSH login to {self.ssh.target.host} ran no command within {MASTER_WAIT:.0f} "
                                "s; Ferry will retry.") from None
            except BaseException:
                await reap(proc)
                raise
        return proc

    async def _logged_in(self, proc: asyncio.subprocess.Process) -> None:
        for _ in range(JUNK_LINES):
            line = await proc.stdout.readline()
            if line == READY:
                return
            if not line:
                break
        err = (await proc.stderr.read()).decode("utf-8", "replace")
        await proc.wait()
        raise ssh_error(err or "the connection closed during the login", self.ssh.target)

    async def start_early(self, command: str, stdin: bytes) -> None:
        proc = await self.channel(command)
        proc.stdin.write(stdin)
        self.early = (proc, None)

    async def reader(self, command: str) -> tuple[asyncio.subprocess.Process, StreamSource]:
        proc = await self.channel(command)
        return proc, StreamSource(proc.stdout)

    async def stop(self) -> None:
        early = self.end_early()
        if early is not None:
            await reap(early)
