"""A remote folder as the window's folder pane sees it, over one FTP control connection: listed (``MLSD`` or
``LIST``), and changed with ``MKD``, ``RNFR``/``RNTO``, ``DELE`` and ``RMD`` (a folder emptied first, walked
with the same listings). Names travel as command arguments; a line break in one is refused by the address.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from ..core.abilities import EntriesSink, FolderEntry
from ..core.errors import BadRequest, NotFound
from .control import Entry, FtpControl, entry_mtime
from .faults import ftp_error


def folder_entry(entry: Entry) -> FolderEntry:
    is_dir = entry.kind == "dir"
    return FolderEntry(entry.name, is_dir, None if is_dir else entry.size, entry_mtime(entry), None,
                       entry.kind == "link")


async def list_folder(lead: FtpControl, path: str, on_entries: EntriesSink | None = None) -> list[FolderEntry]:
    found = [folder_entry(e) for e in await lead.listing(path) if e.name not in (".", "..")]
    if on_entries is not None and found:
        on_entries(found)
    return found


async def locate(lead: FtpControl, path: str) -> str:
    """``path`` as an absolute path: a relative one starts in the login folder, which ``PWD`` names."""
    if path.startswith("/"):
        return str(PurePosixPath(path))
    try:
        home = str(await lead.client.get_current_directory())
    except Exception as exc:
        raise ftp_error(exc, lead.address, step="list", path=path) from exc
    return str(PurePosixPath(home) / path) if path else home


async def _exists(lead: FtpControl, path: str) -> Entry | None:
    try:
        return await lead.entry(path)
    except NotFound:
        return None


def _shown(path: str) -> str:
    return path or "the login folder"


async def make_folder(lead: FtpControl, path: str) -> None:
    if await _exists(lead, path) is not None:
        raise BadRequest(f"There is already something named {_shown(path)} on {lead.address.where}; pick another "
                         "name.")
    try:
        await lead.client.make_directory(path, parents=False)
    except Exception as exc:
        raise ftp_error(exc, lead.address, step="write", path=path) from exc


async def rename(lead: FtpControl, path: str, new_name: str) -> None:
    new = str(PurePosixPath(path).parent / new_name)
    if await _exists(lead, path) is None:
        raise NotFound(f"There is no {path} on {lead.address.where} any more; refresh the folder.")
    if await _exists(lead, new) is not None:
        raise BadRequest(f"There is already something named {new} on {lead.address.where}; Ferry does not replace "
                         "it. Pick another name, or delete that one first.")
    try:
        await lead.client.rename(path, new)
    except Exception as exc:
        raise ftp_error(exc, lead.address, step="write", path=path) from exc


async def remove(lead: FtpControl, path: str) -> int:
    """Delete ``path`` and, for a folder, everything in it; returns how many entries went."""
    if path.strip("/") == "":
        raise BadRequest("Ferry does not delete the login folder or a server's root folder.")
    entry = await _exists(lead, path)
    if entry is None:
        raise NotFound(f"There is no {path} on {lead.address.where} any more; refresh the folder.")
    return await _remove(lead, path, entry.kind == "dir")


async def _remove(lead: FtpControl, path: str, is_dir: bool) -> int:
    gone = 0
    try:
        if not is_dir:
            await lead.client.remove_file(path)
            return 1
        for child in await lead.listing(path):
            if child.name not in (".", ".."):
                gone += await _remove(lead, str(PurePosixPath(path) / child.name), child.kind == "dir")
        await lead.client.remove_directory(path)
    except NotFound:
        raise
    except Exception as exc:
        raise ftp_error(exc, lead.address, step="write", path=path) from exc
    return gone + 1
