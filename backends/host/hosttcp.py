"""This host's TCP settings, and the sysctl lines a path needs (after ESnet's Fasterdata host tuning).

One TCP stream can have at most its window in flight, so it moves at most window / RTT;
to fill a path the receive and send buffers must reach the bandwidth-delay product
(BDP = rate × RTT). Linux grows buffers by itself (autotuning) up to ``tcp_rmem``/``tcp_wmem``
max; a program that sets its own buffer is capped at ``rmem_max``/``wmem_max``. Loss
hurts loss-based congestion control (cubic) far more than BBR on long paths.

Shared by the GridFTP backend (whether ``-tcp-bs`` helps), the engine (recorded with every
transfer) and reports/preflight (the lines for IT). Reads ``/proc/sys`` on Linux; elsewhere
it says plainly that the values are not available.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

#: ESnet's buffers for hosts on 10 Gbit/s paths up to ~100 ms: autotuning may grow to this
ESNET_10G_BUFFER = 64 * 1024 * 1024


@dataclass(frozen=True)
class HostTcp:
    available: bool
    platform: str
    congestion: str | None = None
    congestion_choices: tuple[str, ...] = ()
    default_qdisc: str | None = None
    rmem_max: int | None = None
    wmem_max: int | None = None
    tcp_rmem: tuple[int, ...] = ()
    tcp_wmem: tuple[int, ...] = ()
    mtu_probing: int | None = None
    reason: str = ""  # when not available

    def to_dict(self) -> dict:
        d = asdict(self)
        d["tcp_rmem"], d["tcp_wmem"] = list(self.tcp_rmem), list(self.tcp_wmem)
        d["congestion_choices"] = list(self.congestion_choices)
        return d

    @property
    def autotune_max(self) -> int | None:
        """The largest receive window autotuning may reach (bytes)."""
        return self.tcp_rmem[2] if len(self.tcp_rmem) == 3 else None

    @property
    def send_max(self) -> int | None:
        return self.tcp_wmem[2] if len(self.tcp_wmem) == 3 else None

    def max_rate_mbps(self, rtt_ms: float) -> float | None:
        """What one stream can reach on this host at ``rtt_ms``, limited by its buffers alone."""
        window = min(x for x in (self.autotune_max, self.send_max) if x) if self.autotune_max else None
        if not window or rtt_ms <= 0:
            return None
        return window * 8 / (rtt_ms / 1000) / 1e6


def _read(root: Path, rel: str) -> list[str]:
    try:
        return (root / rel).read_text().split()
    except OSError:
        return []


def _ints(values: list[str]) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in values)
    except ValueError:
        return ()


def read_host_tcp(root: Path = Path("/proc/sys")) -> HostTcp:
    if not sys.platform.startswith("linux"):
        return HostTcp(False, sys.platform, reason=(
            "Ferry reads TCP settings on Linux only; on macOS see `sysctl kern.ipc.maxsockbuf net.inet.tcp`, on "
            "Windows `netsh interface tcp show global` (autotuning level)."))
    rmem_max, wmem_max = _ints(_read(root, "net/core/rmem_max")), _ints(_read(root, "net/core/wmem_max"))
    congestion = _read(root, "net/ipv4/tcp_congestion_control")
    qdisc = _read(root, "net/core/default_qdisc")
    probing = _ints(_read(root, "net/ipv4/tcp_mtu_probing"))
    if not rmem_max and not congestion:
        return HostTcp(False, sys.platform, reason="/proc/sys/net is not readable here (a container?).")
    return HostTcp(
        True, sys.platform, congestion[0] if congestion else None,
        tuple(_read(root, "net/ipv4/tcp_available_congestion_control")), qdisc[0] if qdisc else None,
        rmem_max[0] if rmem_max else None, wmem_max[0] if wmem_max else None,
        _ints(_read(root, "net/ipv4/tcp_rmem")), _ints(_read(root, "net/ipv4/tcp_wmem")),
        probing[0] if probing else None,
    )


@lru_cache(maxsize=1)
def host_tcp() -> HostTcp:
    """Read once per process (the settings change only when IT changes them)."""
    return read_host_tcp()


@dataclass(frozen=True)
class Advice:
    line: str  # a sysctl line, ready for /etc/sysctl.d/90-ferry.conf
    reason: str


@dataclass
class PathNeeds:
    rtt_ms: float
    rate_mbps: float  # the bottleneck (measured, or the link's nominal rate)
    streams: int = 1
    advice: list[Advice] = field(default_factory=list)

    @property
    def bdp_bytes(self) -> int:
        return int(self.rate_mbps * 1e6 / 8 * self.rtt_ms / 1000)


def _round_up_mib(n: int) -> int:
    mib = 1024 * 1024
    return max(4 * mib, -(-n // mib) * mib)


def advise(tcp: HostTcp, rtt_ms: float, rate_mbps: float, streams: int = 1, lossy: bool = False) -> PathNeeds:
    """The sysctl lines this host needs for a path, each with its reason (empty when it is ready)."""
    needs = PathNeeds(rtt_ms, rate_mbps, streams)
    if not tcp.available:
        return needs
    # one stream should be able to carry the whole BDP (a single scp or HTTPS stream); twice for headroom
    want = _round_up_mib(2 * needs.bdp_bytes)
    bdp_mib = needs.bdp_bytes / 1024 / 1024
    if (tcp.rmem_max or 0) < want or (tcp.wmem_max or 0) < want:
        for key in ("rmem_max", "wmem_max"):
            needs.advice.append(Advice(
                f"net.core.{key} = {max(want, getattr(tcp, key) or 0)}",
                f"programs that set their own buffer (GridFTP -tcp-bs, iperf -w) are capped at {key}; the path's "
                f"bandwidth-delay product is {bdp_mib:.1f} MiB ({rate_mbps:.0f} Mbit/s × {rtt_ms:.0f} ms)"))
    autotuning = (
        ("tcp_rmem", tcp.tcp_rmem, (4096, 131072), f"autotuning may grow a receive window only to "
         f"{(tcp.autotune_max or 0) // 1024} KiB; one stream then stops at {tcp.max_rate_mbps(rtt_ms) or 0:.0f} "
         "Mbit/s on this path"),
        ("tcp_wmem", tcp.tcp_wmem, (4096, 16384), "the send buffer must also hold a full window of unacknowledged "
         "data when this host uploads"),
    )
    for key, current, defaults, reason in autotuning:
        if (current[2] if len(current) == 3 else 0) < want:
            low = current[:2] if len(current) == 3 else defaults
            needs.advice.append(Advice(f"net.ipv4.{key} = {low[0]} {low[1]} {want}", reason))
    if lossy and tcp.congestion not in ("bbr",) and "bbr" in (tcp.congestion_choices or ("bbr",)):
        needs.advice.append(Advice(
            "net.ipv4.tcp_congestion_control = bbr",
            f"{tcp.congestion or 'the current algorithm'} halves its rate at every loss; on a long lossy path BBR "
            "keeps the pipe full (ESnet recommends it for data transfer nodes)"))
        if tcp.default_qdisc != "fq":
            needs.advice.append(Advice("net.core.default_qdisc = fq", "BBR paces its packets best with the fq "
                                                                      "queueing discipline"))
    if tcp.mtu_probing == 0:
        needs.advice.append(Advice("net.ipv4.tcp_mtu_probing = 1", "recovers from paths that silently drop large "
                                                                   "packets (black-hole routers), as ESnet advises"))
    return needs
