"""The OS calls that differ between Linux, macOS and Windows, each with a portable fallback.

Everything else in Ferry calls these instead of ``fcntl``, ``os.pread``/``os.pwrite``, ``os.fdatasync`` or
``os.statvfs``, so a module never imports something POSIX-only at its top and a call missing on one OS is a
slower path there, never an ``AttributeError`` reported as a server's fault or a thread that dies and leaves a
copy hanging. Which branch runs is decided once, at import, from what ``os`` offers (not from the OS's
name), so a test can take a call away and see the fallback work.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import stat
import sys
import threading
from pathlib import Path

#: open flags that exist everywhere they mean something, 0 where they do not
O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)  # POSIX: not inherited by the ssh and tar children
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX: a link in the last place of a path is refused (ELOOP)

#: whether a file may be renamed while this process holds it open (not on Windows)
RENAMES_OPEN_FILES = os.name != "nt"
#: Windows marks links and junctions as reparse points
_REPARSE = getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400)

# positional I/O: one lock per descriptor where the OS has no pread/pwrite (a seek and a read are two calls)
_seek_locks: dict[int, threading.Lock] = {}
_seek_locks_guard = threading.Lock()


def _seek_lock(fd: int) -> threading.Lock:
    with _seek_locks_guard:
        return _seek_locks.setdefault(fd, threading.Lock())


def pwrite(fd: int, data, offset: int) -> int:
    """Write ``data`` at ``offset`` without moving other writers' positions; returns the bytes written."""
    if hasattr(os, "pwrite"):
        return os.pwrite(fd, data, offset)
    with _seek_lock(fd):
        os.lseek(fd, offset, os.SEEK_SET)
        return os.write(fd, data)


def pwrite_all(fd: int, data, offset: int) -> None:
    """All of ``data`` at ``offset`` (``pwrite`` may write less than asked)."""
    view = memoryview(data)
    while view:
        done = pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


def copy_range(src: int, dst: int, length: int, src_offset: int, dst_offset: int) -> int:
    """Bytes copied from ``src`` at ``src_offset`` to ``dst`` at ``dst_offset`` by the kernel, never through
    this process (``copy_file_range``: Linux, FreeBSD); 0 where the OS or the file systems cannot (then the
    caller reads and writes)."""
    if not hasattr(os, "copy_file_range"):
        return 0
    try:
        return os.copy_file_range(src, dst, length, src_offset, dst_offset)
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF):
            return 0
        raise


def pread(fd: int, size: int, offset: int) -> bytes:
    """Read up to ``size`` bytes at ``offset``."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    with _seek_lock(fd):
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)


def forget(fd: int) -> None:
    """The descriptor is closed: drop its seek lock (fallback path only)."""
    with _seek_locks_guard:
        _seek_locks.pop(fd, None)


def datasync(fd: int) -> None:
    """Make the file's data durable: ``fdatasync`` where it exists, ``F_FULLFSYNC`` on macOS (its ``fsync``
    leaves data in the drive's cache), else ``fsync``."""
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
        return
    if sys.platform == "darwin":
        try:
            import fcntl

            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
            return
        except (ImportError, AttributeError, OSError):
            pass
    os.fsync(fd)


def sync_folder(folder: Path) -> None:
    """A rename in ``folder`` made durable, where folders can be opened (POSIX); a best effort elsewhere."""
    if not hasattr(os, "O_DIRECTORY") and os.name == "nt":
        return
    try:
        dfd = os.open(folder, os.O_RDONLY | O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


class Busy(Exception):
    """Another process holds the lock."""


def lock_exclusive(fd: int) -> None:
    """An exclusive lock on the open file, not waiting: ``flock`` on POSIX, ``msvcrt.locking`` of its first byte
    on Windows; raises ``Busy`` when another process holds it. Where neither exists, nothing is locked."""
    try:
        import fcntl
    except ImportError:
        fcntl = None
    if fcntl is not None and hasattr(fcntl, "flock"):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy() from None
        return
    try:
        import msvcrt
    except ImportError:
        return
    try:
        position = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        os.lseek(fd, position, os.SEEK_SET)
    except OSError as exc:
        if exc.errno in (errno.EACCES, getattr(errno, "EDEADLK", errno.EACCES)):
            raise Busy() from None
        raise


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists. Not ``os.kill(pid, 0)`` on Windows: there signal 0 is
    ``CTRL_C_EVENT``, and it would interrupt that process's console group instead of asking."""
    if os.name == "nt":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    except OSError:
        return False
    return True


def _windows_process_alive(pid: int) -> bool:
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return ctypes.get_last_error() == 5  # ERROR_ACCESS_DENIED: it exists, and is someone else's
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


_polls_pipes: bool | None = None


def loop_polls_pipes() -> bool:
    """Whether this process's event loop can watch a pipe for reading (``add_reader``): the selector loops of
    Linux and macOS can; Windows' Proactor loop cannot. Asked of the running loop once, by trying."""
    global _polls_pipes
    if _polls_pipes is None:
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return os.name != "nt"  # no loop to ask (yet): what the OS's own loop would say; not remembered
        read, write = os.pipe()
        try:
            loop.add_reader(read, lambda: None)
            loop.remove_reader(read)
            _polls_pipes = True
        except (NotImplementedError, OSError, ValueError):
            _polls_pipes = False
        finally:
            os.close(read)
            os.close(write)
    return _polls_pipes


def multiplexed_ssh() -> bool:
    """Whether OpenSSH's ControlMaster streams can carry data here: not on Windows, whose OpenSSH has no
    ControlMaster and whose event loop cannot poll the pipes they are read from; the SSH backend then logs in
    once per stream (``backends/ssh/direct.py``), reading each through the loop's own subprocess pipes."""
    return os.name != "nt" and hasattr(os, "fork") and loop_polls_pipes()


def my_uid() -> int | None:
    """This user's numeric id where the OS has one (POSIX); None on Windows, where files carry no uid."""
    getuid = getattr(os, "getuid", None)
    return getuid() if getuid else None


def free_bytes(folder: Path) -> int | None:
    """Bytes this user may still write in ``folder``'s file system; None when it cannot be read."""
    if hasattr(os, "statvfs"):
        try:
            st = os.statvfs(folder)
        except OSError:
            return None
        return st.f_bavail * st.f_frsize
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def read_only_fs(folder: Path) -> bool:
    """Whether ``folder``'s file system is mounted read-only (POSIX; False where the OS cannot say)."""
    if not hasattr(os, "statvfs"):
        return False
    try:
        return bool(os.statvfs(folder).f_flag & getattr(os, "ST_RDONLY", 1))
    except OSError:
        return False


def is_link(path: Path) -> bool:
    """A symbolic link, or on Windows a junction or any other reparse point that redirects the path."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return True
    return bool(getattr(st, "st_file_attributes", 0) & _REPARSE)


@functools.cache
def _fallocate():
    """libc's ``fallocate`` (loaded once), or None."""
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    fn = getattr(libc, "fallocate64", None) or getattr(libc, "fallocate", None)
    if fn is not None:
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    return fn


def allocate(fd: int, size: int) -> bool:
    """Reserve ``size`` bytes of the open file without writing them (Linux ``fallocate``); False where the file
    system or the OS cannot, and the caller extends the file instead."""
    if not sys.platform.startswith("linux") or not hasattr(os, "posix_fallocate"):
        return False
    fn = _fallocate()
    if fn is None:
        return False
    if fn(fd, 0, 0, size) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
        return False  # glibc's posix_fallocate would write zeros: too slow for 300 GB
    raise OSError(err, os.strerror(err))


#: what a file system says when it keeps no POSIX permission bits (FAT, exFAT, some FUSE and network mounts)
_NO_MODES = {errno.ENOSYS, errno.EPERM, errno.ENOTSUP, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)}


