"""GridFTP: ``gsiftp://``, ``ftp://`` and ``sshftp://`` by driving ``globus-url-copy``.

Data centres and DTNs already run GridFTP servers; the fastest client for them is the
Globus toolkit's own, so Ferry drives it (argv lists, never a shell) and adds what a
careful expert adds by hand: streams and TCP buffers chosen for the path
(``tuning``), staging names so nothing half-written appears under a final name, a
server-side sha256 that runs while the data moves, restart on faults (``-rst``),
progress parsed from ``-vb`` into the engine's events, and third-party transfers where
two servers send to each other. See docs/backends/gridftp.md.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from ..core.abilities import EntriesSink, FolderEntry
from ..core.base import (
    Availability,
    Capabilities,
    ProbeResult,
    RemoteInfo,
    Result,
    Sink,
    TransferOptions,
    TransferRequest,
)
from ..core.browsing import BrowsesFolders
from ..core.errors import BadRequest, LocalError, NotFound, TransferError
from ..core.options import read_options
from ..core.registry import scheme_of
from ..core.words import human_size
from ..destination import STATE_SUFFIX
from ..host.netprobe import connect_time
from . import checks, download, folder, guc, probing, transport, upload
from .address import SCHEMES, GridUrl, trailing_slash
from .claim import token_for
from .control import Control, Entry, open_control
from .copy import INSTALL_HINT, tool
from .options import GridftpOptions
from .tuning import choose_buffer, needs_rtt
from .tuning import plan as make_plan


def _is_remote(location: str) -> bool:
    return scheme_of(location) in SCHEMES


def _uncapped_note(options: TransferOptions) -> str | None:
    """A rate cap (``--limit-rate``, the GUI's bandwidth cap) that this backend cannot keep, said rather than
    ignored: globus-url-copy has no rate option, and its data never passes through Ferry."""
    if not options.rate_cap:
        return None
    return (f"GridFTP transfers cannot be capped (globus-url-copy has no rate option), so this one ignores the "
            f"{human_size(options.rate_cap)}/s limit. To leave room on a shared link, use --streams 1 or an "
            "sftp:// or https:// address, which keep the cap.")


class GridftpBackend(BrowsesFolders):
    name = "gridftp"
    #: ftp:// belongs to the native FTP backend; a GridFTP server reached over ftp:// uses this backend when it is
    #: named (``--backend gridftp``), for its parallel MODE E, server checksums and third-party copies
    schemes = ("gsiftp", "sshftp")
    also_schemes = ("ftp",)
    caps = Capabilities(streams=True, resume=True, download=True, upload=True, folders=True, third_party=True,
                        checksums=("sha256",), made=True)
    options_type = GridftpOptions

    def available(self) -> Availability:
        if shutil.which(guc.TOOL):
            return Availability(True)
        return Availability(False, f"GridFTP needs {guc.TOOL}, which is not installed. {INSTALL_HINT}")

    def check(self, request: TransferRequest) -> None:
        tool()
        source_remote, dest_remote = _is_remote(request.source), _is_remote(request.dest)
        if not (source_remote or dest_remote):
            raise BadRequest("One side of a GridFTP transfer must be a gsiftp://, ftp:// or sshftp:// address.")
        if source_remote:
            GridUrl.parse(request.source)
        if dest_remote:
            GridUrl.parse(request.dest)
        elif "://" in request.dest:
            raise BadRequest("GridFTP can copy to a local path or to another GridFTP server, not to "
                             f"{scheme_of(request.dest)}://; copy to here first.")
        if request.options.pack and (not dest_remote or GridUrl.parse(request.dest).scheme != "ftp"):
            raise BadRequest("--pack sends to a GridFTP server on its ftp:// address, where Ferry renames the "
                             "archive once the server's sha256 matched; over gsiftp:// and sshftp:// pack with "
                             "labferry pack and copy the archive.")
        if read_options(GridftpOptions, request.options.backend_options).transport == "udt":
            plain = [u for u, remote in ((request.source, source_remote), (request.dest, dest_remote))
                     if remote and GridUrl.parse(u).scheme != "gsiftp"]
            if plain:
                raise BadRequest(f"UDT works only on gsiftp:// addresses (globus-url-copy asks for it together with "
                                 f"GSI), not on {scheme_of(plain[0])}://. Use --transport tcp, or the server's "
                                 "gsiftp:// address.")
        if not source_remote:
            if "://" in request.source:
                raise BadRequest("GridFTP can send local files or copy between GridFTP servers only.")
            if not Path(request.source).exists():
                raise LocalError(f"{request.source} does not exist. Check the path of the file or folder to send.")
        elif not dest_remote and not Path(request.dest).parent.is_dir():
            raise LocalError(f"The destination folder {Path(request.dest).parent} does not exist. Create it first.")

    def discard(self, request: TransferRequest) -> None:
        """Remove what a cancelled job left: the local ``.part`` file or staging folder."""
        if _is_remote(request.source) and not _is_remote(request.dest):
            dest = Path(request.dest)
            part = dest.with_name(dest.name + ".part")
            dest.with_name(part.name + STATE_SUFFIX).unlink(missing_ok=True)  # a resumed download's record
            if part.is_dir():
                shutil.rmtree(part, ignore_errors=True)
            else:
                part.unlink(missing_ok=True)
        elif _is_remote(request.dest):
            self._discard_remote(request)

    def _discard_remote(self, request: TransferRequest) -> None:
        """A cancelled upload or server-to-server copy: its staging copy (``NAME.part``) on the server goes, with
        its lock, unless another upload holds them."""
        name = Path(request.source).name if not _is_remote(request.source) else GridUrl.parse(request.source).name
        try:
            remote = GridUrl.parse(request.dest)
            control = open_control(remote)
            if control is None:
                return  # gsiftp:// or sshftp://: no control connection of Ferry's own to delete with
            try:
                if trailing_slash(request.dest) or remote.named_folder:
                    remote = remote.child(name)
                else:
                    there = control.stat(remote.path)
                    if there is not None and there.is_dir:
                        remote = remote.child(name)
                from ..core.claims import LOCK_SUFFIX, ours_to_remove
                from .claim import owner_of, release

                owner = owner_of(control, remote.path + LOCK_SUFFIX)
                if not ours_to_remove(owner, token_for(request.state_dir, remote.text())):
                    return  # another upload's part and lock: not this job's to remove
                control.remove(remote.sibling(remote.name + ".part").path)
                release(control, remote.path)
            finally:
                control.close()
        except TransferError:
            return  # unreachable now: a later upload replaces the staging copy

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        remote = GridUrl.parse(url)
        control = await asyncio.to_thread(open_control, remote)
        if control is None:
            return RemoteInfo(url, None, is_dir=trailing_slash(url))
        try:
            entry = await asyncio.to_thread(control.stat, remote.path)
        finally:
            await asyncio.to_thread(control.close)
        if entry is None:
            raise NotFound(f"There is no {remote.path} on {remote.where}. Check the path.")
        return RemoteInfo(url, entry.size, last_modified=str(entry.mtime), accepts_ranges=True, is_dir=entry.is_dir)

    async def listdir(self, url: str, options: TransferOptions,
                      on_entries: EntriesSink | None = None) -> list[FolderEntry]:
        """One folder's entries (the window's panes): over the control connection on ftp://, else by the tool."""
        from .browse import list_with_tool

        if GridUrl.parse(url).scheme != "ftp":
            return await list_with_tool(url, on_entries)
        return await self._browse(url, options, "list_folder", on_entries)

    async def _browse(self, url: str, options: TransferOptions, action: str, *args):
        """``browse.<action>(control, path, *args)`` in a thread, on a control connection of its own (ftp://)."""
        from . import browse

        remote = GridUrl.parse(url)
        control = await asyncio.to_thread(open_control, remote)
        if control is None:
            raise BadRequest("Folders on a gsiftp:// or sshftp:// server can be listed but not changed from Ferry (it "
                             "does not speak GSI itself); change them with the server's own tools.")
        try:
            return await asyncio.to_thread(getattr(browse, action), control, remote.path, *args)
        finally:
            await asyncio.to_thread(control.close)

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        self.check(request)
        uncapped = _uncapped_note(request.options)
        if uncapped:
            sink.note(uncapped)
        result = await transport.run(request, sink, self._route)
        if uncapped:
            result.notes = [uncapped, *result.notes]
        return result

    async def _route(self, request: TransferRequest, sink: Sink) -> Result:
        """One run over the transport ``transport.run`` pinned in the request."""
        source_remote, dest_remote = _is_remote(request.source), _is_remote(request.dest)
        if source_remote and dest_remote:
            return await self._third_party(request, sink)
        if source_remote:
            return await self._download(request, sink)
        return await self._upload(request, sink)

    async def _source_entry(self, remote: GridUrl) -> tuple[Entry | None, list[Entry]]:
        """The source's entry and, for a folder, its whole tree (None and [] where Ferry cannot look)."""
        control = await asyncio.to_thread(open_control, remote)
        if control is None:
            return None, []
        try:
            entry = await asyncio.to_thread(control.stat, remote.path)
            if entry is None:
                raise NotFound(f"There is no file or folder {remote.path} on {remote.where}. Check the path.")
            listing = await asyncio.to_thread(control.walk, remote.path) if entry.is_dir else []
            return entry, listing
        finally:
            await asyncio.to_thread(control.close)

    async def _plan(self, remote: GridUrl, options: TransferOptions, size: int | None):
        rtt = await connect_time(remote.host, remote.port)
        return make_plan(options, rtt_s=rtt, size=size), rtt

    async def _download(self, request: TransferRequest, sink: Sink) -> Result:
        remote = GridUrl.parse(request.source)
        dest = Path(request.dest)
        rtt_probe = asyncio.ensure_future(connect_time(remote.host, remote.port))
        if _speaks_control(remote) and not trailing_slash(request.source):
            # most downloads are one file: start it while the control connection looks it up
            looked_up = asyncio.ensure_future(asyncio.to_thread(_lookup, remote))
            rtt = await _short_wait(rtt_probe) if needs_rtt(request.options) else None
            guessed = rtt is not None and not rtt_probe.done()
            plan = make_plan(request.options, rtt_s=rtt, size=None)
            try:
                result = await download.download(remote, looked_up, dest, plan, request.options, sink)
                measured = await rtt_probe
                if guessed and measured:
                    result.notes.append(f"Started before the round trip was known (over {SHORT_PATH_S * 1000:.0f} "
                                        f"ms; it was {measured * 1000:.0f} ms).")
                return _finish(result, plan, measured)
            except checks.IsFolder:
                pass
        entry, listing = await self._source_entry(remote)
        rtt = await rtt_probe
        if entry is not None and not entry.is_dir:
            raise BadRequest(f"{remote.path} on {remote.where} is a file; remove the '/' at the end of the address.")
        # gsiftp:// or sshftp:// (no entry): the size is unknown, and only the address says whether it is a folder
        size = sum(e.size for e in listing if not e.is_dir) if entry is not None else None
        plan = make_plan(request.options, rtt_s=rtt, size=size)
        if entry is None:
            result = await download.download_blind(remote, dest, plan, request.options, sink,
                                                is_folder=trailing_slash(request.source))
        else:
            result = await folder.download(remote, listing, dest, plan, request.options, sink)
        return _finish(result, plan, rtt)

    async def _destination(self, url: str, name: str, options: TransferOptions, is_dir: bool
                           ) -> tuple[GridUrl, Control | None, bool]:
        """Where on the server the copy goes, an open control connection (ftp://), and whether it exists."""
        remote = GridUrl.parse(url)
        control = await asyncio.to_thread(open_control, remote)
        if trailing_slash(url) or remote.named_folder:
            remote = remote.child(name)
        elif control is not None:
            there = await asyncio.to_thread(control.stat, remote.path)
            if there is not None and there.is_dir and not is_dir:
                remote = remote.child(name)
        exists = False
        if control is not None:
            there = await asyncio.to_thread(control.stat, remote.path)
            exists = there is not None
            if exists and there.is_dir != is_dir:
                kind = "folder" if there.is_dir else "file"
                raise BadRequest(f"{remote.path} on {remote.where} is a {kind}; choose another destination.")
            if exists and not is_dir and not options.overwrite:
                raise BadRequest(f"{remote.path} already exists on {remote.where}. Pass --overwrite to replace it, "
                                 "or choose another name.")
        return remote, control, exists

    async def _upload(self, request: TransferRequest, sink: Sink) -> Result:
        source = request.made or Path(request.source)  # ``--pack``: the folder as an archive made on demand
        is_dir = request.made is None and source.is_dir()
        remote, control, exists = await self._destination(request.dest, source.name, request.options, is_dir)
        try:
            size = None if is_dir else source.size if request.made else source.stat().st_size
            plan, rtt = await self._plan(remote, request.options, size)
            if is_dir:
                result = await folder.upload(source, remote, plan, request.options, sink, control, exists)
            else:
                result = await upload.upload(source, remote, plan, request.options, sink, control,
                                            token_for(request.state_dir, remote.text()))
        finally:
            if control is not None:
                await asyncio.to_thread(control.close)
        return _finish(result, plan, rtt)

    async def _third_party(self, request: TransferRequest, sink: Sink) -> Result:
        source = GridUrl.parse(request.source)
        entry, listing = await self._source_entry(source)
        is_dir = entry.is_dir if entry else trailing_slash(request.source)
        name = source.name or "copy"
        dest, control, exists = await self._destination(request.dest, name, request.options, is_dir)
        try:
            size = sum(e.size for e in listing if not e.is_dir) if is_dir else (entry.size if entry else None)
            plan, rtt = await self._plan(source, request.options, size)
            if is_dir:
                result = await folder.third_party(source, listing, dest, plan, request.options, sink, control,
                                                   exists)
            else:
                result = await upload.third_party(source, entry, dest, plan, request.options, sink, control)
        finally:
            if control is not None:
                await asyncio.to_thread(control.close)
        result.notes.insert(0, f"Third-party transfer: {source.where} sent straight to {dest.where}.")
        return _finish(result, plan, rtt)

    def buffer_advice(self, streams: int, rtt_s: float, bottleneck_bps: float) -> tuple[int | None, str]:
        """The ``-tcp-bs`` a preflight recommends for this path (None: leave it to autotuning), and why."""
        return choose_buffer(streams, rtt_s, bottleneck_bps=bottleneck_bps or None)

    async def probe(self, url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult:
        """Read ``url`` for ``seconds`` with ``streams`` parallel streams into /dev/null (``-t``)."""
        return await probing.probe(url, streams, seconds)

    def transports(self, url: str) -> tuple[str, ...]:
        """UDT, on gsiftp:// (the only scheme on which globus-url-copy asks for it)."""
        return ("udt",) if GridUrl.parse(url).scheme == "gsiftp" else ()

    async def probe_transport(self, url: str, transport: str, seconds: float,
                              options: TransferOptions) -> ProbeResult:
        if transport != "udt":
            raise BadRequest(f"GridFTP has no '{transport}' transport to measure (it has tcp and udt).")
        return await probing.probe(url, 1, seconds, udt=True)


#: a handshake slower than this means a long path: start without waiting for the rest of it
SHORT_PATH_S = 0.02
#: what such a path is taken for; the table gives it 32 streams, which measured within noise of the best
#: -p at both 50 ms/1e-4 (876 vs 885 Mbit/s) and 100 ms/1e-3 (763, as 48 and 64)
LONG_PATH_GUESS_S = 0.05


async def _short_wait(probe: asyncio.Future) -> float | None:
    """The round trip if the handshake is quick; else a long-path guess, without idling a full RTT."""
    try:
        return await asyncio.wait_for(asyncio.shield(probe), SHORT_PATH_S)
    except asyncio.TimeoutError:
        return LONG_PATH_GUESS_S


def _speaks_control(remote: GridUrl) -> bool:
    """Whether Ferry can use the control channel itself (ftp://; gsiftp/sshftp need GSI or SSH there)."""
    return remote.scheme == "ftp"


def _lookup(remote: GridUrl) -> Entry | None:
    """The entry at ``remote`` over a short-lived control connection (blocking)."""
    control = Control.connect(remote)
    try:
        return control.stat(remote.path)
    finally:
        control.close()


def _finish(result: Result, plan, rtt: float | None) -> Result:
    result.rtt_ms = rtt * 1000 if rtt else None
    result.notes.insert(0, f"GridFTP: {plan.why}")
    return result


__all__ = ["GridftpBackend", "TransferError"]
