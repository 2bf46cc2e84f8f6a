"""The laptop's half of a relay: ``labferry copy SRC DEST --via site:NAME`` (store-and-forward through a DTN).

The lossy last mile and the long clean backbone are two TCP paths instead of one: TCP's rate falls with
RTT·√loss, so a path that has both is slower than either of its halves (KISTI measured +28 % through a DTN).
This backend runs the last-mile hop itself, over the via site's SSH login with Ferry's parallel SSH streams,
and has the agent on that host run the backbone hop with its own backend and stream choice
(``app.agent.relay``). Both hops run at once on ranges that have arrived and been checked (cut-through), and
the destination is checked against the original's SHA-256.

It is a backend (registered as ``relay``) so a relayed job is an ordinary job: queued, paused, resumed and
listed in history like any other. It lives in the application, not in ``backends/``, because it speaks to the
agent and reads the site book.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from app.units import counted
from backends.core.base import (
    COMPRESSED_NOTE,
    Availability,
    Capabilities,
    Result,
    Sink,
    TransferOptions,
    TransferRequest,
)
from backends.core.errors import BadRequest, Corrupt, LocalError, NoSpace, TransferError
from backends.core.options import option
from backends.core.registry import registry
from backends.core.urls import redact
from backends.streams.hashing import hash_file

from .hops import AgentArrivals, HopSink, RangesReporter

FOLLOW_EVERY = 0.5  # seconds between looks at the agent's hop while the laptop waits for it
LINK_SECONDS = 120.0  # how long a download relay may take to begin its first hop's file
LINK_POLL = 0.2  # seconds between looks while it has not begun (start-up counts on a 1 GiB file)


@dataclass
class RelayOptions:
    """A relay's settings, declared for the front door: where it goes through, and what the far hop gets."""

    via: str = option("", "the SSH site whose host runs Ferry's agent (site:NAME)")
    agent_command: str = option("labferry", "how Ferry is started on that host")
    keep: bool = option(False, "keep the relay's spool copy after the destination verified it")
    compress: Literal["auto", "zstd", "off"] | None = option(None, "zstd on the laptop's hop (SSH's --compress)")
    #: the user's choices for the far hop (checksum, overwrite, sync, CA…), as the agent's front door takes them
    far: dict = field(default_factory=dict)


class RelayBackend:
    name = "relay"
    schemes: tuple[str, ...] = ()
    caps = Capabilities(streams=True, resume=True, download=True, upload=True, checksums=("sha256",))
    options_type = RelayOptions

    def available(self) -> Availability:
        if not shutil.which("ssh"):
            return Availability(False, "A relay reaches its agent with OpenSSH; install openssh-client.")
        return Availability(True)

    def check(self, request: TransferRequest) -> None:
        if not request.options.backend_options.get("via"):
            raise BadRequest("A relayed copy needs --via site:NAME.")
        if _uploads(request):
            local = Path(request.source)
            if not local.is_file():
                raise LocalError(f"{local} is not a file. A relay sends one file at a time; give a file's path.")
        elif not Path(request.dest).parent.is_dir():
            raise LocalError(f"The destination folder {Path(request.dest).parent} does not exist. Create it first.")

    async def stat(self, url: str, options: TransferOptions):
        raise BadRequest("A relay has no address of its own to look at.")

    def discard(self, request: TransferRequest) -> None:
        """A cancelled relay: this computer's part file (a download), and on the agent its hop and its spool."""
        if not _uploads(request):
            from backends.destination import PartFile

            PartFile(request.dest).discard()
        from app.agent.client import site_client

        settings = request.options.backend_options
        try:
            site, _ = _site(settings["via"])
            with site_client(site, settings.get("agent_command") or "labferry") as client:
                client.call("relay_cancel", key=_key(request), direction="up" if _uploads(request) else "down",
                            far=request.dest if _uploads(request) else request.source)
        except TransferError:
            pass  # the agent cannot be reached now: its spool goes when that relay is run again or delivered

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        self.check(request)
        settings = request.options.backend_options
        site, secret = await asyncio.to_thread(_site, settings["via"])
        from app.agent.client import AgentLink, site_client

        command = settings.get("agent_command") or "labferry"
        client = AgentLink(lambda: site_client(site, command), site.host)
        try:
            hop = _Hop(site, secret, request)
            if _uploads(request):
                return await _up(client, hop, request, sink, settings)
            return await _down(client, hop, request, sink, settings)
        finally:
            await asyncio.to_thread(client.close)


class SpoolFull(NoSpace):
    """The relay's spool has no room for the file: the job pauses with the agent's sentence, nothing sent."""

    pauses = True


def _open(client, **params) -> dict:
    try:
        return client.call("relay_open", **params)
    except BadRequest as exc:
        if exc.kind == "no-space":
            raise SpoolFull(str(exc)) from None
        raise


