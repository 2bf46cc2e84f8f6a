"""A list job over FTP: the files a catalogue names (an accession's runs, ENA's ``ftp://`` route), one job.

The same as a folder (``folder.py``) without listing one: small files over a few logged-in connections, large
ones with parallel ranges and resume, each checked against the catalogue's checksum and size; a file that
fails is named and the others go on (``backends/streams/lists.py``).
"""

from __future__ import annotations

from pathlib import Path

from ..core.base import Result, Sink, TransferRequest
from ..streams.folder import RemoteFile
from ..streams.lists import ListedChecks, check_listed, fetch_listed, large_options, large_streams
from .address import FtpAddress
from .control import FtpControl
from .folder import LARGE_FROM, SMALL_AT_ONCE, FtpFolder


class FtpList(ListedChecks, FtpFolder):
    def __init__(self, top: FtpAddress, request: TransferRequest, sink: Sink, connect, lead: FtpControl) -> None:
        super().__init__(top, request, sink, connect, lead)
        self.listed = {f.name: f for f in request.options.files}
        self.large_streams = large_streams(request, LARGE_FROM)

    async def run(self) -> Result:
        try:
            files = [RemoteFile(f.name, f.size, None, FtpAddress.parse(f.address).path)
                     for f in self.request.options.files]
            self.paths = {f.rel: f.address for f in files}
            return await fetch_listed(self.request, self.sink, small=self._small_at, large=self._large_at,
                                      large_from=LARGE_FROM, limiter=self.limiter, small_cap=SMALL_AT_ONCE)
        finally:
            await self.pool.close()

    async def _small_at(self, file: RemoteFile, path: Path, sink: Sink):
        """``fetch_listed`` names files by their URL; the FTP fetches take the server's path."""
        return await self._small(RemoteFile(file.rel, file.size, None, self.paths[file.rel]), path, sink)

    async def _large_at(self, file: RemoteFile, path: Path, sink: Sink):
        return await self._large(RemoteFile(file.rel, file.size, None, self.paths[file.rel]), path, sink)

    def _large_options(self, file: RemoteFile):
        return large_options(self.request, self.listed[file.rel], self.large_streams)

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int,
                     control: FtpControl) -> tuple[bool, str]:
        return check_listed(self.listed[file.rel], digests, written)
