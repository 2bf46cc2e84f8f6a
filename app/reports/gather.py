"""The facts a transfer report holds, gathered from the store (no Qt, no formatting).

Every figure in every format comes from ``ReportData``, so the HTML, PDF, CSV and JSON
agree, and the tests check them against the store in one place. Nothing secret gets in:
URLs are stored with passwords already redacted, and user names are removed unless the
user agrees (``include_users``).
"""

from __future__ import annotations

import importlib
import json
import platform
import re
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass, field, replace
from importlib import metadata

from app import __version__
from app.sites import protocol_name, site_of
from app.store import HistoryFilter, Store
from backends.host.hosttcp import HostTcp, advise, host_tcp

#: a report's schema version (docs/report-schema.md); bump on incompatible changes
SCHEMA = 1
_USER = re.compile(r"^([a-z][a-z0-9+.-]*://)[^@/?#]*@", re.I)


def strip_user(url: str) -> str:
    """``sftp://jdoe@host/x`` → ``sftp://host/x`` (a report leaves the lab; names are personal data)."""
    return _USER.sub(r"\1", url or "")


@dataclass
class Transfer:
    id: int
    started: float | None
    finished: float
    source: str
    dest: str
    backend: str
    outcome: str
    bytes: int
    seconds: float
    throughput_mbps: float | None
    streams: int | None
    retries: int
    restarts: int
    sha256: str | None
    verified: bool
    verify_method: str | None
    error: str | None
    error_kind: str | None
    peer_host: str | None
    rtt_ms: float | None
    notes: list[str]
    tcp: dict | None

    @property
    def protocol(self) -> str:
        """The protocol as the address names it (an ``http://`` job is HTTP, though the https backend moves it)."""
        return protocol_name(self.backend, self.source if "://" in self.source else self.dest)


@dataclass
class SiteSummary:
    name: str  # the site profile's name, or the host when no profile matches
    host: str
    transfers: int
    bytes: int
    best_mbps: float | None
    median_mbps: float | None
    streams_used: int | None  # median over the period's transfers
    streams_recommended: int | None  # from the benchmark log (what --streams auto would start from)
    rtt_ms: float | None  # latest known
    bdp_bytes: int | None  # latest RTT × best throughput: the window a single stream would need
    sysctl: list[dict] = field(default_factory=list)  # {"line", "reason"}
    preflight: dict | None = None  # the latest preflight measurement, when one was run
    series: list[tuple[float, float, int]] = field(default_factory=list)  # (time, Mbit/s, streams) for charts


@dataclass
class ReportData:
    generated: float
    since: float | None
    until: float | None
    site: str | None
    transfers: list[Transfer]
    sites: list[SiteSummary]
    host_tcp: HostTcp
    versions: dict[str, str]
    include_users: bool

    @property
    def totals(self) -> dict:
        done = [t for t in self.transfers if t.outcome == "done"]
        return {"transfers": len(self.transfers), "done": len(done),
                "failed": sum(t.outcome == "failed" for t in self.transfers),
                "bytes": sum(t.bytes or 0 for t in done)}

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {"schema": SCHEMA, "generated": self.generated, "since": self.since, "until": self.until,
                "site": self.site, "totals": self.totals,
                "transfers": [asdict(t) | {"protocol": t.protocol} for t in self.transfers],
                "sites": [{k: v for k, v in asdict(s).items() if k != "series"} for s in self.sites],
                "host_tcp": self.host_tcp.to_dict(), "versions": self.versions}


def _tool_version(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout + out.stderr).strip().splitlines()
    return text[0].strip() if text else None


