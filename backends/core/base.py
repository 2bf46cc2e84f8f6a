"""The backend interface: what every protocol module implements.

A backend moves bytes for one job and reports facts back through a ``Sink``; it
never knows whether a window exists. The engine picks a backend by URL scheme
through the registry (``backends.core.registry``), so adding a protocol touches no
other backend.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from .depth import MAX_DEPTH
from .made import Made

Streams = int | Literal["auto"]


#: asks the user whether to trust a server key it has not seen: (host, key type, fingerprint) → "always" (remember
#: it), "once" (this process only) or None (refuse); True and False are "always" and None
AskTrust = Callable[[str, str, str], "str | bool | None"]
#: the question, where there is a user to ask (the window's engine sets it for its thread), for connections made
#: outside a transfer (a folder pane's listing, a site's Test connection); None: refuse, as the CLI does
ASK_TRUST: ContextVar[AskTrust | None] = ContextVar("ask_trust", default=None)


@dataclass(frozen=True)
class Capabilities:
    streams: bool = False  # can split one file across parallel streams
    resume: bool = False
    download: bool = True
    upload: bool = False
    folders: bool = False
    third_party: bool = False
    checksums: tuple[str, ...] = ()  # algorithms it can verify against
    made: bool = False  # uploads a file made on demand (``TransferRequest.made``: ``--pack``)


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""  # when not ok: what is missing and how to install it


@dataclass(frozen=True)
class Checksum:
    algorithm: str  # "sha256" | "md5"
    hexdigest: str
    source: str = "given"  # "given" (by the user) or where it was found


@dataclass(frozen=True)
class ListedFile:
    """One file of a list job (an accession's files): its address, where it goes below the job's folder, and
    what its publisher says of it. The list comes from a catalogue (ENA's report), so no listing is read."""

    address: str  # the file's URL on the backend's server
    name: str  # its path below the destination folder
    size: int | None = None
    checksum: Checksum | None = None  # published (ENA's MD5): computed while the data arrives, compared at the end
    label: str = ""  # what it belongs to, for sentences (a run accession)

    def to_dict(self) -> dict:
        d: dict = {"address": self.address, "name": self.name, "size": self.size, "label": self.label}
        if self.checksum:
            d["checksum"] = f"{self.checksum.algorithm}:{self.checksum.hexdigest}:{self.checksum.source}"
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ListedFile:
        checksum = None
        if d.get("checksum"):
            algorithm, hexdigest, source = (d["checksum"].split(":", 2) + ["given"])[:3]
            checksum = Checksum(algorithm, hexdigest, source)
        return cls(d["address"], d["name"], d.get("size"), checksum, d.get("label", ""))


@dataclass
class TransferOptions:
    """What the user asked for; everything has a sensible default."""

    streams: Streams = "auto"
    max_streams: int = 64
    checksum: Checksum | None = None
    limit_rate: int | None = None  # bytes per second, all streams of this job together
    #: bytes per second for every job of this process together (the global cap in Settings)
    shared_limit: int | None = None
    #: a bandwidth schedule for every job of this process together (``core.schedule``: ``--bwlimit``, Settings)
    shared_schedule: tuple = ()
    ca_file: str | None = None
    insecure: bool = False
    overwrite: bool = False
    initial_streams: int | None = None  # a starting point for "auto" (from the benchmark log)
    #: the path's measured rate in bytes/s (a recent preflight's, else the best transfer's), for choices that
    #: weigh CPU against the wire (``--compress auto``); None: never measured
    path_rate: int | None = None
    #: what a fresh preflight of the host measured about its data transports (GridFTP's UDT beside TCP):
    #: ``{"transport": "udt"|"tcp", "why": sentence}``, for a backend's ``auto`` transport; None: never measured
    transport_advice: dict | None = None
    sync: str | None = None  # skip files already there: "size-mtime" or "checksum"
    #: compare with the server's (or a published) checksum; off: only Ferry's own sha256 (Settings → Verify)
    verify: bool = True
    #: DEST's last part was made from the source's name (DEST was a folder): a backend whose server names the
    #: file itself (HTTP Content-Disposition, the address a redirect ends at) may use that name instead
    name_from_source: bool = False
    #: backend-specific settings (SSH: identity, known_hosts, accept_new_host_key, …); no secrets
    backend_options: dict = field(default_factory=dict)
    #: the most folder levels a folder job goes below the source (``--max-depth``): past it, one sentence
    max_depth: int = MAX_DEPTH
    #: a list job: these files into the folder DEST, as one job (a backend that is a ``ListFetcher``)
    files: tuple[ListedFile, ...] = ()
    #: the source is a relay's spool, still arriving: the file that says what of it is ready (``Arriving``)
    arriving: str | None = None
    #: the saved site this job was made from (``site:NAME/…``), for words: "waiting for collab-lab"; backends
    #: never use it
    site: str | None = None
    #: the running job this transfer belongs to (set by the engine for one run, never stored): every file of
    #: the job pays one rate bucket (``streams.ratelimit``)
    job: str | None = None
    #: send the folder SRC as one tar made on demand (``--pack``: ``TransferRequest.made``), never written here
    pack: bool = False
    #: DEST names where the archive SRC arrives; it is unpacked beside it as it arrives, then removed
    #: (``--unpack``: ``backends.archive.follow``)
    unpack: bool = False

    @property
    def rate_cap(self) -> int | None:
        """The lower of this job's cap and the global ones, for backends that can only take one number (a
        schedule's cap as the transfer starts: such a tool cannot change it while it runs)."""
        from .schedule import rate_at

        caps = [c for c in (self.limit_rate, self.shared_limit, rate_at(self.shared_schedule)) if c]
        return min(caps) if caps else None

    def to_dict(self) -> dict:
        d = {
            "streams": self.streams,
            "max_streams": self.max_streams,
            "limit_rate": self.limit_rate,
            "shared_limit": self.shared_limit,
            "ca_file": self.ca_file,
            "insecure": self.insecure,
            "overwrite": self.overwrite,
            "sync": self.sync,
            "verify": self.verify,
            "name_from_source": self.name_from_source,
            "backend_options": dict(self.backend_options),
        }
        if self.max_depth != MAX_DEPTH:
            d["max_depth"] = self.max_depth
        if self.path_rate:
            d["path_rate"] = self.path_rate
        if self.transport_advice:
            d["transport_advice"] = dict(self.transport_advice)
        if self.checksum:
            d["checksum"] = f"{self.checksum.algorithm}:{self.checksum.hexdigest}"
        if self.files:
            d["files"] = [f.to_dict() for f in self.files]
        if self.arriving:
            d["arriving"] = self.arriving
        if self.site:
            d["site"] = self.site
        if self.shared_schedule:
            d["shared_schedule"] = [list(entry) for entry in self.shared_schedule]
        d.update({k: True for k in ("pack", "unpack") if getattr(self, k)})
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TransferOptions:
        checksum = None
        if d.get("checksum"):
            alg, _, hexd = d["checksum"].partition(":")
            checksum = Checksum(alg, hexd)
        return cls(
            streams=d.get("streams", "auto"),
            max_streams=d.get("max_streams", 64),
            checksum=checksum,
            limit_rate=d.get("limit_rate"),
            shared_limit=d.get("shared_limit"),
            ca_file=d.get("ca_file"),
            insecure=bool(d.get("insecure", False)),
            overwrite=bool(d.get("overwrite", False)),
            sync=d.get("sync"),
            verify=bool(d.get("verify", True)),
            name_from_source=bool(d.get("name_from_source", False)),
            backend_options=dict(d.get("backend_options") or {}),
            files=tuple(ListedFile.from_dict(f) for f in d.get("files") or ()),
            arriving=d.get("arriving"),
            path_rate=d.get("path_rate"),
            transport_advice=d.get("transport_advice"),
            max_depth=int(d.get("max_depth") or MAX_DEPTH),
            site=d.get("site"),
            shared_schedule=tuple(tuple(entry) for entry in d.get("shared_schedule") or ()),
            pack=bool(d.get("pack", False)),
            unpack=bool(d.get("unpack", False)),
        )


#: how the note of a transfer that travelled compressed begins (a relay repeats its hops' notes that begin so)
COMPRESSED_NOTE = "Compressed on the wire:"

#: the states a listed file moves through, as ``FileStatesSink.file_state`` reports them
FILE_WAITING, FILE_MOVING, FILE_DONE, FILE_KEPT, FILE_FAILED = "waiting", "fetching", "fetched", "kept", "failed"

#: the verification method when the user turned comparison off
NOT_COMPARED = "sha256 computed here; comparison with the server turned off (Verify setting)"


@dataclass
class RemoteInfo:
    url: str
    size: int | None
    etag: str | None = None
    last_modified: str | None = None
    accepts_ranges: bool = False
    is_dir: bool = False
    checksum: Checksum | None = None
    name: str | None = None  # the file name the server gives (Content-Disposition), if any


@runtime_checkable
class Arriving(Protocol):
    """A source that is still arriving while it is sent on (a relay's spool file, fed by another hop): which of
    its bytes are there and checked, and, once whole, the SHA-256 of the original. A backend that honours it
    (``request.arriving``) moves only ready ranges and waits for more, so two hops run as a pipeline; it takes
    the file's size, mode and mtime from here (the spool file's own change as it fills), and compares its
    result with ``whole()``'s digest instead of hashing a source that is not complete yet."""

    size: int
    mode: int
    mtime: float

    def ready(self) -> list[tuple[int, int]]:
        """Merged ``[start, end)`` intervals that have arrived and been checked (a snapshot, cheap to call)."""
        ...

    async def more(self, timeout: float) -> None:
        """Returns when more may have arrived, or after ``timeout``; raises ``TransferError`` when the hop that
        feeds the file failed for good."""
        ...

    async def whole(self) -> str:
        """Waits until every byte has arrived; returns the original's SHA-256 (hex)."""
        ...


@runtime_checkable
class ForwardsArriving(Protocol):
    """Sends a source that is still arriving (``TransferRequest.arriving``), ready ranges first: a relay's second
    hop starts before its first ends. A backend without it gets the file once it is whole."""

    def forwards_arriving(self) -> bool: ...


@dataclass
class TransferRequest:
    """One transfer as a backend sees it: where from, where to, how."""

    source: str
    dest: str  # a local file path for downloads
    options: TransferOptions = field(default_factory=TransferOptions)
    #: asks the user whether to trust an unknown SSH host key (host, key type, fingerprint) -> bool;
    #: the GUI's prompt, None in the CLI (which refuses unless --accept-new-host-key)
    ask_trust: AskTrust | None = field(default=None, repr=False, compare=False)
    #: the application's folder for a backend's own records (upload resume records, torrent resume data),
    #: handed down by the engine: backends never import the application to find it
    state_dir: str | None = None
    #: the source is still arriving (a relay's spool): move only what is ready (``Arriving``)
    arriving: Arriving | None = field(default=None, repr=False, compare=False)
    #: told, from any thread, the ranges of the destination that are written and checked, as they grow (a
    #: relay's first hop tells the agent, which forwards them before the hop ends)
    on_ranges: Callable[[list[tuple[int, int]]], None] | None = field(default=None, repr=False, compare=False)
    #: the file to send, made on demand instead of read from ``source`` (``--pack``: the archive's image,
    #: composed by the engine; ``core.made``); None: ``source`` is the file or folder sent
    made: Made | None = field(default=None, repr=False, compare=False)

    def state_folder(self, name: str) -> Path:
        """``state_dir/name``, created on first use."""
        if not self.state_dir:
            raise RuntimeError("this request has no state folder: the engine sets TransferRequest.state_dir")
        folder = Path(self.state_dir) / name
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # Ferry's own state: the user's alone
        return folder


@dataclass
class Result:
    bytes: int
    seconds: float
    streams: int  # the most streams that ran at once
    sha256: str | None
    verified: bool  # compared against an expected checksum and matched
    verify_method: str  # how the result was checked, in words
    peer_host: str | None = None
    rtt_ms: float | None = None
    restarts: int = 0  # times the transfer began again because the source changed
    bytes_fetched: int = 0  # bytes moved over the network (resume and restarts included)
    #: bytes that crossed the wire when they travelled compressed (``bytes_fetched`` counts them as delivered)
    bytes_on_wire: int | None = None
    resumed_from: int = 0  # bytes already present when this run began
    notes: list[str] = field(default_factory=list)
    dest: str | None = None  # the file written, when the backend named it otherwise than the request (a server's name)
    #: a relayed job's hops, in order: route, streams, rate (Mbit/s) and seconds of each (``app.relay``)
    hops: list[dict] = field(default_factory=list)


@dataclass
class ProbeResult:
    streams: int
    bytes: int
    seconds: float
    rtt_ms: float | None

    @property
    def mbps(self) -> float:
        return self.bytes * 8 / self.seconds / 1e6 if self.seconds > 0 else 0.0


class Sink(Protocol):
    """Where a backend reports progress; cheap to call on every read."""

    def progress(self, bytes_done: int, bytes_total: int | None, streams: int) -> None: ...

    def note(self, message: str) -> None: ...

    def stage(self, stage: str) -> None:
        """``"transferring"`` or ``"verifying"``: lets the engine show the job's state."""
        ...


@runtime_checkable
class Backend(Protocol):
    """What every backend implements. What only some can do is a named ability below, checked with
    ``isinstance`` where it is used; a method that could only raise is not required."""

    name: str
    schemes: tuple[str, ...]
    caps: Capabilities

    def available(self) -> Availability: ...

    def check(self, request: TransferRequest) -> None:
        """Cheap checks before a job is queued (URL syntax, destination folder); raises TransferError."""
        ...

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo: ...

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result: ...

    def discard(self, request: TransferRequest) -> None:
        """Remove partial data of a cancelled transfer (blocking; the engine runs it in a thread)."""
        ...


# -- optional abilities: a backend offers one by having its method; callers check with isinstance -----------
