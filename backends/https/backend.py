"""Ranged parallel HTTP(S) downloads (aiohttp), paraFetch's idea done properly.

paraFetch splits a file into N static parts and, on a stall, drops everything and
sleeps 30 s; aria2 caps a server at 16 connections and spends three round trips
learning the size before its other connections start. Here: a speculative start
(``RangedFetch``), guided leases plus work stealing, up to 64 streams chosen by
measurement (``StreamTuner``), resume from a sidecar that is trusted only while
the server's size and validators match, a SHA-256 computed while the file
arrives, and verification against ``--checksum`` or a ``FILE.sha256``/``FILE.md5``
published next to the file.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import replace
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
from ..core.errors import BadRequest, LocalError
from ..core.options import read_options
from ..core.urls import redact
from ..destination import PartFile, check_destination
from ..host.netprobe import begin_handshake, sweep_down
from .options import HttpsOptions

#: a file smaller than this ends a preflight probe before TCP has left slow start
MIN_PROBE_BYTES = 64 * 1024 * 1024

# aiohttp and the working modules are imported inside the methods that use them, so a CLI
# run for another protocol does not pay ~0.2 s importing them


def _import_aiohttp() -> None:
    """aiohttp first, its import-time TLS contexts over the lazily read system store (``trust.py``)."""
    from .trust import import_aiohttp

    import_aiohttp()


@asynccontextmanager
async def _session(url: str, options: TransferOptions):
    """(the URL without its login, a session that sends the login to that URL's host on every request)."""
    from .login import Login, split_login
    from .session import HttpTimeouts, open_session

    url, login = split_login(url)
    settings = read_options(HttpsOptions, options.backend_options)
    timeouts = HttpTimeouts(stall=settings.stall_seconds)
    proxy = settings.proxy
    if login or not settings.share_connections:  # a login stays in its job's own session
        async with open_session(options.ca_file, options.insecure, timeouts,
                                login=Login(url, *login) if login else None, proxy=proxy,
                                allow_downgrade=settings.allow_downgrade) as session:
            yield url, session
        return
    from .pool import pool_here

    key = (options.ca_file, bool(options.insecure), settings.stall_seconds, proxy, settings.allow_downgrade)
    async with pool_here().borrow(key, lambda: open_session(options.ca_file, options.insecure, timeouts,
                                                            proxy=proxy, allow_downgrade=settings.allow_downgrade)
                                  ) as session:
        yield url, session


class HttpsBackend:
    name = "https"
    schemes = ("https", "http")
    caps = Capabilities(streams=True, resume=True, download=True, folders=True, checksums=("sha256", "md5"))
    options_type = HttpsOptions

    def available(self) -> Availability:
        return Availability(True)

    async def aclose(self) -> None:
        """The sessions this loop's jobs shared (``pool.py``) close with the engine."""
        from .pool import close_here

        await close_here()

    def check(self, request: TransferRequest) -> None:
        from .address import validate_url

        host, port = validate_url(request.source)
        if "://" in request.dest:
            raise BadRequest("HTTPS downloads go to a local file; copying from a web server straight to another "
                             "server is not supported. Copy to here first.")
        if not Path(request.dest).is_dir():  # a folder there: the server says whether the URL is one too
            # DEST named after the URL: the server may name the file otherwise, and that name is checked once known
            check_destination(Path(request.dest), request.options.overwrite or request.options.name_from_source)
        if request.options.streams == "auto":
            begin_handshake(host, port)  # its round trip sets the first stream count; it crosses the path
            # while the transfer imports aiohttp

    def discard(self, request: TransferRequest) -> None:
        """Remove what a cancelled download left behind."""
        PartFile(request.dest).discard()

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        _import_aiohttp()
        from .address import validate_url
        from .remote import head

        validate_url(url)
        async with _session(url, options) as (url, session):
            info, _ = await head(session, url)
        return info

    async def listdir(self, url: str, options: TransferOptions,
                      on_entries: EntriesSink | None = None) -> list[FolderEntry]:
        """A web folder's listing (nginx, Apache, lighttpd autoindex), for the window's read-only pane."""
        _import_aiohttp()
        from .address import validate_url
        from .browse import list_folder

        validate_url(url)
        async with _session(url, options) as (url, session):
            return await list_folder(session, url, on_entries)

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        _import_aiohttp()
        from ..core.errors import WebPage
        from .download import Download
        from .folder import FolderDownload
        from .index import fetch_listing

        self.check(request)
        web_page = read_options(HttpsOptions, request.options.backend_options).web_page
        async with _session(request.source, request.options) as (url, session):
            request = replace(request, source=url)
            folder_like = url.endswith("/") or Path(request.dest).is_dir()
            listing = await fetch_listing(session, url) if folder_like and not web_page else None
            if listing is not None:
                return await FolderDownload(session, listing, request, sink).run()
            named, renamed = await self._served_name(session, request) if request.options.name_from_source \
                else (None, None)
            if renamed:
                sink.note(renamed)
            if named:
                request = replace(request, dest=named)
            check_destination(Path(request.dest), True)  # a folder where the file should go: said in words
            try:
                result = await Download(session, request, sink).run()
            except WebPage as exc:  # a page where a file was expected: a directory listing there is a folder
                listing = await fetch_listing(session, exc.url) if exc.url else None
                if listing is None:
                    raise
                PartFile(request.dest).discard()
                return await FolderDownload(session, listing, request, sink).run()
        result.dest = named
        return result

    def warm(self, address: str, options: TransferOptions, connections: int) -> None:
        """Connections to ``address``'s host for the lean path's lanes (``warm.py``), opened on threads."""
        from .options import CONNECT_SECONDS
        from .warm import warm

        settings = read_options(HttpsOptions, options.backend_options)
        warm(address, options.ca_file, bool(options.insecure), settings.proxy, options.limit_rate is not None,
             connections, settings.stall_seconds, CONNECT_SECONDS)

    def ask_ahead(self, address: str, options: TransferOptions, size: int) -> bool:
        """A small file asked for on a connection opened ahead (``warm.py``), for the lane that will fetch it."""
        from .warm import ask_ahead

        return ask_ahead(address, options.ca_file, size)

    async def fetch_list(self, request: TransferRequest, sink: Sink) -> Result:
        """The files ``request.options.files`` names into the folder ``request.dest``, as one job (``listed.py``:
        small files by the lean path, aiohttp imported and its sessions opened only for a file that needs it)."""
        from .address import validate_url
        from .listed import ListDownload

        files = request.options.files
        for f in files:
            validate_url(f.address)
        if "://" in request.dest:
            raise BadRequest("A list of files goes into a local folder. Give a folder as the destination.")
        options = request.options
        settings = read_options(HttpsOptions, options.backend_options)

        @asynccontextmanager
        async def shared():
            _import_aiohttp()
            async with _session(files[0].address, options) as (_, session):
                yield session

        def fresh():
            _import_aiohttp()
            from .session import HttpTimeouts, open_session

            return open_session(options.ca_file, options.insecure, HttpTimeouts(stall=settings.stall_seconds),
                                proxy=settings.proxy, allow_downgrade=settings.allow_downgrade)

        return await ListDownload(request, sink, shared, fresh).run()

    async def _served_name(self, session, request: TransferRequest) -> tuple[str | None, str | None]:
        """DEST was a folder: the name the server gives the file (``Content-Disposition``), else the last part
        of the address its redirects end at, made safe for every OS (``destination.names``); None when that is
        the name the URL already gave. Second: a sentence when the server's name could not be kept."""
        from ..core.urls import remote_name
        from ..destination.names import portable_name, shown
        from .remote import head

        info, _ = await head(session, request.source)
        dest = Path(request.dest)
        given = info.name or remote_name(info.url) or dest.name
        last = given.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        name, why = portable_name(last)
        if last != given:
            why = "; ".join(filter(None, ["a path, of which only the last part is kept", why]))
        renamed = (f"The server names the file {shown(given)!r}, which Ferry saved as {name!r} ({why})." if why
                   else None)
        chosen = dest.with_name(name)
        if chosen.exists() and not request.options.overwrite:
            raise LocalError(f"{chosen} already exists (the server names the file {chosen.name}). Remove it, pass "
                             f"--overwrite, or name the file to write: labferry copy URL {chosen.parent}/NEW-NAME.")
        check_destination(chosen, request.options.overwrite)
        return (str(chosen) if chosen != dest else None), renamed

    async def probe(self, url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult:
        """``streams`` streams reading the file for ``seconds``, data discarded (one step of a sweep)."""
        return (await self.sweep(url, [streams], seconds, options))[0]

    async def sweep(self, url: str, counts: list[int], seconds: float, options: TransferOptions,
                    on_level=None) -> list[ProbeResult]:
        """The preflight's sweep, from the most streams down (``netprobe.sweep_down``), data discarded.

        A server without ranges gets one plain GET: the result then has one stream, whatever was asked.
        """
        _import_aiohttp()
        from .address import validate_url
        from .probe import RangeStreams
        from .remote import head

        validate_url(url)
        async with _session(url, options) as (url, session):
            info, latency = await head(session, url)
            if info.size is not None and info.size < MIN_PROBE_BYTES:
                raise BadRequest(f"{redact(url)} is only {info.size // 1024} KiB: too small to measure a path "
                                 "with. Name a file of 1 GB or more.")
            rtt_ms = latency / 3 * 1000  # a HEAD on a new TLS connection: about three round trips
            if not info.size or not info.accepts_ranges:
                from .whole import probe_whole

                moved, spent = await probe_whole(session, info.url, seconds)
                return [ProbeResult(1, moved, spent, rtt_ms)]

            return await sweep_down(RangeStreams(session, info.url, info.size), counts, seconds, rtt_ms, on_level)
