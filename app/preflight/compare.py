"""Comparing protocols on one path: the same file through each backend, in turn, several rounds.

The testbed idea: a lab that can reach a collaborator by HTTPS, SFTP and GridFTP wants
to know which to use. Each run is a real, complete transfer of the test file (data
discarded afterwards; server comparison off, since the transport is what is measured),
the order rotates each round so no protocol always runs on a warm or a cold cache, and
every run lands in the benchmark log like any transfer, so ``--streams auto`` and the
preflight's protocol advice learn from it. Efficiency is each protocol's median rate
over the best rate any of them reached on this path.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from backends.core.base import TransferOptions, TransferRequest
from backends.core.errors import BadRequest, TransferError
from backends.core.urls import redact, remote_name

from .measure import endpoint


@dataclass
class Run:
    url: str
    backend: str
    round: int
    mbps: float = 0.0
    bytes: int = 0
    seconds: float = 0.0
    streams: int = 0
    error: str | None = None


@dataclass
class Comparison:
    host: str
    runs: list[Run] = field(default_factory=list)

    def table(self) -> list[dict]:
        """One row per address: median and best Mbit/s, efficiency, runs, failures."""
        rows = []
        by_url: dict[str, list[Run]] = {}
        for run in self.runs:
            by_url.setdefault(run.url, []).append(run)
        best = max((r.mbps for r in self.runs if not r.error), default=0.0)
        for url, runs in by_url.items():
            good = [r.mbps for r in runs if not r.error]
            median = statistics.median(good) if good else 0.0
            rows.append({"url": url, "backend": runs[0].backend, "median_mbps": round(median, 1),
                         "best_mbps": round(max(good), 1) if good else 0.0,
                         "efficiency": round(median / best, 3) if best else 0.0,
                         "streams": max((r.streams for r in runs), default=0), "runs": len(runs),
                         "failed": sum(1 for r in runs if r.error),
                         "errors": sorted({r.error for r in runs if r.error})})
        return sorted(rows, key=lambda r: -r["median_mbps"])

    def to_dict(self) -> dict:
        table = self.table()
        return {"host": self.host, "url": table[0]["url"] if table else "", "backend": "compare",
                "measured_at": time.time(), "table": table,
                "recommended_backend": table[0]["backend"] if table and table[0]["median_mbps"] else None,
                "runs": [vars(r) for r in self.runs]}


class _Quiet:
    def progress(self, bytes_done: int, bytes_total: int | None, streams: int) -> None:
        pass

    def note(self, message: str) -> None:
        pass

    def stage(self, stage: str) -> None:
        pass


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _check(urls: list[str]) -> str:
    if len(urls) < 2:
        raise BadRequest("Give at least two addresses of the same file to compare (https://…, sftp://…, ftp://…).")
    hosts = {endpoint(u)[0] for u in urls}
    if len(hosts) > 1:
        raise BadRequest(f"The addresses point at different hosts ({', '.join(sorted(hosts))}); a comparison needs "
                         "one path.")
    return hosts.pop()


async def compare(store, registry, urls: list[str], options: TransferOptions, *, rounds: int = 3,
                  on_run: Callable[[Run], None] | None = None) -> Comparison:
    host = _check(urls)
    from app.requests import overrides_of, resolve

    scratch = Path(tempfile.mkdtemp(prefix="ferry-compare-"))
    chosen = overrides_of(replace(options, overwrite=True, verify=False))
    pairs = [(u, registry.for_url(u)) for u in urls]
    result = Comparison(host)
    try:
        for number in range(rounds):
            shift = number % len(pairs)
            for url, backend in pairs[shift:] + pairs[:shift]:
                run = Run(redact(url), backend.name, number + 1)
                dest = scratch / f"{number}-{backend.name}-{remote_name(url) or 'data'}"
                started = time.time()
                try:
                    request = resolve(url, dest, chosen, store=store, registry=registry, advice=False, strict=False)
                    done = await backend.transfer(TransferRequest(request.source, request.dest, request.options,
                                                                  state_dir=str(store.path.parent)), _Quiet())
                except TransferError as exc:
                    run.error = str(exc)
                else:
                    run.bytes, run.seconds, run.streams = done.bytes, done.seconds, done.streams
                    run.mbps = done.bytes * 8 / done.seconds / 1e6 if done.seconds else 0.0
                    store.benchmarks.add(job_id=None, backend=backend.name, peer_host=done.peer_host or host,
                                         streams=done.streams, bytes=done.bytes, seconds=done.seconds,
                                         rtt_ms=done.rtt_ms, started=started)
                finally:
                    _remove(dest)
                result.runs.append(run)
                if on_run:
                    on_run(run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    store.preflights.add(result.to_dict(), kind="compare")
    return result
