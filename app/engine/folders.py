"""Remote folders outside any job: listing one for a pane, and the window's folder actions.

These run on the engine's loop like a job's work (the window never touches a socket), but they are no jobs:
nothing is queued, retried or kept in history. A backend offers them through the ``Lister`` and
``FolderEditor`` abilities; a site whose backend has neither is refused in one sentence.
"""

from __future__ import annotations

from backends.core.abilities import EntriesSink, FolderEditor, FolderEntry, FolderLocator, Lister
from backends.core.base import TransferOptions
from backends.core.errors import BadRequest, TransferError
from backends.core.registry import Registry

ACTIONS = ("mkdir", "rename", "delete")


async def list_folder(registry: Registry, url: str, options: TransferOptions,
                      on_entries: EntriesSink | None = None, backend_name: str | None = None) -> list[FolderEntry]:
    """``backend_name``: the backend a site names for its scheme (GridFTP for an ftp:// GridFTP server)."""
    backend = registry.for_url(url, prefer=backend_name)
    if not isinstance(backend, Lister):
        raise TransferError(f"{backend.name} sites cannot be browsed; type the path instead.")
    return await backend.listdir(url, options, on_entries)


async def change_folder(registry: Registry, action: str, url: str, options: TransferOptions, *args,
                        backend_name: str | None = None):
    """``mkdir`` (url: the new folder), ``rename`` (url, new name) or ``delete`` (url): what the backend
    returns (``delete``: how many entries went)."""
    backend = registry.for_url(url, prefer=backend_name)
    if not isinstance(backend, FolderEditor):
        raise BadRequest(f"{backend.name} folders are read-only in Ferry: it can list them and copy from them, "
                         "but not change them.")
    if action == "mkdir":
        return await backend.make_folder(url, options)
    if action == "rename":
        return await backend.rename(url, args[0], options)
    if action == "delete":
        return await backend.remove(url, options)
    raise BadRequest(f"'{action}' is not a folder action; use one of {', '.join(ACTIONS)}.")


async def locate_folder(registry: Registry, url: str, options: TransferOptions, backend_name: str | None = None) -> str:
    """The absolute path on the server of the folder ``url`` names (a pane going up from the login folder)."""
    backend = registry.for_url(url, prefer=backend_name)
    if not isinstance(backend, FolderLocator):
        raise BadRequest(f"A {backend.name} server cannot say where its login folder is; type the path above it "
                         "in the path bar instead.")
    return await backend.locate(url, options)
