"""A list job over HTTPS: the files a catalogue names (an accession's runs), one job, one session.

The small files come with one GET each, many at once over the session's reused connections (a study of 1,000
small runs is not 1,000 cold starts); the large ones with the parallel ranged download of a single file, a
few at once, each resumable. Every file is checked against the checksum and size the catalogue published;
one that fails is named and the others go on (``backends/streams/lists.py``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import aiohttp

from ..core.base import Result, Sink, TransferRequest
from ..streams.folder import FileDone, RemoteFile
from ..streams.lists import ListedChecks, check_listed
from .folder import LARGE_FROM, FolderDownload


class ListDownload(ListedChecks, FolderDownload):
    """``fresh``: opens a new session. A large file gets its own: a warm connection keeps the congestion window
    the last file's losses left it, where a fresh one starts a new slow start (four 64–192 MiB files at once
    came at ~670 Mbit/s on shared connections and ~790 on fresh ones, 50 ms / 1e-3, docs/benchmarks.md)."""

    def __init__(self, session: aiohttp.ClientSession, request: TransferRequest, sink: Sink, fresh=None) -> None:
        super().__init__(session, None, request, sink)
        self.fresh = fresh

    async def run(self) -> Result:
        return await self.fetch_listed(LARGE_FROM)

    async def _large(self, file: RemoteFile, path: Path, sink: Sink) -> FileDone:
        if self.fresh is None:
            return await super()._large(file, path, sink)
        from .download import Download

        async with self.fresh() as session:
            result = await Download(session, self._large_request(file, path), sink).run()
        return FileDone(result.sha256, result.verified, self._said(result), result.bytes_fetched, result.streams)

    def _large_request(self, file: RemoteFile, path: Path) -> TransferRequest:
        return replace(self.request, source=file.address, dest=str(path), options=self._large_options(file))

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int) -> tuple[bool, str]:
        return check_listed(self.listed[file.rel], digests, written)