def versions() -> dict[str, str]:
    found = {"ferry": __version__, "python": platform.python_version(), "os": platform.platform()}
    for dist in ("PySide6", "paramiko", "aiohttp", "pyqtgraph", "keyring", "libtorrent"):
        try:  # the module itself: in a bundle, importable is what counts (metadata may not be there)
            found[dist] = str(importlib.import_module(dist).__version__)
        except (ImportError, AttributeError):
            try:
                found[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    for name, argv in (("openssh", ["ssh", "-V"]), ("globus-url-copy", ["globus-url-copy", "-version"])):
        if version := _tool_version(argv):
            found[name] = version
    return found


def _transfer(row: dict, include_users: bool) -> Transfer:
    def clean(url: str) -> str:
        return url if include_users else strip_user(url)

    return Transfer(
        row["id"], row["started"], row["finished"], clean(row["source"]), clean(row["dest"]), row["backend"],
        row["outcome"], row["bytes"] or 0, row["seconds"] or 0.0, row["throughput_mbps"], row["streams"],
        row["retries"] or 0, row["restarts"] or 0, row["sha256"], bool(row["verified"]), row["verify_method"],
        row["error"], row["error_kind"], row["peer_host"], row.get("rtt_ms"),
        json.loads(row["notes"]) if row.get("notes") else [], json.loads(row["tcp"]) if row.get("tcp") else None,
    )


def _site_of(t: Transfer, profiles: list[dict]) -> str:
    """The site profile a transfer went to (``app.sites.site_of``); the host and protocol when none matches."""
    address = t.source if "://" in t.source else t.dest
    return site_of(address, profiles) or f"{t.peer_host or '?'} ({protocol_name(t.backend, address)})"


def _summary(store: Store, host: str, name: str, transfers: list[Transfer], tcp: HostTcp) -> SiteSummary:
    done = [t for t in transfers if t.outcome == "done" and t.throughput_mbps]
    rates = [t.throughput_mbps for t in done]
    streams = [t.streams for t in done if t.streams]
    backends = [t.backend for t in done]
    recommended = None
    if backends:
        recommended = store.benchmarks.best_streams(host, statistics.mode(backends))
    rtts = [t.rtt_ms for t in transfers if t.rtt_ms]
    rtt = rtts[-1] if rtts else None
    best = max(rates) if rates else None
    bdp = int(best * 1e6 / 8 * rtt / 1000) if best and rtt else None
    preflight = store.preflights.latest(host)
    sysctl = []
    if best and rtt:
        if preflight and preflight.get("loss_estimate") is not None:
            lossy = preflight["loss_estimate"] > 1e-5  # measured: one stream's rate against the Mathis bound
        else:
            lossy = any(t.streams and t.streams > 1 for t in done)  # no preflight: several streams paid off
        sysctl = [{"line": a.line, "reason": a.reason} for a in advise(tcp, rtt, best, lossy=lossy).advice]
    return SiteSummary(
        name, host, len(transfers), sum(t.bytes for t in done), best,
        statistics.median(rates) if rates else None, int(statistics.median(streams)) if streams else None,
        recommended, rtt, bdp, sysctl, _preflight_summary(preflight),
        [(t.started or t.finished, t.throughput_mbps, t.streams or 1) for t in done],
    )


def _preflight_summary(result: dict | None) -> dict | None:
    """What a report shows of the latest preflight (the full result stays in the store)."""
    if not result:
        return None
    keys = ("measured_at", "backend", "rtt_ms", "bottleneck_mbps", "bdp_bytes", "loss_estimate", "loss_note",
            "recommended_streams", "streams_why", "recommended_backend", "sweep")
    return {k: result.get(k) for k in keys}


def gather(store: Store, *, since: float | None = None, until: float | None = None, site: str | None = None,
           ids: tuple[int, ...] | None = None, filt: HistoryFilter | None = None,
           include_users: bool = False) -> ReportData:
    """``filt`` is a History view's filter (search, backend, outcome…); the other limits narrow it."""
    profiles = store.sites.all()
    narrow = {"since": since, "until": until, "ids": ids}
    filt = replace(filt or HistoryFilter(), **{k: v for k, v in narrow.items() if v is not None})
    if site:
        profile = store.sites.get(site)
        filt = replace(filt, peer_host=profile["host"] if profile else site)  # a host name works too
    rows = store.history.full_rows(filt)
    transfers = [_transfer(r, include_users) for r in rows]
    tcp = host_tcp()
    by_site: dict[str, list[Transfer]] = {}
    for t in transfers:
        if t.peer_host:
            by_site.setdefault(_site_of(t, profiles), []).append(t)
    sites = [_summary(store, ts[0].peer_host or name, name, ts, tcp) for name, ts in sorted(by_site.items())]
    # the period the rows were chosen by (History's time filter too), as the report's header says it
    return ReportData(time.time(), filt.since, filt.until, site, transfers, sites, tcp, versions(), include_users)
