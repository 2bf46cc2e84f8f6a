"""The control connection (paramiko): metadata over SFTP, short commands over exec.

SFTP answers stat, listing, mkdir, rename, chmod and utime without any shell, so file
names never meet a parser. Exec runs only the fixed scripts of ``scripts.py`` (checksums,
free space). Bulk data does not go through here: paramiko moves ~250 Mbit/s per core
(measured, docs/backends/ssh.md), so big files travel over parallel OpenSSH processes.

paramiko is blocking: callers run these methods in a thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import errno
import functools
import socket
import stat as statmod
import threading

import paramiko

from ..core.errors import (
    AuthError,
    BadRequest,
    HostKeyError,
    NotFound,
    PermissionDenied,
    TransferError,
    Transient,
    Unreachable,
)
from ..core.errors import (
    NoSpace as NoSpaceError,
)
from . import scripts
from .address import Entry, Target, known_hosts_path, remote_join
from .faults import dropped_is_transient, login_prints
from .options import SshOptions
from .trust import AskTrust, KnownHostsPolicy, changed_key_error

CONNECT_TIMEOUT = 20.0


def _serialized(method):
    """Run a Control method that uses the shared SFTP channel under the control's lock; a connection that
    dropped meanwhile is a fault to retry, not an internal error."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self.lock, dropped_is_transient(self.target.host):
            return method(self, *args, **kwargs)

    return locked



def sftp_error(exc: OSError, what: str, where: str) -> TransferError:
    """An SFTP status as a sentence."""
    code = getattr(exc, "errno", None)
    if isinstance(exc, FileNotFoundError) or code == errno.ENOENT:
        return NotFound(f"There is no {what} {where} on the server. Check the path.")
    if isinstance(exc, PermissionError) or code == errno.EACCES:
        return PermissionDenied(f"The server does not allow access to {where} (permission denied). "
                                "Ask its owner, or choose another path.")
    if code == errno.ENOSPC or "no space" in str(exc).lower():
        return NoSpaceError(f"The server's disk is full at {where}. Free some space there and run the transfer again.")
    return TransferError(f"The server could not {what} {where}: {exc}.")


def _login_error(exc: BaseException, t: Target, path) -> BaseException:
    """What a failed paramiko login means, in one sentence each; anything else is raised as it is."""
    where = f"{t.host}:{t.port}"
    if isinstance(exc, HostKeyError):
        return exc
    if isinstance(exc, paramiko.BadHostKeyException):
        return changed_key_error(t.host, exc, path, t.port)
    if isinstance(exc, paramiko.PasswordRequiredException):
        return AuthError(f"The SSH key for {t.user}@{t.alias} is protected by a passphrase Ferry does not have. "
                         "Load it into ssh-agent (ssh-add), or give it in the site profile.")
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthError(f"{t.host} refused the login for {t.user} (no key or password was accepted). Check the "
                         "user name and --identity, or that your public key is in the server's authorized_keys.")
    if isinstance(exc, socket.gaierror):
        return Unreachable(f"Could not find the host {t.host} (name lookup failed). Check the spelling.")
    if isinstance(exc, ConnectionRefusedError):
        return Unreachable(f"The server at {where} refused the connection. Check the port, or whether sshd "
                           "is running.")
    if isinstance(exc, TimeoutError):
        return Unreachable(f"{where} did not answer within {CONNECT_TIMEOUT:.0f} s. Check the address and any "
                           "firewall.")
    if isinstance(exc, paramiko.SSHException) and "no authentication methods" in str(exc).lower():
        return AuthError(f"Ferry has no key or password to log in to {t.host} as {t.user}. Give --identity, "
                         "load a key into ssh-agent, or keep the password in the site profile.")
    if isinstance(exc, (paramiko.SSHException, OSError)):
        return Transient(f"The SSH connection to {where} failed ({exc}).")
    return exc


