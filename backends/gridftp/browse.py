"""A remote folder as the window's folder pane sees it, over a GridFTP control connection (``ftp://``): listed
with ``MLSD``, changed with ``MKD``, ``RNFR``/``RNTO``, ``DELE`` and ``RMD`` (a folder walked with one ``MLSR``
and emptied deepest first). Names travel as command arguments, never through a shell.

ftplib is blocking: callers run these in a thread. A ``gsiftp://`` or ``sshftp://`` server, which Ferry does
not speak to itself (GSI, GridFTP over SSH), is listed by ``globus-url-copy -list`` (names only: the tool says
no sizes or dates) and cannot be changed from a pane.
"""

from __future__ import annotations

import asyncio
import ftplib
import posixpath

from ..core.abilities import EntriesSink, FolderEntry
from ..core.errors import BadRequest, NotFound, Transient
from .control import Control
from .faults import explain, explain_reply


def list_folder(control: Control, path: str, on_entries: EntriesSink | None = None) -> list[FolderEntry]:
    found = [FolderEntry(e.rel, e.is_dir, None if e.is_dir else e.size, e.mtime, e.mode)
             for e in control.listdir(path) if e.rel not in ("", ".", "..")]
    if on_entries is not None and found:
        on_entries(found)
    return found


def _command(control: Control, doing: str, path: str, send) -> None:
    try:
        send()
    except ftplib.Error as exc:
        raise explain_reply(str(exc), control.url, path, doing) from None
    except (OSError, EOFError) as exc:
        raise Transient(f"The control connection to {control.url.where} broke ({exc}); try again.") from None


def locate(control: Control, path: str) -> str:
    """GridFTP paths are absolute already (``gsiftp://host/x`` is ``/x``)."""
    return "/" + path.lstrip("/")


def make_folder(control: Control, path: str) -> None:
    if control.stat(path) is not None:
        raise BadRequest(f"There is already something named {path} on {control.url.where}; pick another name.")
    _command(control, "create the folder", path, lambda: control.ftp.mkd(path))


def rename(control: Control, path: str, new_name: str) -> None:
    new = posixpath.join(posixpath.dirname(path.rstrip("/")), new_name)
    if control.stat(path) is None:
        raise NotFound(f"There is no {path} on {control.url.where} any more; refresh the folder.")
    if control.stat(new) is not None:
        raise BadRequest(f"There is already something named {new} on {control.url.where}; Ferry does not "
                         "replace it. Pick another name, or delete that one first.")
    _command(control, "rename", path, lambda: control.ftp.rename(path, new))


def remove(control: Control, path: str) -> int:
    """Delete ``path`` and, for a folder, everything in it; returns how many entries went."""
    if path.strip("/") == "":
        raise BadRequest("Ferry does not delete a server's root folder.")
    entry = control.stat(path)
    if entry is None:
        raise NotFound(f"There is no {path} on {control.url.where} any more; refresh the folder.")
    if not entry.is_dir:
        _command(control, "delete", path, lambda: control.ftp.delete(path))
        return 1
    children = control.walk(path)
    for child in sorted((e for e in children if not e.is_dir), key=lambda e: e.rel):
        target = posixpath.join(path, child.rel)
        _command(control, "delete", target, lambda t=target: control.ftp.delete(t))
    for child in sorted((e for e in children if e.is_dir), key=lambda e: -e.rel.count("/")):
        target = posixpath.join(path, child.rel)
        _command(control, "delete", target, lambda t=target: control.ftp.rmd(t))
    _command(control, "delete", path, lambda: control.ftp.rmd(path))
    return len(children) + 1


LIST_SECONDS = 120.0


def parse_tool_listing(text: str) -> list[FolderEntry]:
    """``globus-url-copy -list``: the folder's URL, then one entry per line indented by four spaces, a folder
    ending in ``/`` and a file in one space."""
    found = []
    for line in text.splitlines()[1:]:
        if not line.startswith("    ") or not line.strip():
            continue
        item = line[4:]
        if item.endswith("/"):
            found.append(FolderEntry(item[:-1], True))
        else:
            found.append(FolderEntry(item[:-1] if item.endswith(" ") else item, False))
    return [e for e in found if e.name not in ("", ".", "..")]


async def list_with_tool(url: str, on_entries: EntriesSink | None = None) -> list[FolderEntry]:
    from ..host.procs import child_argv, child_kwargs
    from .copy import tool

    folder = url if url.endswith("/") else url + "/"
    proc = await asyncio.create_subprocess_exec(*child_argv([tool(), "-list", folder]),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                **child_kwargs())
    try:
        out, err = await asyncio.wait_for(proc.communicate(), LIST_SECONDS)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        raise explain(err.decode("utf-8", "replace"), source=folder, dest="")
    found = parse_tool_listing(out.decode("utf-8", "surrogateescape"))
    if on_entries is not None and found:
        on_entries(found)
    return found
