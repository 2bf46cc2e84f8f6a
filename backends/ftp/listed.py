"""A list job over FTP: the files a catalogue names (an accession's runs, ENA's ``ftp://`` route), one job.

The same as a folder (``folder.py``) without listing one: small files over a few logged-in connections, large
ones with parallel ranges and resume, each checked against the catalogue's checksum and size; a file that
fails is named and the others go on (``backends/streams/lists.py``).
"""

from __future__ import annotations

from ..core.base import ListedFile, Result
from ..streams.folder import RemoteFile
from ..streams.lists import ListedChecks, check_listed
from .address import FtpAddress
from .control import FtpControl
from .folder import LARGE_FROM, SMALL_AT_ONCE, FtpFolder


class FtpList(ListedChecks, FtpFolder):
    small_cap = SMALL_AT_ONCE  # FTP servers often allow few connections per client (vsftpd's max_per_ip)

    async def run(self) -> Result:
        try:
            return await self.fetch_listed(LARGE_FROM)
        finally:
            await self.pool.close()

    def _address(self, file: ListedFile) -> str:
        """The folder fetches ask the server for a path, not a URL."""
        return FtpAddress.parse(file.address).path

    async def _check(self, file: RemoteFile, digests: dict[str, str], written: int,
                     control: FtpControl) -> tuple[bool, str]:
        return check_listed(self.listed[file.rel], digests, written)
