"""Ferry as it would run on Windows or macOS, simulated inside this Linux Python: what that OS's Python lacks is
taken away before Ferry is imported, then every module of ``app`` and ``backends`` is imported and a command
runs. There is no Windows or macOS machine here; this is how far one Linux machine can check the platform
module's fallbacks (the CI workflow runs the suite on the real ones).

    python -m tests.other_os windows|macos|core|here [labferry arguments…]

prints one JSON line of the modules that failed to import (exit 70 when any did), then runs ``labferry`` with
the remaining arguments and exits with its status.

``core`` is a machine with Ferry's core install only (``pip install labferry``: no Qt, no libtorrent, as on a
DTN): the window's own modules (``app.ui``) are not imported, and everything else must import without them.

What is taken away is what the OS's own Python lacks, by the Python documentation's "Availability" notes:
POSIX-only modules cannot be imported, POSIX-only ``os`` functions and flags are gone, ``socket.AF_UNIX`` and
the POSIX signals are gone, and, on Windows, the event loop has no ``add_reader``/``add_signal_handler`` (the
Proactor loop raises ``NotImplementedError``). The standard library's own users of a removed call (``shutil``'s
``disk_usage``) keep working, as they do there through that OS's own call.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import pkgutil
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

#: modules Windows' Python does not have
WINDOWS_MODULES = ("fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "syslog", "crypt", "nis", "spwd",
                   "posix", "_posixshmem", "readline")
#: ``os`` names Windows' Python does not have
WINDOWS_OS = ("pread", "pwrite", "preadv", "pwritev", "fdatasync", "statvfs", "fstatvfs", "O_CLOEXEC", "O_NOFOLLOW",
              "O_DIRECTORY", "O_NONBLOCK", "O_NOCTTY", "O_SYNC", "O_DSYNC", "getuid", "geteuid", "getgid", "getegid",
              "getgroups", "setsid", "getsid", "setpgid", "getpgid", "killpg", "fork", "forkpty", "mkfifo", "mknod",
              "chown", "lchown", "fchown", "fchmod", "posix_fadvise", "posix_fallocate", "sendfile", "splice",
              "sched_getaffinity", "getloadavg", "sync", "pipe2", "memfd_create", "openpty", "wait3", "wait4",
              "ttyname", "nice", "ST_RDONLY", "copy_file_range")
#: signals Windows does not have (it has SIGINT, SIGTERM, SIGBREAK, SIGABRT, SIGFPE, SIGILL, SIGSEGV)
WINDOWS_SIGNALS = ("SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGCHLD",
                   "SIGSTOP", "SIGCONT", "SIGTSTP", "SIGWINCH", "pthread_sigmask", "setitimer", "alarm",
                   "pause", "siginterrupt", "pthread_kill")
#: what macOS's Python lacks that Linux's has
MACOS_OS = ("fdatasync", "posix_fallocate", "posix_fadvise", "sched_getaffinity", "pipe2", "memfd_create",
            "splice", "copy_file_range", "O_DIRECT", "O_PATH", "O_TMPFILE", "getxattr", "setxattr")


class _Refused:
    """A meta path finder that makes ``names`` unimportable, as on an OS without them."""

    def __init__(self, names: tuple[str, ...], why: str = "not on this OS") -> None:
        self.names, self.why = set(names), why

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (simulated: {self.why})", name=fullname)
        return None


def _no_proc_on(opener):
    """``open`` that finds no ``/proc`` (neither macOS nor Windows has one)."""
    def opening(file, *args, **kwargs):
        if str(file).startswith("/proc"):
            raise FileNotFoundError(2, "No such file or directory (simulated: no /proc here)", str(file))
        return opener(file, *args, **kwargs)
    return opening


#: the libraries Ferry uses, imported before anything is taken away: each picks its own OS's branch at import
#: (platformdirs' ``windows`` module there), and this Linux Python would otherwise load their POSIX branch
THIRD_PARTY = ("platformdirs", "aiohttp", "aioftp", "paramiko", "keyring", "cryptography", "zstandard",
               "libtorrent", "PySide6.QtCore", "PySide6.QtGui", "PySide6.QtWidgets", "qtawesome", "pyqtgraph")


def _their_own_branches() -> None:
    for name in THIRD_PARTY:
        importlib.import_module(name)


def as_windows() -> None:
    _their_own_branches()
    statvfs = os.statvfs

    def disk_usage(path):  # Windows' shutil asks GetDiskFreeSpaceEx, not statvfs
        st = statvfs(path)
        return shutil._ntuple_diskusage(st.f_blocks * st.f_frsize, (st.f_blocks - st.f_bfree) * st.f_frsize,
                                        st.f_bavail * st.f_frsize)

    shutil.disk_usage = disk_usage
    for name in WINDOWS_MODULES:
        if name != "posix":  # os is built on it here; what it gives is removed from os below
            sys.modules.pop(name, None)
    sys.meta_path.insert(0, _Refused(tuple(n for n in WINDOWS_MODULES if n != "posix")))
    for name in WINDOWS_OS:
        if hasattr(os, name):
            delattr(os, name)
    killed = signal.SIGKILL
    # Windows' Popen.kill is TerminateProcess and names no signal; this Linux Popen.kill looks SIGKILL up when
    # called, so it keeps its own number here
    subprocess.Popen.kill = lambda self: self.send_signal(killed)
    for name in WINDOWS_SIGNALS:
        if hasattr(signal, name):
            delattr(signal, name)
    for name in ("TCP_INFO", "SO_BINDTODEVICE", "TCP_CONGESTION"):  # Linux's socket options
        if hasattr(socket, name):
            delattr(socket, name)
    if hasattr(socket, "AF_UNIX"):
        pair, unix = socket.socketpair, socket.AF_UNIX

        def socketpair(family=None, type=socket.SOCK_STREAM, proto=0):  # Windows' Python makes one over TCP
            return pair(unix if family is None else family, type, proto)

        socket.socketpair = socketpair
        delattr(socket, "AF_UNIX")

    def refused(self, *args, **kwargs):
        raise NotImplementedError("simulated Windows: the Proactor event loop has no such call")

    loop_class = asyncio.SelectorEventLoop
    for name in ("add_reader", "add_writer", "add_signal_handler"):
        setattr(loop_class, name, refused)
    _no_proc()


def as_macos() -> None:
    _their_own_branches()
    for name in MACOS_OS:
        if hasattr(os, name):
            delattr(os, name)
    _no_proc()


#: what the core install lacks: the extras [gui] and [torrent]
EXTRAS = ("PySide6", "shiboken6", "qtawesome", "pyqtgraph", "libtorrent")


def as_core() -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in EXTRAS:
            del sys.modules[name]
    sys.meta_path.insert(0, _Refused(EXTRAS, "not installed"))


def _no_proc() -> None:
    import builtins
    import io

    builtins.open = _no_proc_on(builtins.open)
    io.open = builtins.open


def import_everything(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every module below ``app`` and ``backends`` but those starting with ``skip``: name → the error where its
    import failed."""
    failed: dict[str, str] = {}
    for package in ("app", "backends"):
        for info in pkgutil.walk_packages([str(root / package)], prefix=f"{package}."):
            if info.name.endswith("__main__") or info.name.startswith(skip):
                continue
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # noqa: BLE001  (every failure is what is reported)
                failed[info.name] = f"{type(exc).__name__}: {exc}"
    return failed


def main(argv: list[str]) -> int:
    kind, rest = argv[0], argv[1:]
    {"windows": as_windows, "macos": as_macos, "core": as_core, "here": lambda: None}[kind]()  # here: as it is
    if rest[:1] == ["--no-import-check"]:  # a benchmark's run: start-up as the command alone would pay it
        from app.cli import main as labferry

        return labferry(rest[1:])
    root = Path(__file__).resolve().parents[1]
    # core: the window's modules and libtorrent's users need what the core lacks, and are imported only on demand
    failed = import_everything(root, skip=("app.ui", "backends.torrent.") if kind == "core" else ())
    print(json.dumps({"os": kind, "import_failures": failed}), flush=True)
    if failed:
        return 70
    if not rest:
        return 0
    from app.cli import main as labferry

    return labferry(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
