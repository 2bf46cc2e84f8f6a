"""A download's metadata over its first OpenSSH connection, so no paramiko login is on the critical path.

The streams' OpenSSH logins are what a download waits for anyway; the paramiko control
connection (login, exec check, SFTP subsystem, stat) took as long again after them: 0.9 s
at 50 ms, 1.6 s at 100 ms (measured, docs/benchmarks.md). So a file download asks the
first OpenSSH connection: one channel runs ``scripts.STAT_EACH`` for the whole job (the
first stat, and the last one that checks the file did not change: one round trip each),
another the server's SHA-256. The control connection is opened only when something needs
it: a folder, an upload, an SFTP-only account, a password, or a host key to ask about
(OpenSSH runs in BatchMode and never asks).
"""

from __future__ import annotations

import asyncio
import zlib

from ..core.errors import TransferError
from . import scripts
from .address import Entry, Target, remote_join
from .openssh import Master, ssh_error

STAT_TIMEOUT = 20.0
JUNK_LINES = 50  # what a chatty login script may print before the first answer


class NoExec(Exception):
    """The account may not run commands (``ForceCommand internal-sftp``, a restricted shell): use SFTP."""


class Metadata:
    """One channel answering stat requests, one at a time."""

    def __init__(self, master: Master, target: Target) -> None:
        self.master, self.target = master, target
        self.proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._listings: dict[str, list[Entry] | None] = {}

    async def stat(self, path: str) -> Entry | None:
        """The remote path's entry (its path made absolute), or None when it does not exist."""
        async with self._lock:
            if self.proc is None or self.proc.returncode is not None:
                self.proc = await self.master.channel(scripts.command(scripts.STAT_EACH))
            try:
                return await asyncio.wait_for(self._ask(path), STAT_TIMEOUT)
            except asyncio.TimeoutError:
                await self.close()
                raise NoExec(f"no answer to a stat within {STAT_TIMEOUT:.0f} s") from None

    async def _ask(self, path: str) -> Entry | None:
        proc = self.proc
        proc.stdin.write(scripts.encode_path(path))
        try:
            await proc.stdin.drain()
        except ConnectionError:
            pass  # the channel ended: its status and stderr below say why
        junk: list[bytes] = []
        for _ in range(JUNK_LINES):
            line = await proc.stdout.readline()
            if not line:
                break
            if junk and line.startswith((b"FERRY-NONE", b"FERRY-ERR ", b"FERRY-STAT ")):
                # the login printed before the answer: every data channel would begin with that text too
                raise NoExec(f"the login prints {b''.join(junk)[:120]!r} before every command")
            if not line.startswith(b"FERRY-"):
                junk.append(line)
                continue
            if line.startswith(b"FERRY-NONE"):
                return None
            if line.startswith(b"FERRY-ERR "):
                raise ssh_error(line[10:].decode("utf-8", "replace"), self.target)
            if line.startswith(b"FERRY-STAT "):
                home = (await proc.stdout.readuntil(b"\0"))[:-1].decode("utf-8", "surrogateescape")
                entry = _entry(line[11:], path, home)
                if entry.is_dir:
                    await self._read_listing(entry.rel)
                return entry
        err = (await proc.stderr.read()).decode("utf-8", "replace") if proc.stdout.at_eof() else ""
        status = await proc.wait() if proc.stdout.at_eof() else None
        if "permission denied" in err.lower() or "no such file" in err.lower():
            raise ssh_error(err, self.target)
        raise NoExec(err.strip() or f"no answer (status {status})")

    async def _read_listing(self, root: str) -> None:
        """A folder's stat is followed by its listing (``scripts.STAT_EACH``), kept for ``listing``."""
        try:
            first = (await self.proc.stdout.readuntil(b"\0"))[:-1]
            records = await self._gzipped_records() if first == b"GZ" else await self._plain_records(first)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, zlib.error, ValueError):
            self._listings[root] = None  # the channel broke: the walk asks again over a fresh one
            await self.close()  # and the next stat opens a fresh channel instead of writing to this one
            return
        end = records.pop()
        self._listings[root] = scripts.tree_answer(records) if end == b"END 0" else None

    async def _plain_records(self, record: bytes) -> list[bytes]:
        records = [record]
        while not record.startswith(b"END "):
            record = (await self.proc.stdout.readuntil(b"\0"))[:-1]
            records.append(record)
        return records

    async def _gzipped_records(self) -> list[bytes]:
        """The records from one gzip member; nothing may follow it (the server waits for the next path)."""
        inflate = zlib.decompressobj(wbits=31)
        data = bytearray()
        while not inflate.eof:
            chunk = await self.proc.stdout.read(1 << 16)
            if not chunk:
                raise ValueError("the listing ended early")
            data += inflate.decompress(chunk)
        records = bytes(data).split(b"\0")
        if inflate.unused_data or records.pop() != b"" or not records or not records[-1].startswith(b"END "):
            raise ValueError("a malformed listing")
        return records

    def listing(self, root: str) -> list[Entry] | None:
        """Everything under ``root`` as its stat listed it; None when it could not (no GNU find there)."""
        return self._listings.pop(root, None)

    async def close(self) -> None:
        if self.proc is not None:
            self.master.ssh.discard(self.proc)  # reaped once the master is gone, without a round trip's wait
        self.proc = None


def _entry(line: bytes, path: str, home: str) -> Entry:
    fields = line.split()
    try:
        mode, size, mtime = int(fields[0], 16), int(fields[1]), int(fields[2])
    except (ValueError, IndexError):
        raise NoExec(f"an unexpected stat line: {line[:80]!r}") from None
    absolute = path if path.startswith("/") or not home else (remote_join(home, path) if path else home)
    return Entry(absolute, size, mtime, mode)


async def sha256(master: Master, path: str) -> str | None:
    """The server's SHA-256 of ``path`` (``scripts.SHA256``: OpenSSL first), or None when it has no tool."""
    try:
        status, out, _ = await master.run(scripts.command(scripts.SHA256), scripts.encode_path(path), 3600.0)
    except TransferError:
        return None
    return scripts.sha256_answer(status, out)
