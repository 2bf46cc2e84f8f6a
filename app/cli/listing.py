"""``labferry queue`` and ``labferry history``: what is waiting, and what happened."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime

from app.units import format_bytes, format_duration


def add_parsers(sub) -> None:
    q = sub.add_parser("queue", help="list unfinished jobs; --run runs them here until the queue is empty")
    q.add_argument("--json", action="store_true", help="one JSON object per job")
    q.add_argument("--run", action="store_true", help="run the queued jobs now (headless), then exit")
    q.add_argument("--jobs", type=int, default=3, metavar="N", help="with --run: jobs at once (default 3)")
    from .agent import add_on_flags

    add_on_flags(q)
    q.set_defaults(handler=run_queue)

    h = sub.add_parser("history", help="finished transfers, newest first")
    h.add_argument("--json", action="store_true", help="one JSON array of rows")
    h.add_argument("--limit", type=int, default=50, metavar="N")
    h.add_argument("--search", metavar="TEXT", help="only rows whose source or destination contains TEXT")
    h.add_argument("--backend", metavar="NAME")
    h.add_argument("--outcome", choices=("done", "failed", "cancelled"))
    h.set_defaults(handler=run_history)


def run_queue(args: argparse.Namespace) -> int:
    from app.store import Store  # sqlite: when a command reads the store, not to parse a command line

    if args.on:  # the queue of the agent on that site's host
        from .agent import client_for, print_remote_queue

        with client_for(args) as client:
            print_remote_queue(client.call("jobs"), args.json, args.on)
        return 0
    if args.run:
        return _drain(args.jobs)
    with Store(readonly=True) as store:
        jobs = store.jobs.all()
    if args.json:
        for job in jobs:
            print(json.dumps({
                "id": job.id, "state": job.state.value, "source": job.source, "dest": job.dest,
                "backend": job.backend, "bytes_done": job.bytes_done, "bytes_total": job.bytes_total,
                "attempts": job.attempts, "error": job.error,
            }))
        return 0
    if not jobs:
        print("The queue is empty.")
    for job in jobs:
        size = f"{format_bytes(job.bytes_done)}/{format_bytes(job.bytes_total)}"
        print(f"{job.id:>5}  {job.state.value:<9}  {size:>22}  {job.source} → {job.dest}")
        if job.error:
            print(f"       {job.error}")
    return 0


def _drain(jobs_at_once: int) -> int:
    """Run every queued job in this process; exit 0 only if all of them finished."""
    from app.engine import Engine, JobState

    with Engine(max_jobs=jobs_at_once, run_queue=True) as engine:
        queued = [j for j in engine.jobs() if j.state == JobState.QUEUED]
        failed = 0
        for job in queued:
            view = engine.wait(job.id)
            mark = "done" if view.state == JobState.DONE else view.state.value
            print(f"{view.id:>5}  {mark:<9}  {view.source} → {view.dest}")
            if view.error:
                print(f"       {view.error}", file=sys.stderr)
            failed += view.state != JobState.DONE
    return 1 if failed else 0


def run_history(args: argparse.Namespace) -> int:
    from app.store import HistoryFilter, Store

    filt = HistoryFilter(search=args.search, backend=args.backend, outcome=args.outcome)
    with Store(readonly=True) as store:
        rows = store.history.query(filt, limit=args.limit)
    if args.json:
        print(json.dumps(rows))
        return 0
    if not rows:
        print("No transfers yet.")
    for r in rows:
        when = datetime.fromtimestamp(r["finished"]).strftime("%Y-%m-%d %H:%M")
        rate = f"{r['throughput_mbps']:.0f} Mbit/s" if r["throughput_mbps"] else ""
        print(f"{when}  {r['outcome']:<9}  {format_bytes(r['bytes']):>10}  {format_duration(r['seconds']):>7}"
              f"  {rate:>12}  {r['source']} → {r['dest']}")
        if r["error"]:
            print(f"{'':18}{r['error']}")
    return 0
