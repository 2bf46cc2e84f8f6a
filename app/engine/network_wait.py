"""Waiting out an outage: a laptop sleeps, roams between Wi-Fi networks and drops its VPN; a server is restarted.

A job that had been moving data and then cannot reach its server at all (the name no longer resolves, no route,
connections time out, or the host refuses them: its server is down) is not failing: it waits, shown as
"waiting for SITE (why)", and goes on by itself once the server's port accepts a connection again, for up to
``RetryPolicy.network_wait`` (12 hours by default, as Globus retries such faults for hours without the user).
Whether the server is there is asked of the network, not guessed from the error: one TCP connection to its port.
A port that accepts means the fault is the server's answer, which gets the ordinary retries. A job that never
reached its server still fails at once (a typo is not an outage), and a server that answers with an error (404,
a refused login) fails as fast as before.
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


async def knock(host: str, port: int, timeout: float = PROBE_TIMEOUT) -> str:
    """How ``host``'s port answers one connection: ``accepted``; ``refused`` (the host is there, its server is
    not: stopped, restarting); or ``silent`` (a name that does not resolve, no route, no answer)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except ConnectionRefusedError:
        return "refused"
    except (OSError, asyncio.TimeoutError):
        return "silent"
    writer.close()
    return "accepted"


#: the words for each knock that is not answered: in the job's log, and short in the row ("waiting for lab-web
#: (refused)")
WHY = {"refused": "its server refuses connections", "silent": "no network to it"}
SHORT = {"refused": "refused", "silent": "no network"}


class NetworkWait:
    """Asked by the job's runner after a fault it would retry: is the network gone, and if so, wait for it."""

    def __init__(self, runner) -> None:
        self.runner = runner

    async def gone(self, exc: TransferError) -> tuple[str, int, str] | None:
        """The server's endpoint and how it failed a knock when ``exc`` means the server is out of reach, else
        None (the ordinary retries)."""
        job = self.runner.job
        if not isinstance(exc, (Unreachable, Transient)) or self.runner.engine.retry.network_wait <= 0:
            return None
        if job.bytes_done == 0 and self.runner.retries == 0:
            return None  # it never got there: say so now rather than wait hours for a typo
        endpoint = peer_endpoint(self.runner.source, self.runner.dest)
        if endpoint is None:
            return None
        answer = await knock(*endpoint)
        return None if answer == "accepted" else (*endpoint, answer)

    async def wait(self, exc: TransferError, endpoint: tuple[str, int, str]) -> None:
        """Until the endpoint accepts a connection again (then return), or ``network_wait`` has passed (then
        raise)."""
        runner, job = self.runner, self.runner.job
        host, port, answer = endpoint
        limit = runner.engine.retry.network_wait
        name = job.options.site or host
        began, every = time.monotonic(), 2.0
        job.waiting = f"{name} ({SHORT[answer]})"
        runner.say(f"{name} is out of reach ({_short(exc)}; {WHY[answer]}): waiting for it, up to {_hours(limit)}; "
                   "the transfer goes on by itself when it is back.")
        try:
            while (answer := await knock(host, port)) != "accepted":
                job.waiting = f"{name} ({SHORT[answer]})"
                if time.monotonic() - began >= limit:
                    raise type(exc)(f"{name} was out of reach for {_hours(limit)} ({WHY[answer]}), longer than Ferry "
                                    "waits; run the same command again to resume once it is back.") from exc
                await asyncio.sleep(every)
                every = min(PROBE_EVERY_MAX, every * 2)
        finally:
            job.waiting = None
        runner.say(f"{name} is back after {_hours(time.monotonic() - began)}: going on.")


def _short(exc: TransferError) -> str:
    text = str(exc).split(". ")[0].rstrip(".")
    return text[:120]


def _hours(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h" if seconds % 3600 < 60 else f"{seconds / 3600:.1f} h"
