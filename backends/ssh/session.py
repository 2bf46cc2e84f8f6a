"""One SSH job's connections: the paramiko control connection and the OpenSSH streams.

Both sides authenticate with the same identity and check the same known_hosts file, so
a key accepted once (``--accept-new-host-key``) is trusted by both. The OpenSSH data
path needs key or agent authentication (it runs in ``BatchMode``); with a password only,
or on an account that may not run commands (SFTP-only), data goes over paramiko's SFTP
instead, slower but still parallel.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass

from ..base import TransferOptions
from ..errors import TransferError
from ..netprobe import connect_time
from ..tuner import StreamTuner, initial_streams
from .control import Control
from .openssh import OpenSsh
from .target import SshOptions, Target, parse_target
from .trust import AskTrust

#: below this, one stream is plenty and a dd channel is not worth it
SMALL_FILE = 4 * 1024 * 1024


def ssh_options(options: TransferOptions) -> SshOptions:
    extra = options.backend_options
    return SshOptions(
        identity=extra.get("identity"),
        known_hosts=extra.get("known_hosts"),
        accept_new_host_key=bool(extra.get("accept_new_host_key", False)),
        ssh_config=extra.get("ssh_config"),
        max_handshakes=int(extra.get("max_handshakes", 8)),
    )


@dataclass
class SshSession:
    target: Target
    options: SshOptions
    control: Control
    openssh: OpenSsh | None
    rtt_s: float | None = None
    prewarmed: int = 8

    @classmethod
    async def open(cls, url: str, transfer_options: TransferOptions, ask: AskTrust | None = None) -> SshSession:
        options = ssh_options(transfer_options)
        target = parse_target(url, options)
        rtt_task = asyncio.ensure_future(connect_time(target.host, target.port))
        openssh = None
        if target.password is None and shutil.which("ssh") is not None:
            openssh = OpenSsh(target, options, none_cipher=bool(transfer_options.backend_options.get("none_cipher")))
            if transfer_options.streams == "auto" or int(transfer_options.streams) > 1:
                # the streams log in while the control connection does (it and the RTT probe count as logins too)
                openssh.prewarm(max(1, options.max_handshakes - 2))
        try:
            control = await asyncio.to_thread(Control(target, options, ask).connect)
        except BaseException:
            if openssh:
                await openssh.cleanup()
            rtt_task.cancel()
            raise
        try:
            if openssh is not None and not await asyncio.to_thread(control.can_exec):
                await openssh.cleanup()
                openssh = None
            if openssh is None and target.scheme == "scp":
                raise TransferError(
                    f"scp:// needs the OpenSSH client and an account that may run commands on {target.host} "
                    "(with key or agent login). Use the sftp:// address instead."
                )
        except BaseException:
            control.close()
            if openssh:
                await openssh.cleanup()
            rtt_task.cancel()
            raise
        session = cls(target, options, control, openssh, await rtt_task, max(1, options.max_handshakes - 2))
        return session

    def tuner(self, options: TransferOptions, size: int) -> StreamTuner | None:
        if options.streams != "auto":
            return None
        # each SSH stream costs a login (~7 round trips and real CPU), so start with the ones already logging
        # in; the tuner doubles while streams still pay (at 50 ms a handful fill 1 Gbit/s, at 100 ms and 0.1 %
        # loss dozens are needed)
        guess = initial_streams(self.rtt_s, size, options.max_streams, SMALL_FILE)
        start = options.initial_streams or min(guess, self.prewarmed)
        return StreamTuner(start, maximum=options.max_streams, rtt_s=self.rtt_s or 0.05)

    def streams(self, options: TransferOptions, size: int) -> int:
        if options.streams == "auto":
            return 1
        return max(1, min(int(options.streams), options.max_streams, max(1, size // (1024 * 1024))))

    async def close(self) -> None:
        await asyncio.to_thread(self.control.close)
        if self.openssh:
            await self.openssh.cleanup()
