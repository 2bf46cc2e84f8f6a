"""``labferry agent`` (the headless engine a DTN runs) and what a desktop asks of one: ``queue --on``,
``pause|resume|cancel JOB --on site:NAME`` (``copy --on`` is in copy.py)."""

from __future__ import annotations

import argparse
import json
import sys


def add_parsers(sub) -> None:
    a = sub.add_parser("agent", help="run Ferry's engine headless here, for desktops that reach it over SSH")
    a.add_argument("--serve", action="store_true", help="run the agent in this terminal (the default)")
    a.add_argument("--stdio", action="store_true",
                   help="join stdin/stdout to the agent, starting it if needed (what a desktop runs over SSH)")
    a.add_argument("--status", action="store_true", help="say whether the agent runs, and its jobs")
    a.add_argument("--stop", action="store_true", help="stop the agent (its unfinished jobs resume next time)")
    a.add_argument("--idle-minutes", type=float, default=10.0, metavar="M",
                   help="leave after M minutes with no desktop connected and nothing queued (default 10; 0: stay until "
                        "stopped, as under systemd)")
    a.set_defaults(handler=run_agent)
    for verb in ("pause", "resume", "cancel"):
        p = sub.add_parser(verb, help=f"{verb} a job an agent runs (--on site:NAME)")
        p.add_argument("job", type=int, metavar="JOB")
        add_on_flags(p, required=True)
        p.set_defaults(handler=run_job_verb, verb=verb)


def add_on_flags(parser, required: bool = False) -> None:
    parser.add_argument("--on", metavar="site:NAME", required=required,
                        help="the agent on that SSH site's host (reached over the site's own SSH login)")
    parser.add_argument("--agent-command", default="labferry", metavar="CMD",
                        help="how Ferry is started on that host (default: labferry on its PATH)")


def client_for(args: argparse.Namespace):
    from app.agent.client import site_client
    from app.agent.watch import note_agent
    from app.sites import SiteBook
    from app.store import Store
    from backends.core.errors import Unavailable

    name = args.on.removeprefix("site:").strip("/")
    with Store() as store:
        site = SiteBook(store).get(name)
    try:
        client = site_client(site, args.agent_command)
    except Unavailable as exc:  # the site profile remembers what trying found
        note_agent(name, None, str(exc))
        raise
    note_agent(name, client.version)
    return client


def run_agent(args: argparse.Namespace) -> int:
    if args.stdio:
        from app.agent.bridge import stdio

        return stdio()
    if args.status or args.stop:
        return _local(args)
    import asyncio
    import logging

    from app.agent.server import Agent

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    agent = Agent(idle=args.idle_minutes * 60)
    print(f"labferry agent: listening on {agent.path} (reach it with ssh HOST labferry agent --stdio).",
          file=sys.stderr, flush=True)
    asyncio.run(agent.run())
    return 0


def _local(args: argparse.Namespace) -> int:
    from app.agent.bridge import connect
    from app.agent.protocol import socket_path
    from app.paths import data_dir

    path = socket_path(data_dir())
    sock = connect(path)
    if sock is None:
        print("No agent runs here." if args.status else "No agent runs here; nothing to stop.")
        return 0 if args.status else 1
    with sock, sock.makefile("rwb") as stream:
        said = json.loads(stream.readline())
        stream.write(json.dumps({"id": 1, "verb": "stop" if args.stop else "jobs"}).encode() + b"\n")
        stream.flush()
        answer = json.loads(stream.readline())
    if args.stop:
        print(f"The agent (Ferry {said['version']}) is stopping; its unfinished jobs resume when it starts again.")
        return 0
    jobs = answer.get("result") or []
    waiting = sum(j["state"] in ("queued", "running") for j in jobs)
    print(f"The agent (Ferry {said['version']}) runs on {path}: {len(jobs)} jobs, {waiting} queued or running.")
    return 0


def run_job_verb(args: argparse.Namespace) -> int:
    with client_for(args) as client:
        view = client.call(args.verb, job=args.job)
    print(f"Job {view['id']} on {args.on}: {view['state']}.")
    return 0


def print_remote_queue(jobs: list[dict], as_json: bool, where: str) -> None:
    if as_json:
        for job in jobs:
            print(json.dumps(job))
        return
    if not jobs:
        print(f"The queue on {where} is empty.")
    for job in jobs:
        print(f"{job['id']:>5}  {job['state']:<9}  {job['bytes_done']}/{job['bytes_total']}  {job['source']} → "
              f"{job['dest']}")
        if job.get("error"):
            print(f"       {job['error']}")