def set_mode(path, mode: int) -> bool:
    """Give ``path`` the permission bits ``mode`` where its file system keeps them; False where it keeps none
    (FAT, exFAT: a copy there cannot keep the server's modes, and that is no error)."""
    try:
        os.chmod(path, mode)
        return True
    except OSError as exc:
        if exc.errno in _NO_MODES:
            return False
        raise


def stamp_open(fd: int, mode: int | None, mtime_ns: int | None) -> bool:
    """Set the open file's permission bits and time through its descriptor (``fchmod``, ``futimens``): no
    second lookup of its name. False where the OS cannot (Windows); the caller then sets them by name."""
    if not hasattr(os, "fchmod") or os.utime not in os.supports_fd:
        return False
    if mode is not None:
        try:
            os.fchmod(fd, mode)
        except OSError as exc:
            if exc.errno not in _NO_MODES:
                raise
    if mtime_ns is not None:
        os.utime(fd, ns=(mtime_ns, mtime_ns))
    return True


#: the most entries below a data folder that ``keep_private`` looks at (a relay's spool may hold many files)
PRIVATE_WALK_LIMIT = 10_000


def keep_private(folder: Path) -> int:
    """Make ``folder`` and what lies below it this user's alone (folders 0700, files 0600) where others could read
    them; the number of entries tightened. Links are never followed. On Windows the user's profile keeps the data
    private by its ACLs and POSIX bits mean little: nothing is done there (0)."""
    if os.name == "nt":
        return 0
    changed, seen, todo = 0, 0, [folder]
    while todo and seen < PRIVATE_WALK_LIMIT:
        path = todo.pop()
        seen += 1
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            continue  # a link is not followed; a socket (the agent's) is judged, and refused, by its owner
        if stat.S_ISDIR(info.st_mode):
            with os.scandir(path) as entries:
                todo.extend(Path(entry.path) for entry in entries)
        if info.st_mode & 0o077 and set_mode(path, 0o700 if stat.S_ISDIR(info.st_mode) else 0o600):
            changed += 1
    return changed


def private_file(path: Path) -> None:
    """Create ``path`` empty and this user's alone (0600, whatever the umask) unless it exists; never through a
    link. A program that opens it afterwards (SQLite, a log handler) keeps its mode."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600))


#: the prefix of Windows' extended-length paths, which its file calls take at up to ~32,767 characters
EXTENDED = "\\\\?\\"


def extended_windows_path(text: str) -> str:
    r"""An absolute Windows path in extended form: ``C:\x`` → ``\\?\C:\x``, ``\\server\share\x`` →
    ``\\?\UNC\server\share\x``. Extended paths are not normalised by Windows, so it is done here first
    (``/`` → ``\``, ``.`` and ``..`` resolved); a path already extended (or a device path) is kept."""
    import ntpath

    if text.startswith(("\\\\?\\", "\\\\.\\")):
        return text
    normal = ntpath.normpath(text)
    if normal.startswith("\\\\"):
        return EXTENDED + "UNC\\" + normal[2:]
    return EXTENDED + normal


def long_path(path: Path | str) -> Path:
    """``path`` as the OS opens it at any length. On Windows, without the registry's LongPathsEnabled, a path
    of 260 characters or more fails ("The system cannot find the path specified"), and a study's folders
    under a deep DEST reach that; its extended form does not. Elsewhere ``path`` is returned as it is."""
    if os.name != "nt":
        return Path(path)
    return Path(extended_windows_path(os.path.abspath(path)))
