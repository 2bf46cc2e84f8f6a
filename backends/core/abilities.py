"""What a backend may offer beside moving bytes: listing and changing folders, probing a path, seeding,
closing, warming connections, fetching a list as one job, telling file states and stream rates.

Each ability is a runtime-checkable Protocol, checked with ``isinstance`` where it is used, so this one file
shows all a backend may offer (``base.Backend`` is what every backend must).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .base import ProbeResult, Result, Sink, TransferOptions, TransferRequest


@dataclass(frozen=True)
class FolderEntry:
    """One entry of a listed remote folder, as the window's folder panes show it. What a server does not tell
    (an HTTP index's exact size, FTP permissions) is None, never guessed."""

    name: str
    is_dir: bool
    size: int | None = None
    mtime: float | None = None  # seconds since the epoch
    mode: int | None = None  # permission bits
    link: bool = False  # a symbolic link (``is_dir`` says what it leads to)


#: called with each batch of a listing as it arrives, from whichever thread the backend reads on
EntriesSink = Callable[[list[FolderEntry]], None]


@runtime_checkable
class Lister(Protocol):
    """Lists a remote folder (the window's folder panes and site browser). A long listing is told in batches
    through ``on_entries`` as it arrives, so a pane fills while a slow server is still answering; the return
    value is the whole listing either way."""

    async def listdir(self, url: str, options: TransferOptions,
                      on_entries: EntriesSink | None = None) -> list[FolderEntry]: ...


@runtime_checkable
class FolderEditor(Protocol):
    """Changes a remote folder from the window: make a folder, rename an entry in its folder, delete an entry
    (a folder with everything in it). Names travel as protocol arguments, never inside a shell command."""

    async def make_folder(self, url: str, options: TransferOptions) -> None: ...

    async def rename(self, url: str, new_name: str, options: TransferOptions) -> None: ...

    async def remove(self, url: str, options: TransferOptions) -> int:
        """Deletes the file or folder at ``url``; returns how many entries went (the folder counted)."""
        ...


@runtime_checkable
class FolderLocator(Protocol):
    """Says where a folder is: the absolute path on the server of the folder ``url`` names, the login folder
    resolved (SSH's realpath, FTP's PWD). A pane at the login folder goes up with it."""

    async def locate(self, url: str, options: TransferOptions) -> str: ...


@runtime_checkable
class PathProber(Protocol):
    """Reads from a server with N streams for a while, data discarded: one step of a preflight's sweep."""

    async def probe(self, url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult: ...


@runtime_checkable
class Sweeper(Protocol):
    """Runs a whole preflight sweep in one go, from the most streams down, dropping streams as it goes."""

    async def sweep(self, url: str, counts: list[int], seconds: float, options: TransferOptions,
                    on_level: Callable[[ProbeResult], None] | None = None) -> list[ProbeResult]: ...


@runtime_checkable
class TransportProber(Protocol):
    """Has data transports besides TCP (GridFTP's UDT): a preflight measures each beside the stream sweep."""

    def transports(self, url: str) -> tuple[str, ...]:
        """The other transports this backend could use to ``url`` (none: nothing more to measure)."""
        ...

    async def probe_transport(self, url: str, transport: str, seconds: float,
                              options: TransferOptions) -> ProbeResult: ...


@runtime_checkable
class BufferAdvisor(Protocol):
    """Chooses a TCP buffer per stream for a path (GridFTP's ``-tcp-bs``): (bytes or None, why in words)."""

    def buffer_advice(self, streams: int, rtt_s: float, bottleneck_bps: float) -> tuple[int | None, str]: ...


@runtime_checkable
class RouteClaimer(Protocol):
    """Claims a transfer whose source and destination carry no URL scheme (a local .torrent file)."""

    def claims(self, source: str, dest: str) -> bool: ...


@runtime_checkable
class Seeder(Protocol):
    """Serves data to others until stopped (a BitTorrent seed); the job's progress is what was sent."""

    async def seed(self, request: TransferRequest, sink: Sink) -> Result: ...


@runtime_checkable
class Closer(Protocol):
    """Keeps something alive between jobs of one event loop (HTTPS's warm connections) and lets it go when the
    engine stops: ``aclose`` runs on that loop."""

    async def aclose(self) -> None: ...


@runtime_checkable
class Warmer(Protocol):
    """Opens connections to a host ahead of a list job that will fetch from it, while the job's catalogue is
    still being asked (an accession's portal): their handshakes leave the critical path. Ones left unused close
    on their own; where the job would not use them (a proxy, checks off) none are opened."""

    def warm(self, address: str, options: TransferOptions, connections: int) -> None: ...

    def ask_ahead(self, address: str, options: TransferOptions, size: int) -> bool:
        """Ask for ``address`` (``size`` bytes) on a connection opened ahead, as the catalogue's answer arrives;
        False when nothing was sent (none ready, or not worth it)."""
        ...


@runtime_checkable
class ListFetcher(Protocol):
    """Fetches ``request.options.files`` into the folder ``request.dest`` as one job: many files at once over
    reused connections, large ones split, each checked against its published checksum. A file that fails does
    not stop the others; files already here and verified are not fetched again. Reports each file's state
    through a ``FileStatesSink`` when the sink is one."""

    async def fetch_list(self, request: TransferRequest, sink: Sink) -> Result: ...




@runtime_checkable
class FileStatesSink(Protocol):
    """A sink that also follows each file of a list job (the CLI's ``--json``, the window's files of a row)."""

    def file_state(self, name: str, state: str, error: str | None = None, kind: str | None = None) -> None:
        """``error`` and ``kind`` (a ``TransferError``'s sentence and kind) when the file failed."""
        ...


@runtime_checkable
class StreamRatesSink(Protocol):
    """A sink that also shows each live stream's rate (the window's details pane)."""

    def stream_rates(self, rates: list[float]) -> None: ...
