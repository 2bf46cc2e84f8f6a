"""Plain FTP and explicit FTPS (``ftp://``, ``ftps://``), natively on the engine's asyncio loop (aioftp).

The public archives (ENA, NCBI, Ensembl, UCSC) and many sequencing cores serve plain FTP; a laptop has no
Globus tools, and a stock vsftpd or ProFTPD speaks none of GridFTP's extensions. So Ferry speaks FTP itself:
only the commands a server announced (``control.py``), one big file over several connections with
``REST``+``RETR`` per range (``download.py``), anonymous logins by default, a user's password from the
address or a site profile's keyring secret. ``gsiftp://`` and ``sshftp://`` stay with the GridFTP backend.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from ..core.base import (
    Availability,
    Capabilities,
    RemoteInfo,
    Result,
    Sink,
    TransferOptions,
    TransferRequest,
)
from ..core.browsing import BrowsesFolders
from ..core.errors import BadRequest, LocalError
from ..core.made import packed_name
from ..core.options import read_options
from ..core.registry import scheme_of
from ..destination import PartFile, check_destination
from .address import SCHEMES, FtpAddress
from .options import FtpOptions


@asynccontextmanager
async def _opened(connect):
    """A lead control connection (sizes, dates, listings, checksums), closed however the work ends."""
    lead = await connect()
    try:
        yield lead
    finally:
        await lead.close()


class FtpBackend(BrowsesFolders):
    name = "ftp"
    schemes = SCHEMES
    caps = Capabilities(streams=True, resume=True, download=True, upload=True, folders=True,
                        checksums=("sha256", "md5"), made=True)
    options_type = FtpOptions

    def available(self) -> Availability:
        return Availability(True)

    def check(self, request: TransferRequest) -> None:
        if scheme_of(request.source) not in SCHEMES:  # an upload
            if "://" in request.source:
                raise BadRequest("Copying between two servers over plain FTP is not supported; copy to here first.")
            FtpAddress.parse(request.dest)
            if not Path(request.source).exists():
                raise LocalError(f"{request.source} does not exist. Check the path of the file or folder to send.")
            return
        FtpAddress.parse(request.source)
        if "://" in request.dest:
            raise BadRequest("Copying between two servers over plain FTP is not supported; copy to here first.")
        if not Path(request.dest).is_dir():  # a folder there: the server says whether the source is one too
            check_destination(Path(request.dest), request.options.overwrite)

    def discard(self, request: TransferRequest) -> None:
        """A cancelled download loses its ``.part`` here; a cancelled file upload its ``NAME.part`` on the server
        and its resume record (a folder's files arrive whole under their names: what arrived stays)."""
        if scheme_of(request.source) in SCHEMES:
            PartFile(request.dest).discard()
            return
        local = Path(request.source)
        if request.options.pack:
            local = Path(packed_name(request.source))  # the archive's part goes, as a file upload's does
        elif local.is_dir():
            return
        import asyncio

        from ..core.claims import LOCK_SUFFIX, ours_to_remove
        from .claim import owner_of, release
        from .upload import UploadRecord, part_of, target_path

        address = FtpAddress.parse(request.dest)

        async def remove() -> None:
            async with _opened(self._connector(address, request.options)) as lead:
                remote, _ = await target_path(lead, address, local)
                record = UploadRecord(request.state_folder("ftp-uploads"), f"{address.where}|{address.user}|{remote}") \
                    if request.state_dir else None
                found = await owner_of(lead, remote + LOCK_SUFFIX)
                if not ours_to_remove(found and found[0], record.token if record else None):
                    return  # another upload's part and lock: not this job's to remove
                try:
                    await lead.client.remove_file(part_of(remote))
                finally:
                    await release(lead, remote, found[1] if found else None)
                if record is not None:
                    record.drop()
        try:
            asyncio.run(remove())
        except Exception:
            return  # the server cannot be reached now, or there is no part: a later upload replaces it

    def _connector(self, address: FtpAddress, options: TransferOptions):
        from .control import FtpControl

        settings = read_options(FtpOptions, options.backend_options)

        async def connect() -> FtpControl:
            return await FtpControl(address, ca_file=options.ca_file, insecure=options.insecure,
                                    stall_seconds=settings.stall_seconds,
                                    connects_at_once=settings.max_handshakes).open()
        return connect

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        address = FtpAddress.parse(url)
        async with _opened(self._connector(address, options)) as lead:
            entry = await lead.entry(address.path)
        return RemoteInfo(url=address.shown, size=entry.size, last_modified=entry.modified,
                          accepts_ranges=lead.can_resume, is_dir=entry.kind == "dir")

    async def _browse(self, url: str, options: TransferOptions, action: str, *args):
        """``await browse.<action>(lead, path, *args)`` on a lead control connection opened for it (``MLSD`` or
        ``LIST`` as announced, ``MKD``, ``RNFR``/``RNTO``, ``DELE``, ``RMD``)."""
        from . import browse

        address = FtpAddress.parse(url)
        async with _opened(self._connector(address, options)) as lead:
            return await getattr(browse, action)(lead, address.path, *args)

    async def fetch_list(self, request: TransferRequest, sink: Sink) -> Result:
        """The files ``request.options.files`` names (all on one server) into the folder ``request.dest``, as
        one job over one lead connection and a few pooled ones (``listed.py``)."""
        from .listed import FtpList

        addresses = [FtpAddress.parse(f.address) for f in request.options.files]
        if len({(a.host, a.port, a.scheme) for a in addresses}) > 1:
            raise BadRequest("The listed files are on several FTP servers; give one list per server.")
        if "://" in request.dest:
            raise BadRequest("A list of files goes into a local folder. Give a folder as the destination.")
        connect = self._connector(addresses[0], request.options)
        async with _opened(connect) as lead:
            return await FtpList(addresses[0], request, sink, connect, lead).run()

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        from .download import download_file

        self.check(request)
        if scheme_of(request.source) not in SCHEMES:
            from .upload import upload

            connect = self._connector(FtpAddress.parse(request.dest), request.options)
            async with _opened(connect) as lead:
                return await upload(request, sink, connect, lead)
        address = FtpAddress.parse(request.source)
        connect = self._connector(address, request.options)
        async with _opened(connect) as lead:
            entry = await lead.entry(address.path)
            if entry.kind == "dir":
                from .folder import FtpFolder

                return await FtpFolder(address, request, sink, connect, lead).run()
            check_destination(Path(request.dest), request.options.overwrite)
            sink.stage("transferring")
            return await download_file(address, entry, request, sink, connect, lead)
