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
from typing import TYPE_CHECKING

from ..core.base import TransferOptions
from ..core.errors import AuthError, HostKeyError, TransferError, Transient
from ..core.options import read_options
from ..host import portable
from ..host.netprobe import connect_time
from ..streams.tuner import LAN_RTT, StreamTuner, initial_streams
from . import lead, scripts
from .address import Entry, Target, parse_target
from .direct import DirectSsh
from .openssh import OpenSsh
from .options import SshOptions
from .ranged import BLOCK

if TYPE_CHECKING:
    from .control import Control
    from .trust import AskTrust

#: below this, one stream is plenty and a dd channel is not worth it
SMALL_FILE = 4 * 1024 * 1024
#: a listing or a hash of a whole folder may take a while on a slow disk
LONG_COMMAND = 3600.0
#: from this round trip on, ``auto`` starts with several waves of logins (they queue for the handshake slots):
#: at 100 ms / 0.1 % loss one TCP connection settles at ~30 Mbit/s, so the first wave of 8 fills a third of
#: 1 Gbit/s and the tuner's verdict on doubling it came ~3 s into the transfer; 1 GiB measured ~620 Mbit/s with
#: ``auto`` from 8 against ~700 with 32 or 48 streams from the start (A/B in docs/backends/ssh.md)
LONG_PATH_RTT = 0.08
LONG_PATH_WAVES = 4


def _first_streams(transfer: TransferOptions, options: SshOptions) -> int:
    """How many OpenSSH logins to start at once: all of a fixed count (they queue for handshake slots);
    for ``auto`` one, the rest once the round trip is known (``_auto_streams``)."""
    if transfer.streams == "auto":
        return 1
    return max(0, min(int(transfer.streams), transfer.max_streams)) if int(transfer.streams) > 1 else 0


def _auto_streams(rtt_s: float | None, size: int | None, transfer: TransferOptions, options: SshOptions) -> int:
    """Where ``auto`` starts. On a LAN (under 2 ms) one TCP window is never the limit, ssh's cipher is, one
    core per stream on both ends: start with one stream and let the tuner add a second only if it pays
    (on this 2-core machine four streams over loopback were 35 % slower than one, measured). Otherwise
    the shared table, capped by the logins that may run at once (four waves of them from 80 ms on)."""
    if transfer.initial_streams:
        return transfer.initial_streams
    if rtt_s is not None and rtt_s < LAN_RTT:
        return 1
    guess = initial_streams(rtt_s, size, transfer.max_streams, SMALL_FILE)
    waves = LONG_PATH_WAVES if rtt_s is not None and rtt_s >= LONG_PATH_RTT else 1
    return max(1, min(guess, options.max_handshakes * waves))


def _connect_control(target: Target, options: SshOptions, ask: AskTrust | None) -> Control:
    """The paramiko login, in a worker thread (importing paramiko there too: ~75 ms off the event loop),
    with the exec check and the SFTP subsystem, so a folder finds them ready when its stat comes back."""
    from .control import Control

    control = Control(target, options, ask).connect()
    try:
        control.can_exec()  # cached: asked again on the loop without I/O
        control.sftp  # noqa: B018 - opens the SFTP subsystem now (it is cached); no SFTP fails the login here
    except BaseException:
        control.close()
        raise
    return control


async def _stat_over_openssh(openssh: OpenSsh, target: Target) -> tuple[lead.Metadata | None, Entry | None]:
    """The download's file over the first OpenSSH login; no entry when the control connection must do it
    (a host key to ask about, a key OpenSSH cannot use in BatchMode, no shell, a folder, no such file)."""
    try:
        metadata = lead.Metadata(await openssh.lead_master(), target)
    except (HostKeyError, AuthError):
        return None, None
    except Transient:
        if openssh.multiplexed:
            raise
        # a login per stream (Windows) whose command never started: an SFTP-only account's internal-sftp waits
        # for its client and prints nothing, which looks like a slow login; the control connection finds out
        return None, None
    try:
        return metadata, await metadata.stat(target.path)
    except lead.NoExec:
        await metadata.close()
        return None, None


def _start_control(target: Target, options: SshOptions, ask: AskTrust | None,
                   openssh: OpenSsh | None) -> asyncio.Future:
    """The paramiko login, started now in a thread; it gives its handshake slot back when done."""
    task = asyncio.ensure_future(asyncio.to_thread(_connect_control, target, options, ask))
    if openssh is not None:
        task.add_done_callback(lambda _: openssh.handshake_done())
    return task


def _close_when_connected(task: asyncio.Future) -> None:
    """Close a control connection nobody will use, whenever its login ends (and consume its error)."""
    def done(t: asyncio.Future) -> None:
        if not t.cancelled() and t.exception() is None:
            t.result().close()

    if task.done():
        done(task)
    else:
        task.add_done_callback(done)


