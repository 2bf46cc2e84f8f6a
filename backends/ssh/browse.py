"""A remote folder as the window's folder pane sees it: listed in batches, and changed (make a folder, rename,
delete) over SFTP.

SFTP carries every name as a protocol field, so no name ever meets a shell, on shell accounts and SFTP-only
accounts alike. A listing asks for ``READ_AHEAD`` batches at once (``listdir_iter``) instead of one per round
trip: OpenSSH answers a hundred names per batch, so 10,000 names over a 50 ms path take a few round trips, not
a hundred. Deleting a folder walks it with ``lstat``: a link inside it is removed, never followed.

paramiko is blocking: callers run these in a thread, holding nothing else of the control connection.
"""

from __future__ import annotations

import errno
import stat as statmod

from ..core.abilities import EntriesSink, FolderEntry
from ..core.errors import BadRequest, NotFound, TransferError
from .address import remote_join
from .control import Control, sftp_error
from .faults import dropped_is_transient

READ_AHEAD = 64
BATCH = 500  # entries per ``on_entries`` call: a pane repaints a few times a second, not per name


def _entry(folder: str, attrs, sftp=None) -> FolderEntry:
    """``attrs`` as an entry; a link is followed (``stat``) when ``sftp`` is given, to say what it leads to."""
    mode = attrs.st_mode or 0
    size, mtime = attrs.st_size, attrs.st_mtime
    link = statmod.S_ISLNK(mode)
    if link and sftp is not None:
        try:
            target = sftp.stat(remote_join(folder, attrs.filename))
            mode, size, mtime = target.st_mode or 0, target.st_size, target.st_mtime
        except OSError:
            pass  # a dangling link: shown as the link it is
    return FolderEntry(attrs.filename, statmod.S_ISDIR(mode), None if statmod.S_ISDIR(mode) else size,
                       float(mtime) if mtime is not None else None, statmod.S_IMODE(mode), link)


def list_folder(control: Control, folder: str, on_entries: EntriesSink | None = None) -> list[FolderEntry]:
    """The folder's entries, told ``BATCH`` at a time. Links are followed once the listing is read: a ``stat``
    sent while read-ahead answers are still due would take those answers from the listing."""
    found: list[FolderEntry] = []
    links: list = []
    told = 0
    with control.lock, dropped_is_transient(control.target.host):
        try:
            for attrs in control.sftp.listdir_iter(folder, read_aheads=READ_AHEAD):
                if statmod.S_ISLNK(attrs.st_mode or 0):
                    links.append(attrs)
                    continue
                found.append(_entry(folder, attrs))
                if on_entries is not None and len(found) - told >= BATCH:
                    on_entries(found[told:])
                    told = len(found)
            found.extend(_entry(folder, attrs, control.sftp) for attrs in links)
        except OSError as exc:
            raise sftp_error(exc, "folder", folder) from None
        except UnicodeDecodeError:
            raise BadRequest(f"A name in {folder} on {control.target.host} is not valid UTF-8, and SFTP cannot "
                             "carry it. Rename it on the server (for example with convmv).") from None
    if on_entries is not None and len(found) > told:
        on_entries(found[told:])
    return found


def locate(control: Control, path: str) -> str:
    """``path`` is already absolute here: ``_browse`` resolved it against the login folder (realpath)."""
    if control.stat(path) is None:
        raise NotFound(f"There is no folder {path} on {control.target.host}.")
    return path


def _exists(control: Control, path: str) -> bool:
    try:
        control.sftp.lstat(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise sftp_error(exc, "path", path) from None


def _parent(path: str) -> str:
    parent = path.rstrip("/").rsplit("/", 1)[0]
    return parent or "/"


def make_folder(control: Control, path: str) -> None:
    with control.lock, dropped_is_transient(control.target.host):
        if _exists(control, path):
            raise BadRequest(f"There is already something named {path} on {control.target.host}; pick another name.")
        try:
            control.sftp.mkdir(path)
        except OSError as exc:
            raise sftp_error(exc, "create the folder", path) from None


def rename(control: Control, path: str, new_name: str) -> None:
    new = remote_join(_parent(path), new_name)
    with control.lock, dropped_is_transient(control.target.host):
        if not _exists(control, path):
            raise NotFound(f"There is no {path} on {control.target.host} any more; refresh the folder.")
        if _exists(control, new):
            raise BadRequest(f"There is already something named {new} on {control.target.host}; Ferry does not "
                             "replace it. Pick another name, or delete that one first.")
        try:
            control.sftp.rename(path, new)  # plain SFTP rename: refuses to replace, unlike posix-rename
        except OSError as exc:
            raise sftp_error(exc, "rename", path) from None


def remove(control: Control, path: str) -> int:
    """Delete ``path`` and, for a folder, everything in it; returns how many entries went."""
    if path.rstrip("/") in ("", "/"):
        raise BadRequest("Ferry does not delete a server's root folder.")
    with control.lock, dropped_is_transient(control.target.host):
        try:
            attrs = control.sftp.lstat(path)
        except FileNotFoundError:
            raise NotFound(f"There is no {path} on {control.target.host} any more; refresh the folder.") from None
        except OSError as exc:
            raise sftp_error(exc, "path", path) from None
        return _remove(control, path, attrs.st_mode or 0)


def _remove(control: Control, path: str, mode: int) -> int:
    sftp = control.sftp
    try:
        if not statmod.S_ISDIR(mode):
            sftp.remove(path)
            return 1
        gone = 0
        for child in sftp.listdir_attr(path):
            gone += _remove(control, remote_join(path, child.filename), child.st_mode or 0)
        sftp.rmdir(path)
        return gone + 1
    except OSError as exc:
        if getattr(exc, "errno", None) == errno.ENOENT:
            return 0  # gone meanwhile: what was asked for
        error: TransferError = sftp_error(exc, "delete", path)
        raise error from None
