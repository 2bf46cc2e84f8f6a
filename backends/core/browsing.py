"""The window's folder abilities (``Lister``, ``FolderEditor``, ``FolderLocator``) in terms of one hook, for a
backend whose ``browse`` module has ``list_folder``, ``make_folder``, ``rename``, ``remove`` and ``locate``: it
implements ``_browse(url, options, action, *args)``, which reaches the server its own way and runs that module's
function named ``action`` on the path of ``url``."""

from __future__ import annotations

from .abilities import EntriesSink, FolderEntry
from .base import TransferOptions
from .urls import entry_name


class BrowsesFolders:
    async def _browse(self, url: str, options: TransferOptions, action: str, *args):
        raise NotImplementedError

    async def listdir(self, url: str, options: TransferOptions,
                      on_entries: EntriesSink | None = None) -> list[FolderEntry]:
        """A remote folder's entries (the window's panes), told in batches as they arrive."""
        return await self._browse(url, options, "list_folder", on_entries)

    async def make_folder(self, url: str, options: TransferOptions) -> None:
        await self._browse(url, options, "make_folder")

    async def rename(self, url: str, new_name: str, options: TransferOptions) -> None:
        await self._browse(url, options, "rename", entry_name(new_name))

    async def remove(self, url: str, options: TransferOptions) -> int:
        return await self._browse(url, options, "remove")

    async def locate(self, url: str, options: TransferOptions) -> str:
        """The absolute path on the server of the folder ``url`` names (a pane going up from the login folder)."""
        return await self._browse(url, options, "locate")
