"""Pack and Unpack as queue jobs (the window's Files tab and New transfer): ``pack.py`` and ``download.py`` run in a
thread of the engine's loop, their progress told to the job like any transfer's, a stop asked between batches.

The source and destination are on this computer. A pack into a folder is named after the source (``run42`` →
``run42.tar``); an unpack "into" a folder that the front door named after the archive unpacks into the folder.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from ..core.base import Availability, Capabilities, RemoteInfo, Result, Sink, TransferOptions, TransferRequest
from ..core.errors import BadRequest, LocalError
from ..core.options import read_options
from .address import is_archive, named_archive, wants_zstd
from .faults import Stopped
from .options import ArchiveOptions


class ArchiveBackend:
    name = "archive"
    schemes: tuple[str, ...] = ()
    caps = Capabilities(resume=True, folders=True, checksums=("sha256",))
    options_type = ArchiveOptions

    def available(self) -> Availability:
        return Availability(True)

    def check(self, request: TransferRequest) -> None:
        if "://" in request.source or "://" in request.dest:
            raise BadRequest("Pack and Unpack work on this computer's files; copy the archive here first.")
        extra = read_options(ArchiveOptions, request.options.backend_options)
        if not Path(request.source).exists():
            raise BadRequest(f"{request.source} does not exist. Check the path.")
        if extra.action == "unpack" and not is_archive(request.source):
            raise BadRequest(f"{Path(request.source).name} is not a .tar or .tar.zst archive; choose one to unpack.")

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        raise BadRequest("An archive is read where it lies; there is nothing to ask a server.")

    def targets(self, request: TransferRequest) -> tuple[str, Path, str | None]:
        """(action, the archive or the folder it goes to, zstd or None)."""
        extra = read_options(ArchiveOptions, request.options.backend_options)
        dest = Path(request.dest)
        if extra.action == "unpack":
            return "unpack", dest.parent if request.options.name_from_source else dest, None
        if request.options.name_from_source:
            dest = named_archive(dest, extra.compress)
        return "pack", dest, "zstd" if wants_zstd(dest.name, extra.compress) else None

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        action, target, compress = self.targets(request)
        extra = read_options(ArchiveOptions, request.options.backend_options)
        loop = asyncio.get_running_loop()
        halt = threading.Event()

        def progress(done: int, total: int) -> None:
            if halt.is_set():
                raise Stopped()
            loop.call_soon_threadsafe(sink.progress, done, total, extra.workers or 1)

        began = time.monotonic()
        work = asyncio.ensure_future(asyncio.to_thread(self._run, action, request, target, compress, extra, progress))
        try:
            done = await asyncio.shield(work)
            for note in done.notes:  # said on the job as a transfer's notes are ("went on from …", a FIFO left out)
                sink.note(note)
            return self._result(done, action, target, time.monotonic() - began)
        except asyncio.CancelledError:
            halt.set()  # paused or cancelled: the thread stops at its next batch; a pack keeps its part file
            try:
                await asyncio.wait_for(asyncio.shield(work), 60)
            except (Stopped, Exception):
                pass
            raise

    @staticmethod
    def _run(action: str, request: TransferRequest, target: Path, compress, extra: ArchiveOptions, progress):
        if action == "pack":
            from .pack import pack

            return pack([request.source], target, workers_asked=extra.workers, compress=compress,
                        overwrite=bool(request.options.overwrite), progress=progress)
        from .download import unpack

        done = unpack(Path(request.source), target, workers_asked=extra.workers, progress=progress)
        if done.failed:
            from ..core.errors import Corrupt

            raise Corrupt(f"{len(done.failed)} members of {Path(request.source).name} could not be restored "
                          f"({'; '.join(done.failed[:3])}); {done.restored} were. Fetch the archive again.")
        return done

    @staticmethod
    def _result(done, action: str, target: Path, seconds: float) -> Result:
        if action == "pack":
            return Result(done.data_bytes, seconds, done.workers, None, False,
                          f"packed {done.files:,} files; each member's SHA-256 is in the archive's index",
                          notes=list(done.notes), dest=str(target))
        method = ("each member's SHA-256 matched the archive's index" if done.indexed
                  else "sizes checked (the archive has no index)")
        return Result(done.bytes, seconds, done.workers, None, done.indexed, method, notes=list(done.notes),
                      dest=str(target / done.top) if done.top else str(target))

    def discard(self, request: TransferRequest) -> None:
        """A cancelled pack loses its part file and record; a cancelled unpack keeps what it restored whole."""
        action, target, _ = self.targets(request)
        if action != "pack":
            return
        for leftover in (Path(f"{target}.part"), Path(f"{target}.part.ferry")):
            try:
                leftover.unlink(missing_ok=True)
            except OSError as exc:
                raise LocalError(f"Could not remove {leftover}: {exc.strerror}.") from None
