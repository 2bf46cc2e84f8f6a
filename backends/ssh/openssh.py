"""Driving the system's OpenSSH (or HPN-SSH) client: argv lists, multiplexed masters, channels.

Every stream is one master connection (``ssh -M -S SOCKET -N``): its own TCP connection,
window and congestion control, authenticated once. Each lease then runs as a new channel
over it (``ssh -S SOCKET host 'sh -c …'``), which costs one round trip instead of a
handshake. At most ``max_handshakes`` masters authenticate at once, because sshd's
``MaxStartups`` (default 10:30:100) starts dropping unauthenticated connections past ten;
jobs running side by side to the same server share that limit.

HPN-SSH (``hpnssh`` on PATH) grows its channel window with the socket buffer, lifting
OpenSSH's 2 MiB-per-round-trip cap; its NONE cipher switch is passed only when the binary
accepts the options.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..core.errors import AuthError, HostKeyError, NotFound, PermissionDenied, TransferError, Transient, Unreachable
from ..core.errors import NoSpace as NoSpaceError
from ..host import portable
from ..host.pipes import PipeSource, StreamSource
from ..host.procs import child_argv, child_kwargs, other_process_alive, reap
from ..streams.slots import server_slots
from .address import Target, known_hosts_path
from .dialer import Dial, resolve_dial
from .options import SshOptions

# AES-GCM first: AES-NI makes it several times cheaper than chacha20 on servers and laptops alike
CIPHERS = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes256-ctr"
MASTER_WAIT = 30.0
CONNECT_TIMEOUT = 20


@lru_cache(maxsize=4)
def accepts_options(binary: str, *options: str) -> bool:
    """Whether ``binary`` knows these ``-o`` options (HPN's NONE cipher switch, say)."""
    argv = [binary, "-G"]
    for opt in options:
        argv += ["-o", opt]
    argv.append("localhost")
    try:
        return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_client(preferred: str | None = None) -> tuple[str, bool]:
    """(path of the ssh client, whether it is HPN-SSH)."""
    if preferred:
        path = shutil.which(preferred)
        if path:
            return path, "hpn" in Path(path).name
    hpn = shutil.which("hpnssh")
    if hpn:
        return hpn, True
    plain = shutil.which("ssh")
    if not plain:
        raise TransferError("The OpenSSH client (ssh) is not installed. Install it (Debian: apt install "
                            "openssh-client) or use an sftp:// address, which works without it.")
    return plain, False


def known_hosts_files(path: str | None) -> str:
    """UserKnownHostsFile's value: known_hosts, and the keys the user trusted for this process only, each quoted
    (a path may hold spaces)."""
    from .once import trusted_once_file

    files = [known_hosts_path(path), trusted_once_file()]
    return " ".join(f'"{f}"' for f in files if f is not None)


def ssh_error(stderr: str, target: Target) -> TransferError:
    """What an ``ssh`` process said on stderr, as one of Ferry's errors."""
    text = " ".join(line for line in stderr.strip().splitlines() if line.strip())[-400:]
    low = text.lower()
    where = f"{target.host}:{target.port}"
    if "host key verification failed" in low or "remote host identification has changed" in low:
        return HostKeyError(f"The host key of {target.host} could not be verified. Connect once with "
                            "--accept-new-host-key (after checking its fingerprint), or fix known_hosts.")
    if "permission denied (" in low or "too many authentication failures" in low:
        return AuthError(f"{target.host} refused the login for {target.user} ({text}). Check the user name and "
                         "--identity, or that your public key is in the server's authorized_keys.")
    if "could not resolve hostname" in low:
        return Unreachable(f"Could not find the host {target.host} (name lookup failed). Check the spelling.")
    if "connection refused" in low:
        return Unreachable(f"The server at {where} refused the connection. Check the port, or whether sshd runs.")
    if "no space left" in low or "disk quota exceeded" in low:
        return NoSpaceError(f"The server's disk is full ({text}). Free some space there and run the transfer again.")
    if "unix_listener" in low or "control socket" in low or "mux_client" in low:
        # ssh's own control socket on this machine, not a path on the server
        return Transient(f"Ferry's local SSH control socket failed ({text}); Ferry will retry. If this repeats, "
                         f"check that {tempfile.gettempdir()} is writable and not cleaned while Ferry runs.")
    if "no such file" in low:
        return NotFound(f"The server has no such file ({text}). Check the path.")
    if "permission denied" in low or "read-only file system" in low:
        return PermissionDenied(f"The server refused access ({text}). Check the path and your rights there.")
    return Transient(f"The SSH connection to {where} failed ({text or 'no message'}); Ferry will retry.")


#: the socket folders this process made and has not removed: they carry its pid like the ones an earlier process
#: with the same pid left behind, and jobs running side by side (the GUI runs three) must keep each other's
_MADE_HERE: set[Path] = set()
_MADE_LOCK = threading.Lock()


def _socket_folder() -> Path:
    """A private folder for the connections' control sockets, in the temporary folder (a socket's path must
    stay under 108 bytes). Named by Ferry's pid, so the folders a killed Ferry left behind are removed by the
    next one."""
    with _MADE_LOCK:
        for old in Path(tempfile.gettempdir()).glob("ferry-ssh-*-*"):
            pid = old.name.split("-")[2]
            try:
                if (old not in _MADE_HERE and pid.isdigit() and old.stat().st_uid == portable.my_uid()
                        and not other_process_alive(int(pid))):
                    shutil.rmtree(old, ignore_errors=True)
            except OSError:
                continue
        made = Path(tempfile.mkdtemp(prefix=f"ferry-ssh-{os.getpid()}-"))
        _MADE_HERE.add(made)
    return made


def _remove_socket_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    with _MADE_LOCK:
        _MADE_HERE.discard(folder)


@dataclass
class OpenSsh:
    target: Target
    options: SshOptions
    client: str = ""
    hpn: bool = False
    none_cipher: bool = False
    workdir: Path = field(default_factory=_socket_folder)
    #: each stream one master connection carrying its channels (``direct.DirectSsh``: each channel a login)
    multiplexed = True
    _count: int = 0

    def __post_init__(self) -> None:
        if not self.client:
            self.client, self.hpn = find_client()
        # the control login and the RTT probe hold two slots until ``handshake_done`` gives each back
        self._handshakes = asyncio.Semaphore(max(1, self.options.max_handshakes - 2))
        self._warm: list[asyncio.Future] = []
        self._spare: list[Master] = []
        self.lead: Master | None = None  # the connection metadata went over; the session closes it
        # (command, stdin): a channel every new connection starts at once (a download's reader, which then
        # waits for its first range: the channel's round trips overlap the stat instead of following it)
        self.early_channel: tuple[str, bytes] | None = None
        self._reaping: set[asyncio.Task] = set()
        self._dial: asyncio.Future | None = None

    def dial(self) -> asyncio.Future:
        """How the masters connect (``dialer.py``: Nagle off), asked of ``ssh -G`` once per job."""
        if self._dial is None:
            self._dial = asyncio.ensure_future(resolve_dial(self.base_argv(), self.target.alias, CONNECT_TIMEOUT))
        return self._dial

    def base_argv(self) -> list[str]:
        t, o = self.target, self.options
        argv = [
            self.client, "-p", str(t.port), "-l", t.user,
            "-o", "BatchMode=yes",  # never prompt: secrets come from keys, the agent or the keyring
            "-o", f"UserKnownHostsFile={known_hosts_files(o.known_hosts)}",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "Compression=no",
            "-o", "IPQoS=throughput",
            "-o", f"Ciphers={CIPHERS}",
            "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
            "-o", "ServerAliveInterval=15",
            "-o", "ServerAliveCountMax=4",
            "-o", "LogLevel=ERROR",
        ]
        if o.ssh_config:
            argv += ["-F", o.ssh_config]
        for identity in t.identity_files:
            argv += ["-i", identity]
        if t.identity_files:
            argv += ["-o", "IdentitiesOnly=yes"]
        if self.hpn and self.none_cipher and accepts_options(self.client, "NoneEnabled=yes", "NoneSwitch=yes"):
            argv += ["-o", "NoneEnabled=yes", "-o", "NoneSwitch=yes"]
        return argv

    def channel_argv(self, socket_path: Path | None, command: str, *, subsystem: bool = False) -> list[str]:
        """A channel on the master at ``socket_path`` running ``command`` (with ``subsystem``: the server's
        subsystem of that name, ``sftp``); with no master (``direct.py``), a login of its own."""
        master = ["-S", str(socket_path), "-o", "ControlMaster=no"] if socket_path is not None else []
        return [*self.base_argv(), *master, *(["-s"] if subsystem else []), "--", self.target.alias,
                command]

    @contextlib.asynccontextmanager
    async def login_slots(self) -> AsyncIterator[None]:
        """Held while one login runs: sshd's MaxStartups counts every unauthenticated connection to it, whichever
        job opened it."""
        async with self._handshakes, server_slots("ssh", self.target.host, self.target.port,
                                                  self.options.max_handshakes):
            yield

    async def _connect(self) -> Master:
        self._count += 1
        master = await self._log_in()
        if self.early_channel is not None:
            await master.start_early(*self.early_channel)
        return master

    async def _log_in(self) -> Master:
        """One stream's master connection, logged in (``direct.DirectSsh``: none, each channel logs in)."""
        master = Master(self, self.workdir / f"m{self._count}")
        async with self.login_slots():
            await master.start()
        return master

    def discard(self, proc: asyncio.subprocess.Process) -> None:
        """Kill a channel's process and reap it in the background. A channel's ssh hands its pipes to the
        master, which closes them only once the server confirms the channel's close: one round trip (55 ms
        at 50 ms, measured) that nobody needs to wait for while the master stays up."""
        task = asyncio.ensure_future(reap(proc))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    def handshake_done(self) -> None:
        """A login that was not an OpenSSH stream's (the control connection, the RTT probe) has finished."""
        self._handshakes.release()

    def prewarm(self, count: int) -> None:
        """Start logging in ``count`` connections now, while the control connection is still busy."""
        for _ in range(count):
            self._warm.append(asyncio.ensure_future(self._connect()))

    async def open_master(self) -> Master:
        if self._spare:
            return self._spare.pop()
        while self._warm:
            task = self._warm.pop(0)
            try:
                return await task
            except TransferError:
                continue  # a speculative login failed; the next one (or a fresh one) will say why
        return await self._connect()

    async def lead_master(self) -> Master:
        """The first connection to log in: a download's metadata goes over it before any paramiko
        login, then it carries a stream like the others and stays open for the final checks (``owns``)."""
        if self.lead is None:
            self.lead = await self.open_master()
            self._spare.append(self.lead)
        return self.lead

    def owns(self, master: Master) -> bool:
        """Whether a stream that ends must leave ``master`` open (the session closes the lead)."""
        return master is self.lead

    async def cleanup(self) -> None:
        for task in self._warm:
            task.cancel()
        results = await asyncio.gather(*self._warm, return_exceptions=True)
        masters = {m for m in (*results, *self._spare, self.lead) if isinstance(m, Master)}
        self._warm.clear()
        self._spare.clear()
        # all at once: each stop waits for its ssh to exit (~15 ms); one after another that was 0.23 s for 8
        await asyncio.gather(*(m.stop() for m in masters))
        await asyncio.gather(*self._reaping, return_exceptions=True)  # their masters are gone: at once now
        self.lead = None
        _remove_socket_folder(self.workdir)


def _close_output(early: tuple[asyncio.subprocess.Process, int | None]) -> None:
    """Close the pipe an early channel writes into (a direct login's has none: its stdout is the process's)."""
    if early[1] is not None:
        os.close(early[1])


class Master:
    """One authenticated OpenSSH connection that carries a stream's channels."""

    def __init__(self, ssh: OpenSsh, socket_path: Path) -> None:
        self.ssh, self.socket = ssh, socket_path
        self.proc: asyncio.subprocess.Process | None = None
        #: the channel started at login, with the read end of its output (None: its process's stdout)
        self.early: tuple[asyncio.subprocess.Process, int | None] | None = None

    async def start(self) -> None:
        dial: Dial = await asyncio.shield(self.ssh.dial())
        argv = [*self.ssh.base_argv(), *dial.argv, "-M", "-S", str(self.socket), "-N", "-o", "ControlPersist=no",
                "--", self.ssh.target.alias]
        self.proc = await asyncio.create_subprocess_exec(
            *child_argv(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, **dial.env} if dial.env else None, **child_kwargs()
        )
        waited = 0.0
        try:
            while not self.socket.exists():
                if self.proc.returncode is not None or waited > MASTER_WAIT:
                    err = (await self.proc.stderr.read()).decode("utf-8", "replace") if self.proc.stderr else ""
                    raise ssh_error(err or "the connection closed during the handshake", self.ssh.target)
                await asyncio.sleep(0.01)
                waited += 0.01
        except BaseException:  # failed, or cancelled (the job stopped): no ssh may outlive its master object
            await asyncio.shield(self.stop())
            raise

    async def channel(self, command: str, *, stdin: bool = True, stdout=subprocess.PIPE,
                      subsystem: bool = False) -> asyncio.subprocess.Process:
        """Start one command (or the server's subsystem of that name) as a new channel of this connection
        (``stdout``: a pipe, or a descriptor to use)."""
        return await asyncio.create_subprocess_exec(
            *child_argv(self.ssh.channel_argv(self.socket, command, subsystem=subsystem)),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=stdout, stderr=subprocess.PIPE, limit=1 << 20, **child_kwargs(),
        )

    async def _piped(self, command: str) -> tuple[asyncio.subprocess.Process, int]:
        """``command`` as a new channel writing into a pipe of Ferry's own: (its process, the pipe's read end)."""
        read_end, write_end = os.pipe()
        try:
            proc = await self.channel(command, stdout=write_end)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        return proc, read_end

    async def start_early(self, command: str, stdin: bytes) -> None:
        """Start ``command`` now with its output on a pipe (for ``take_early``) and ``stdin`` written."""
        proc, read_end = await self._piped(command)
        proc.stdin.write(stdin)
        self.early = (proc, read_end)

    def take_early(self) -> tuple[asyncio.subprocess.Process, int | None] | None:
        """The channel ``start_early`` began (its process, the read end of its output), once, if it still runs
        (one that ended has its pipe closed here)."""
        early, self.early = self.early, None
        if early is not None and early[0].returncode is not None:
            _close_output(early)
            return None
        return early

    def end_early(self) -> asyncio.subprocess.Process | None:
        """The early channel's process with its output closed, for a caller that will not read it (and reaps
        the process itself); None when there is none."""
        early = self.take_early()
        if early is None:
            return None
        _close_output(early)
        return early[0]

    async def reader(self, command: str) -> tuple[asyncio.subprocess.Process, PipeSource | StreamSource]:
        """``command`` as a new channel whose output Ferry reads itself: a pipe it splices from."""
        proc, read_end = await self._piped(command)
        return proc, PipeSource(read_end)

    @staticmethod
    def output_of(early: tuple[asyncio.subprocess.Process, int | None]) -> PipeSource | StreamSource:
        """What to read an early channel's output from: its pipe, or (a direct login's) its process's stdout."""
        proc, read_end = early
        return PipeSource(read_end) if read_end is not None else StreamSource(proc.stdout)

    async def run(self, command: str, stdin: bytes = b"", timeout: float = 60.0) -> tuple[int, bytes, bytes]:
        """One short command as a channel of this connection: (exit status, stdout, stderr)."""
        proc = await self.channel(command)
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except BaseException:
            await reap(proc)
            raise
        return proc.returncode or 0, out, err

    async def stop(self) -> None:
        """Close the connection now: every byte it carried has already arrived (or will be fetched again).

        The master dies first: it holds the pipes of its channels' processes, which otherwise end only
        a round trip after their own kill (``OpenSsh.discard``)."""
        if self.proc and self.proc.returncode is None:
            self.proc.kill()
        early = self.end_early()
        if early is not None:
            await reap(early)
        if self.proc:
            await reap(self.proc)
        try:
            os.unlink(self.socket)
        except OSError:
            pass