async def _warm_for_path(openssh: OpenSsh, rtt_task: asyncio.Future, transfer: TransferOptions,
                         options: SshOptions) -> int:
    """Once the round trip is known (one RTT after the first login began), log in the rest of ``auto``'s
    first streams: none more on a LAN, where each login only costs CPU, up to eight on a medium path and 32
    from 80 ms on (``_auto_streams``)."""
    rtt = await asyncio.shield(rtt_task)
    want = _auto_streams(rtt, None, transfer, options)
    openssh.prewarm(want - 1)
    return want


async def _probe_rtt(target: Target, openssh: OpenSsh | None) -> float | None:
    """One TCP handshake's time; it holds a handshake slot only while it runs."""
    try:
        return await connect_time(target.host, target.port)
    finally:
        if openssh:
            openssh.handshake_done()


async def _streams_for(control: Control, openssh: OpenSsh | None, target: Target,
                       rtt_task: asyncio.Future) -> tuple[OpenSsh | None, OpenSsh | None]:
    """What carries a big file's data once the control login says what the account may do: the OpenSSH
    streams (a shell account), SFTP sessions over those connections (an SFTP-only account), or nothing but
    paramiko (a login per stream would cost more). Returns (openssh, sftp_ssh); on a failure nothing stays
    open."""
    try:
        sftp_ssh = None
        if not control.can_exec() and control.noise is not None:
            # a login that prints before every command: SFTP is left, unless sshd starts it through the same
            # shell (not internal-sftp), which garbles it too: then one sentence (``faults.login_prints``)
            await asyncio.to_thread(getattr, control, "sftp")
        if openssh is not None and not control.can_exec():  # answered in the login thread
            openssh.early_channel = None
            if openssh.multiplexed:  # its connections, logged in already, carry SFTP sessions instead
                sftp_ssh, openssh = openssh, None  # (``sftpstreams.py``)
            else:  # a login per SFTP session would cost more than paramiko's channels over one
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
    return openssh, sftp_ssh


def ssh_options(options: TransferOptions) -> SshOptions:
    return read_options(SshOptions, options.backend_options)