class Control:
    def __init__(self, target: Target, options: SshOptions, ask: AskTrust | None = None) -> None:
        self.target, self.options, self.ask = target, options, ask
        self.client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        #: one request at a time on the shared SFTP channel: paramiko's SFTPClient drops an answer meant for
        #: another thread's request, which then waits for ever (seen as hung SFTP-only folder uploads)
        self.lock = threading.RLock()
        self.accepted_key: str | None = None
        self._exec_ok: bool | None = None
        #: what the login prints before every command (a chatty shell start-up file), once the probe saw it
        self.noise: bytes | None = None

    # -- connecting --------------------------------------------------------------
    def connect(self) -> Control:
        t = self.target
        path = known_hosts_path(self.options.known_hosts)
        client = paramiko.SSHClient()
        if path.exists():
            try:
                client.load_host_keys(str(path))
            except (OSError, paramiko.SSHException) as exc:
                raise HostKeyError(f"Could not read the known hosts file {path} ({exc}). Fix or move it.") from None
        policy = KnownHostsPolicy(path, self.options.accept_new_host_key, self.ask)
        client.set_missing_host_key_policy(policy)
        try:
            client.connect(
                t.host, t.port, username=t.user, password=t.password, key_filename=list(t.identity_files) or None,
                allow_agent=True, look_for_keys=not t.identity_files, timeout=CONNECT_TIMEOUT,
                banner_timeout=CONNECT_TIMEOUT, auth_timeout=CONNECT_TIMEOUT,
            )
        except BaseException as exc:
            client.close()  # a refused login leaves paramiko's transport running: the server would keep it open
            raise _login_error(exc, t, path) from None
        self.client = client
        self.accepted_key = policy.accepted
        return self

    @property
    def sftp(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            self._sftp = self._open_sftp()
        return self._sftp

    def _open_sftp(self) -> paramiko.SFTPClient:
        """A new SFTP session; garbage where its version should be is a login that prints (``login_prints``)."""
        try:
            return self.client.open_sftp()
        except (paramiko.SSHException, paramiko.SFTPError, OSError) as exc:
            if "garbage" in str(exc).lower():
                if self.noise is None:
                    self.can_exec()  # what the login prints, for the sentence
                raise login_prints(self.target.host, self.noise) from None
            raise TransferError(f"{self.target.host} does not offer SFTP ({exc}).") from None

    def own_sftp(self) -> paramiko.SFTPClient:
        """An SFTP channel of its own on the same login, for data moved in a thread while other threads use
        ``sftp``: one paramiko SFTPClient used from two threads at once deadlocks (one thread's prefetch reads
        the answers the other waits for), which hung every SFTP-only folder holding small and large files."""
        return self._open_sftp()

    def close(self) -> None:
        if self.client:
            self.client.close()
            self.client = None
            self._sftp = None

    def __enter__(self) -> Control:
        # ``with Control(…).connect() as c`` is how callers write it: a second connect here made a second login
        # and left the first one open on the server (13 idle sessions after an afternoon in the Files tab)
        return self if self.client is not None else self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- metadata ------------------------------------------------------------------
    @_serialized
    def home(self) -> str:
        return self.sftp.normalize(".")

    @_serialized
    def absolute(self, path: str) -> str:
        """The remote path made absolute ("" and relative paths start in the login folder)."""
        if path.startswith("/"):
            return path
        return remote_join(self.home(), path) if path else self.home()

    @_serialized
    def stat(self, path: str) -> Entry | None:
        """None when the path does not exist."""
        try:
            attrs = self.sftp.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise sftp_error(exc, "file", path) from None
        return Entry(path, attrs.st_size or 0, int(attrs.st_mtime or 0), attrs.st_mode or 0)

    @_serialized
    def walk(self, root: str) -> list[Entry]:
        """Every file and folder under ``root`` (breadth-first), paths relative to it; symlinks followed once."""
        out: list[Entry] = []
        queue = [""]
        while queue:
            rel = queue.pop(0)
            folder = remote_join(root, rel) if rel else root
            items = self._listing(folder)
            for attrs in sorted(items, key=lambda a: a.filename):
                child = f"{rel}/{attrs.filename}" if rel else attrs.filename
                mode = attrs.st_mode or 0
                if statmod.S_ISLNK(mode):
                    resolved = self.stat(remote_join(root, child))
                    if resolved is None:
                        continue  # a dangling link has nothing to copy
                    mode, size, mtime = resolved.mode, resolved.size, resolved.mtime
                else:
                    size, mtime = attrs.st_size or 0, int(attrs.st_mtime or 0)
                entry = Entry(child, size, mtime, mode)
                out.append(entry)
                if entry.is_dir:
                    queue.append(child)
        return out

    @_serialized
    def listdir(self, folder: str) -> list[Entry]:
        items = self._listing(folder)
        return [Entry(a.filename, a.st_size or 0, int(a.st_mtime or 0), a.st_mode or 0) for a in items]

    def _listing(self, folder: str) -> list:
        try:
            return self.sftp.listdir_attr(folder)
        except OSError as exc:
            raise sftp_error(exc, "folder", folder) from None
        except UnicodeDecodeError:
            # paramiko decodes every name as UTF-8; a Latin-1 name from an old system cannot cross this way
            raise BadRequest(f"A name in {folder} on {self.target.host} is not valid UTF-8, and this account's "
                             "SFTP cannot carry it. Rename it on the server (for example with convmv), or copy "
                             "through an account that may run commands.") from None

    @_serialized
    def mkdirs(self, path: str) -> None:
        parts = [p for p in path.split("/") if p]
        current = "/" if path.startswith("/") else ""
        for part in parts:
            current = remote_join(current, part) if current else part
            if self.stat(current) is None:
                try:
                    self.sftp.mkdir(current)
                except OSError as exc:
                    raise sftp_error(exc, "create the folder", current) from None

    @_serialized
    def rename(self, old: str, new: str) -> None:
        try:
            self.sftp.posix_rename(old, new)
        except OSError as exc:
            raise sftp_error(exc, "rename", old) from None

    @_serialized
    def remove(self, path: str) -> None:
        """Delete one file, if it is there (a cancelled upload's ``.part``)."""
        try:
            self.sftp.remove(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise sftp_error(exc, "remove", path) from None

    @_serialized
    def write_new(self, path: str, data: bytes) -> None:
        """``path`` created with ``data``, or ``OSError`` when it exists: SFTP's exclusive create (``O_EXCL``)."""
        with self.sftp.open(path, "wx") as fh:
            fh.write(data)

    @_serialized
    def read_head(self, path: str, limit: int) -> bytes | None:
        """The first ``limit`` bytes of ``path``, or None when it cannot be read."""
        try:
            with self.sftp.open(path, "r") as fh:
                return fh.read(limit)
        except OSError:
            return None

    @_serialized
    def finish_file(self, path: str, mode: int | None, mtime: int | None) -> None:
        try:
            if mode is not None:
                self.sftp.chmod(path, mode & 0o7777)
            if mtime is not None:
                self.sftp.utime(path, (mtime, mtime))
        except OSError as exc:
            raise sftp_error(exc, "set the time and permissions of", path) from None

    # -- commands ----------------------------------------------------------------
    def run(self, script: str, stdin: bytes = b"", *numbers: int, timeout: float = 600) -> tuple[int, bytes, bytes]:
        """Run one of ``scripts``; returns (exit status, stdout, stderr)."""
        chan = self.client.get_transport().open_session(timeout=CONNECT_TIMEOUT)
        feeder = None
        try:
            chan.settimeout(timeout)
            chan.exec_command(scripts.command(script, *numbers))
            # stdin goes from a thread of its own while this one reads: a folder's names in, its checksums
            # out, each larger than the SSH windows, stall for good when one waits for the other
            feeder = threading.Thread(target=_feed, args=(chan, stdin), daemon=True, name="ssh-stdin")
            feeder.start()
            out = chan.makefile("rb").read()  # our scripts print little on stderr: no window deadlock
            err = chan.makefile_stderr("rb").read()
            return chan.recv_exit_status(), out, err
        finally:
            chan.close()
            if feeder is not None:
                feeder.join(timeout)

    def can_exec(self) -> bool:
        """Whether this account may run commands (SFTP-only accounts may not)."""
        if self._exec_ok is None:
            try:
                status, out, _ = self.run(scripts.PROBE, timeout=30)
                said = out.strip()
                self._exec_ok = status == 0 and said == b"ferry-exec-ok"
                if status == 0 and said.endswith(b"ferry-exec-ok") and not self._exec_ok:
                    self.noise = said[:-len(b"ferry-exec-ok")].strip()  # the login prints: commands garbled
            except (paramiko.SSHException, OSError):
                self._exec_ok = False
        return self._exec_ok

    def sha256(self, path: str) -> str | None:
        """The remote file's SHA-256 computed by the server, or None when it has no tool for it."""
        if not self.can_exec():
            return None
        status, out, _ = self.run(scripts.SHA256, scripts.encode_path(path))
        return scripts.sha256_answer(status, out)

    def sha256_many(self, root: str, rels: list[str]) -> list[str | None]:
        """The server's SHA-256 of many files under ``root``, in one process; None where it cannot say."""
        if not rels or not self.can_exec():
            return [None] * len(rels)
        status, out, _ = self.run(scripts.SHA256_MANY, scripts.many_names(root, rels))
        return scripts.sha256_many_answer(status, out, len(rels))

    def walk_fast(self, root: str) -> list[Entry]:
        """``walk`` in one round trip when the server has GNU find; else the SFTP walk."""
        if self.can_exec():
            status, out, _ = self.run(scripts.LIST_TREE, scripts.encode_path(root))
            if status == 0:
                return scripts.tree_answer(out)
        return self.walk(root)

    def free_bytes(self, path: str) -> int | None:
        if not self.can_exec():
            return None
        status, out, _ = self.run(scripts.FREE_BYTES, scripts.encode_path(path), timeout=30)
        text = out.decode("ascii", "replace").strip()
        return int(text) if status == 0 and text.isdigit() else None


def _feed(chan, stdin: bytes) -> None:
    """``stdin`` to a command's channel, then its end; a channel that closes meanwhile is the reader's to say."""
    try:
        if stdin:
            chan.sendall(stdin)
        chan.shutdown_write()
    except (OSError, EOFError, paramiko.SSHException):
        return