def _key(request: TransferRequest) -> str:
    """What names a relay on the agent (with its direction and far end): this computer's file, so the same
    command finds the same relay again."""
    if _uploads(request):
        info = Path(request.source).stat()
        return f"{socket.gethostname()}:{request.source}:{info.st_size}:{int(info.st_mtime)}"
    return f"{socket.gethostname()}:{request.dest}"


def _uploads(request: TransferRequest) -> bool:
    return "://" not in request.source and not request.source.startswith("site:")


def _site(name: str):
    from app.sites import PASSWORD_PROTOCOLS, SiteBook
    from app.store import Store

    with Store() as store:
        book = SiteBook(store)
        site = book.get(name.removeprefix("site:").strip("/"))
        secret = book.secrets.get(site.name) if site.protocol in PASSWORD_PROTOCOLS and site.user else None
    return site, secret


class _Hop:
    """The laptop's hop: an SSH transfer to or from the agent's spool, with the via site's login and the job's
    streams and rate cap."""

    def __init__(self, site, secret: str | None, request: TransferRequest) -> None:
        from app.requests import site_options

        self.site, self.secret, self.request = site, secret, request
        own = request.options
        self.options = replace(site_options(site), streams=own.streams, max_streams=own.max_streams,
                               limit_rate=own.limit_rate, shared_limit=own.shared_limit,
                               initial_streams=own.initial_streams, overwrite=True, verify=True)
        compress = own.backend_options.get("compress")
        if compress:
            self.options = replace(self.options, backend_options=self.options.backend_options | {"compress": compress})

    def url(self, path: str) -> str:
        """The agent's spool path (absolute, or below its login folder) on the via site, whatever the site's
        default folder."""
        return self.site.url_of(path if path.startswith("/") else "~/" + path, self.secret)

    def request_for(self, source: str, dest: str, **extra) -> TransferRequest:
        return TransferRequest(source, dest, self.options, ask_trust=self.request.ask_trust,
                               state_dir=self.request.state_dir, **extra)


async def _up(client, hop: _Hop, request: TransferRequest, sink: Sink, settings: dict) -> Result:
    began = time.monotonic()
    local = Path(request.source)
    info = local.stat()
    key = _key(request)
    status = await asyncio.to_thread(
        _open, client, direction="up", key=key, name=local.name, size=info.st_size,
        mode=info.st_mode & 0o777, mtime=info.st_mtime, far=request.dest, overrides=settings.get("far") or {},
        keep=bool(settings.get("keep")))
    relay = status["relay"]
    first = HopSink(sink, "First hop", last=False)
    digest = status.get("sha256")
    result1 = None
    if status["state"] == "relaying" and not digest:
        reporter = RangesReporter(client, relay)
        try:
            inner = hop.request_for(str(local), hop.url(status["spool"]), on_ranges=reporter.tell)
            result1 = await registry.get("ssh").transfer(inner, first)
        finally:
            await asyncio.to_thread(reporter.close)
        rate = result1.bytes_fetched * 8 / result1.seconds / 1e6 if result1.seconds else 0.0
        status = await asyncio.to_thread(
            client.call, "relay_arrived", relay=relay, sha256=result1.sha256, seconds=result1.seconds,
            streams=result1.streams, rate=rate, route=f"{socket.gethostname()} → {hop.site.host}")
        digest = result1.sha256
        sink.note(f"The first hop is done ({_hop_line(status['hop1'])}); this computer may leave now: the agent on "
                  f"{hop.site.host} delivers the rest to {redact(request.dest)}.")
    job = await _follow(client, relay, sink, info.st_size, hop.site.name)
    far = job["result"]
    original = digest or (await asyncio.to_thread(hash_file, local))["sha256"]
    if far["sha256"] != original:
        raise Corrupt(f"{redact(request.dest)} arrived through the relay with a different SHA-256 than "
                      f"{local.name} has here ({far['sha256'][:16]}…, here {original[:16]}…). Run the copy again.")
    status = await asyncio.to_thread(client.call, "relay_status", relay=relay)
    return _result(info.st_size, began, original, far, status, hop, request.dest, first.streams, near=result1)


async def _follow(client, relay: str, sink: Sink, size: int, site: str) -> dict:
    """Waits for the agent's hop, showing what it delivered; its job when done."""
    while True:
        status = await asyncio.to_thread(client.call, "relay_status", relay=relay)
        job = status["job"]
        if job is None:
            raise TransferError("The agent's hop of this relay was removed from its queue; run the copy again.")
        sink.progress(job["bytes_done"], size, job["streams"])
        if job["state"] == "done":
            return job
        if job["state"] in ("failed", "cancelled", "paused"):
            raise TransferError(f"The agent's hop to the destination is {job['state']}"
                                f"{': ' + job['error'] if job.get('error') else ''}. Resume it with labferry resume "
                                f"{job['id']} --on site:{site}, or run the copy again.")
        await asyncio.sleep(FOLLOW_EVERY)


