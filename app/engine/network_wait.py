"""Waiting for the network: a laptop sleeps, roams between Wi-Fi networks and drops its VPN.

A job that had been moving data and then cannot reach its server at all (the name no longer resolves, no route,
connections time out) is not failing: its network is gone. It waits, shown as "waiting for the network", and
goes on by itself once the server's port answers again, for up to ``RetryPolicy.network_wait`` (12 hours by
default, as Globus Connect Personal waits out a closed lid). Whether the network is gone is asked of the
network, not guessed from the error: one TCP connection to the server's port, where an answer of any kind
(accepted, or refused by the host) means the path is there and the fault is the server's, which gets the
ordinary retries. A job that never reached its server still fails at once (a typo is not an outage), and a
server that answers with an error (404, a refused login) fails as fast as before.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from backends.core.errors import TransferError, Transient, Unreachable

#: the ports a probe knocks on, by scheme
DEFAULT_PORTS = {"https": 443, "http": 80, "sftp": 22, "scp": 22, "ftp": 21, "ftps": 21, "gsiftp": 2811,
                 "sshftp": 22}
#: one knock may take this long (a path with 2 s of queueing still answers within it)
PROBE_TIMEOUT = 5.0
#: knocks come 2, 4, 8 … seconds apart, never more than this
PROBE_EVERY_MAX = 30.0


def peer_endpoint(source: str, dest: str) -> tuple[str, int] | None:
    """The server's host and port: the source's when it is an address, else the destination's."""
    for location in (source, dest):
        if "://" not in location:
            continue
        try:
            parts = urlsplit(location)
            port = parts.port
        except ValueError:
            return None
        if parts.hostname and parts.scheme.lower() in DEFAULT_PORTS:
            return parts.hostname, port or DEFAULT_PORTS[parts.scheme.lower()]
        return None
    return None


async def reaches(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the network gets to ``host``: a connection accepted, or refused by the host itself (its port is
    closed, but the path is there). A name that does not resolve, no route, or no answer: False."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except ConnectionRefusedError:
        return True
    except (OSError, asyncio.TimeoutError):
        return False
    writer.close()
    return True


class NetworkWait:
    """Asked by the job's runner after a fault it would retry: is the network gone, and if so, wait for it."""

    def __init__(self, runner) -> None:
        self.runner = runner

    async def gone(self, exc: TransferError) -> tuple[str, int] | None:
        """The server's endpoint when ``exc`` means the network to it is gone, else None."""
        job = self.runner.job
        if not isinstance(exc, (Unreachable, Transient)) or self.runner.engine.retry.network_wait <= 0:
            return None
        if job.bytes_done == 0 and self.runner.retries == 0:
            return None  # it never got there: say so now rather than wait hours for a typo
        endpoint = peer_endpoint(self.runner.source, self.runner.dest)
        if endpoint is None or await reaches(*endpoint):
            return None
        return endpoint

    async def wait(self, exc: TransferError, endpoint: tuple[str, int]) -> None:
        """Until the endpoint answers again (then return), or ``network_wait`` has passed (then raise)."""
        runner, job = self.runner, self.runner.job
        engine, host = runner.engine, endpoint[0]
        limit = engine.retry.network_wait
        began, every = time.monotonic(), 2.0
        job.waiting = f"the network to {host}"
        runner.say(f"The network to {host} is gone ({_short(exc)}): waiting for it, up to {_hours(limit)}; the "
                   "transfer goes on by itself when it is back.")
        try:
            while not await reaches(*endpoint):
                if time.monotonic() - began >= limit:
                    raise type(exc)(f"The network to {host} was gone for {_hours(limit)}, longer than Ferry waits; "
                                    "run the same command again to resume once it is back.") from exc
                await asyncio.sleep(every)
                every = min(PROBE_EVERY_MAX, every * 2)
        finally:
            job.waiting = None
        runner.say(f"The network to {host} is back after {_hours(time.monotonic() - began)}: going on.")


def _short(exc: TransferError) -> str:
    text = str(exc).split(". ")[0].rstrip(".")
    return text[:120]


def _hours(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h" if seconds % 3600 < 60 else f"{seconds / 3600:.1f} h"