@dataclass
class SshSession:
    target: Target
    options: SshOptions
    control: Control | None  # None while a download runs on OpenSSH alone (``lead``)
    openssh: OpenSsh | None
    rtt_s: float | None = None
    prewarmed: int = 8
    entry: Entry | None = None  # the file, when its stat came over OpenSSH
    ask: AskTrust | None = None
    metadata: lead.Metadata | None = None
    _control_task: asyncio.Future | None = None  # a control login started but not yet needed
    #: an account that may run no commands, reached with a key or agent: OpenSSH connections whose channels go
    #: to its SFTP subsystem (``sftpstreams.py``) carry a big file's data; None: paramiko's SFTP does
    sftp_ssh: OpenSsh | None = None

    @classmethod
    async def open(cls, url: str, transfer_options: TransferOptions, ask: AskTrust | None = None, *,
                   lead: bool = False) -> SshSession:
        """Log in: the OpenSSH streams first, the control connection alongside or only when needed.

        The streams are the critical path (an OpenSSH login is ~8 round trips), so they start
        before paramiko is even imported; for an upload the control login runs alongside in a
        thread. With ``lead`` (a download), the first OpenSSH login answers the stat (and a
        folder's listing) and the control login starts only if OpenSSH cannot do it alone (a
        host key to ask about, a password, an account without a shell).
        """
        options = ssh_options(transfer_options)
        target = parse_target(url, options)
        openssh = None
        warm = 0
        if target.password is None and shutil.which("ssh") is not None:
            kind = OpenSsh if portable.multiplexed_ssh() else DirectSsh  # Windows: a login per stream
            openssh = kind(target, options, none_cipher=ssh_options(transfer_options).none_cipher)
            warm = _first_streams(transfer_options, options)
            if lead:
                openssh.early_channel = (scripts.command(scripts.READ_RANGES, BLOCK), scripts.encode_path(target.path))
            openssh.prewarm(max(warm, 1 if lead else 0))  # control and RTT probe hold two handshake slots meanwhile
        rtt_task = asyncio.ensure_future(_probe_rtt(target, openssh))
        if lead and openssh is not None:
            # a download asks OpenSSH first and mostly never needs paramiko: its login (a Python handshake, the
            # GIL held for much of it) would only take CPU from the logins and the stat on the critical path
            control_task = None
            openssh.handshake_done()
        else:
            control_task = _start_control(target, options, ask, openssh)
        try:
            if openssh is not None and transfer_options.streams == "auto":
                warm = await _warm_for_path(openssh, rtt_task, transfer_options, options)
            if lead and openssh is not None:
                metadata, entry = await _stat_over_openssh(openssh, target)
                if entry is not None:
                    if entry.is_dir:
                        openssh.early_channel = None  # a folder's connections carry tar streams, not ranges
                    session = cls(target, options, None, openssh, await rtt_task, max(1, warm), entry, ask, metadata)
                    session._control_task = control_task
                    return session
                openssh.early_channel = None  # a question for the control connection
                if metadata:
                    await metadata.close()
            if control_task is None:
                control_task = _start_control(target, options, ask, None)
            control = await control_task
        except BaseException:
            if control_task is not None:
                _close_when_connected(control_task)
            if openssh:
                await openssh.cleanup()
            rtt_task.cancel()
            raise
        openssh, sftp_ssh = await _streams_for(control, openssh, target, rtt_task)
        session = cls(target, options, control, openssh, await rtt_task, max(1, warm), None, ask)
        session.sftp_ssh = sftp_ssh
        return session

    async def ensure_control(self) -> Control:
        """The paramiko control connection (a file download started without waiting for it)."""
        if self.control is None:
            task, self._control_task = self._control_task, None
            self.control = await (task or asyncio.to_thread(_connect_control, self.target, self.options, self.ask))
        return self.control

    async def stat(self, path: str) -> Entry | None:
        """Over the stat channel while it answers; a channel that died during the transfer (its master gone,
        a session limit reached: status 255 at the end of a 4 GiB copy) hands over to the SFTP connection
        instead of failing a file that arrived whole."""
        if self.metadata is not None:
            try:
                return await self.metadata.stat(path)
            except lead.NoExec:
                metadata, self.metadata = self.metadata, None
                await metadata.close()
        return await asyncio.to_thread((await self.ensure_control()).stat, path)

    async def can_exec(self) -> bool:
        """Whether the account runs commands (proven already when the stat came over OpenSSH)."""
        if self.metadata is not None:
            return True
        return await asyncio.to_thread((await self.ensure_control()).can_exec)

    async def sha256(self, path: str) -> str | None:
        """The server's SHA-256 of a file, over whichever connection is open (None: it cannot say)."""
        if self.metadata is not None:
            return await lead.sha256(self.metadata.master, path)
        return await asyncio.to_thread((await self.ensure_control()).sha256, path)

    async def walk(self, root: str) -> list[Entry]:
        """Everything under ``root``: from the folder's stat, else ``scripts.LIST_TREE``, else the SFTP walk (no GNU
        find there)."""
        if self.metadata is not None:
            entries = self.metadata.listing(root)  # sent with the folder's stat
            if entries is not None:
                return entries
            status, out, _ = await self.metadata.master.run(scripts.command(scripts.LIST_TREE),
                                                            scripts.encode_path(root), LONG_COMMAND)
            if status == 0:
                return scripts.tree_answer(out)
        return await asyncio.to_thread((await self.ensure_control()).walk_fast, root)

    async def sha256_many(self, root: str, rels: list[str]) -> list[str | None]:
        """The server's SHA-256 of many files under ``root``, in order; None where it cannot say."""
        if self.metadata is not None:
            if not rels:
                return []
            status, out, _ = await self.metadata.master.run(scripts.command(scripts.SHA256_MANY),
                                                            scripts.many_names(root, rels), LONG_COMMAND)
            return scripts.sha256_many_answer(status, out, len(rels))
        return await asyncio.to_thread((await self.ensure_control()).sha256_many, root, rels)

    async def zstd_sample(self, path: str, sample_bytes: int) -> bytes:
        """``scripts.ZSTD_SAMPLE`` on ``path`` (``sample_bytes`` 0: only whether the server has zstd)."""
        command, stdin = scripts.command(scripts.ZSTD_SAMPLE, sample_bytes), scripts.encode_path(path)
        if self.metadata is not None:
            return (await self.metadata.master.run(command, stdin))[1]
        control = await self.ensure_control()
        return (await asyncio.to_thread(control.run, scripts.ZSTD_SAMPLE, stdin, sample_bytes, timeout=60))[1]

    def tuner(self, options: TransferOptions, size: int) -> StreamTuner | None:
        if options.streams != "auto":
            return None
        # each SSH stream costs a login (~8 round trips and real CPU), so start with the ones already logging
        # in; the tuner doubles while streams still pay (at 50 ms a handful fill 1 Gbit/s, at 100 ms and 0.1 %
        # loss dozens are needed)
        start = min(_auto_streams(self.rtt_s, size, options, self.options), self.prewarmed)
        return StreamTuner(start, maximum=options.max_streams, rtt_s=self.rtt_s or 0.05, first_step_rtts=16,
                           ceiling=options.rate_cap)

    def streams(self, options: TransferOptions, size: int) -> int:
        if options.streams == "auto":
            return 1
        return max(1, min(int(options.streams), options.max_streams, max(1, size // (1024 * 1024))))

    async def close(self) -> None:
        if self._control_task is not None:
            _close_when_connected(self._control_task)  # never needed: closed once its login ends
            self._control_task = None
        if self.metadata is not None:
            await self.metadata.close()
        if self.sftp_ssh is not None:
            await self.sftp_ssh.cleanup()
        if self.control is not None:
            await asyncio.to_thread(self.control.close)
        if self.openssh:
            await self.openssh.cleanup()