async def _down(client, hop: _Hop, request: TransferRequest, sink: Sink, settings: dict) -> Result:
    began = time.monotonic()
    dest = Path(request.dest)
    key = _key(request)
    status = await asyncio.to_thread(
        _open, client, direction="down", key=key, name=dest.name, far=request.source,
        overrides=settings.get("far") or {}, keep=bool(settings.get("keep")))
    relay = status["relay"]
    deadline = time.monotonic() + LINK_SECONDS
    while not status.get("linked"):  # the agent's first hop has not begun its file yet
        if status.get("failed"):
            raise TransferError(status["failed"])
        if time.monotonic() > deadline:
            raise TransferError(f"The agent on {hop.site.host} did not begin the first hop within "
                                f"{LINK_SECONDS:.0f} s; see labferry queue --on site:{hop.site.name}.")
        await asyncio.sleep(LINK_POLL)
        status = await asyncio.to_thread(client.call, "relay_status", relay=relay)
    arrivals = AgentArrivals(client, relay, status)
    second = HopSink(sink, "Last hop", last=True)
    inner = hop.request_for(hop.url(status["out"]), str(dest), arriving=arrivals)
    result2 = await registry.get("ssh").transfer(inner, second)
    status = await asyncio.to_thread(client.call, "relay_done", relay=relay, sha256=result2.sha256)
    far = status["job"]["result"]
    cut = second.first_byte_at is not None and second.first_byte_at < far.get("finished", 0)
    result = _result(result2.bytes, began, result2.sha256, far, status, hop, str(dest), result2.streams,
                     near=result2)
    if cut:
        result.notes.append(f"Cut-through: this computer's hop began {far['finished'] - second.first_byte_at:.1f} s "
                            "before the agent's ended.")
    return result


def _hop_line(figures: dict) -> str:
    parts = [figures.get("route", "")]
    if figures.get("streams"):
        parts.append(counted(figures["streams"], "stream"))
    if figures.get("rate"):
        parts.append(f"{figures['rate']:.0f} Mbit/s")
    if figures.get("seconds"):
        parts.append(f"{figures['seconds']:.1f} s")
    return ", ".join(p for p in parts if p)


def _result(size: int, began: float, digest: str, far: dict, status: dict, hop: _Hop, dest: str, streams: int,
            near: Result | None = None) -> Result:
    """One result for the relayed job, with each hop in its notes (history and reports show them)."""
    far_host = far.get("peer_host") or (redact(dest) if status["direction"] == "up" else "the source")
    route = f"{hop.site.host} → {far_host}" if status["direction"] == "up" else f"{far_host} → {hop.site.host}"
    far_line = {"route": route, "streams": far.get("streams"), "rate": far.get("throughput_mbps"),
                "seconds": far.get("seconds")}
    if status["direction"] == "up":
        hops = [status["hop1"], far_line]
    else:
        near_line = {"route": f"{hop.site.host} → {socket.gethostname()}", "streams": streams,
                     "rate": near.bytes_fetched * 8 / near.seconds / 1e6 if near and near.seconds else None,
                     "seconds": near.seconds if near else None}
        hops = [far_line, near_line]
    notes = [f"Hop {n}: {_hop_line(h)}." for n, h in enumerate(hops, 1)]
    up = status["direction"] == "up"
    for n, said in ((1 if up else 2, near.notes if near else []), (2 if up else 1, far.get("notes") or [])):
        notes += [f"Hop {n}: {line}" for line in said if line.startswith(COMPRESSED_NOTE)]
    sent = status.get("hop2_sent_before_hop1_ended")
    if sent:
        notes.append(f"Cut-through: the agent had sent {sent / 1e6:.0f} MB on before the first hop's last byte.")
    if status.get("keep"):
        notes.append(f"The relay's copy stays on {hop.site.host}: {status['spool']}.")
    verified = bool(far.get("verified")) if status["direction"] == "up" else bool(near and near.verified)
    method = far.get("verify_method") if status["direction"] == "up" else (near.verify_method if near else "")
    return Result(bytes=size, seconds=time.monotonic() - began, streams=streams, sha256=digest, verified=verified,
                  verify_method=f"end to end through the relay on {hop.site.host}: {method}",
                  peer_host=hop.site.host, bytes_fetched=near.bytes_fetched if near else 0,
                  resumed_from=near.resumed_from if near else 0, notes=notes,
                  bytes_on_wire=near.bytes_on_wire if near else None,
                  hops=[{k: h.get(k) for k in ("route", "streams", "rate", "seconds")} for h in hops])

