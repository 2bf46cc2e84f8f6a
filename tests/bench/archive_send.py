#!/usr/bin/env python3
"""A run folder sent over a long fat network as one archive: ``labferry copy FOLDER sftp://…/ --pack`` beside
``tar c | ssh`` (the same archive, one stream) and Ferry's own folder copy (the files as files); also
``--pack --compress off``, to tell what the parallel streams give from what zstd on the wire gives.

Needs root and ``../shared/tools/wanem``; sshd, ssh, tar. A stock sshd runs on host b of a wanem link with the
path the arguments give; host a holds the folder (``archive_pack.make_set``: ``--files`` text files of 1-16 KiB
in nested folders) and sends it with each tool in turn, rounds interleaved and the order rotated. The page
cache is dropped before each run (the folder is read cold, as on a cluster's file system after a run). Every
result is checked on the server: each archive is read back member by member against the sources' SHA-256, the
folder copy's files the same way. Figures: the folder's bytes / wall time of the whole command, and the % of the
link it is.

    sudo .venv/bin/python tests/bench/archive_send.py --files 30000 --rtt 50 --loss 1e-3 --rate 1000 \\
        --rounds 3 --json --write docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.archive_pack import check_archive, check_tree, drop_caches, make_set  # noqa: E402
from tests.bench.report import link_down, link_up, on_host, precompile, replace_section, rotated  # noqa: E402
from tests.servers.sshd import Sshd  # noqa: E402

HEADING = "## Sending a run folder as one archive"
TOOLS = ("ferry --pack", "ferry --pack --compress off", "ferry folder", "tar c | ssh")
LINK, NET = "ap", 77


class Sender:
    """The three ways host a sends ``src`` into ``incoming`` on the server."""

    def __init__(self, server: Sshd, host: str, work: Path) -> None:
        self.s, self.host, self.work = server, host, work
        self.ns = on_host(LINK, "a")
        self.ssh = ["ssh", "-i", str(server.key), "-o", f"UserKnownHostsFile={server.known_hosts}",
                    "-o", "BatchMode=yes", "-p", str(server.port), f"{server.user}@{host}"]

    def argv(self, tool: str, src: Path, incoming: Path) -> tuple[list[str], dict]:
        if tool == "tar c | ssh":
            script = (f"tar -C {shlex.quote(str(src.parent))} -cf - {shlex.quote(src.name)} | "
                      + " ".join(map(shlex.quote, self.ssh)) + f" 'cat > {incoming}/{src.name}.tar'")
            return [*self.ns, "sh", "-c", script], dict(os.environ)
        home = tempfile.mkdtemp(prefix="ferryhome", dir=self.work)
        url = f"sftp://{self.s.user}@{self.host}:{self.s.port}{incoming}/"
        extra = tool.split()[1:] if tool.startswith("ferry --pack") else []  # the flags are in the name
        return ([*self.ns, sys.executable, "-m", "app", "copy", str(src), url, *self.s.args(), *extra, "--json",
                 "-q"], dict(os.environ, LABFERRY_HOME=home, PYTHONPATH=str(ROOT)))


def run_once(sender: Sender, tool: str, src: Path, digests: dict, incoming: Path) -> dict:
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir()
    sender.s.give(incoming)
    drop_caches()
    argv, env = sender.argv(tool, src, incoming)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=7200)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime  # the sender's side (host a)
    row = {"tool": tool, "wall_s": round(wall, 3), "cpu_s": round(cpu, 2), "exit": proc.returncode}
    if proc.returncode != 0:
        row["failed"] = " ".join(proc.stderr.split())[-300:]
        return row
    if tool == "ferry folder":
        check_tree(incoming / src.name, digests)
    else:
        check_archive(incoming / f"{src.name}.tar", digests)
    if tool.startswith("ferry"):
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        row |= {"streams": result.get("streams"), "verified": result.get("verified"),
                "on_wire": result.get("bytes_on_wire")}
    return row


def render(rows: list[dict], args, data_bytes: int, files: int, command_line: str) -> str:
    link = args.rate * 1e6
    lines = [f"{HEADING} ({files:,} files)", "",
             f"{files:,} files of 1-16 KiB of text ({data_bytes / 1e9:.2f} GB) on host a, sent to a stock OpenSSH "
             f"sshd on host b over wanem's {args.rtt:g} ms / {args.loss:g} loss / {args.rate} Mbit/s path; "
             f"{args.rounds} round{'s' if args.rounds > 1 else ''} interleaved, order rotated, page cache dropped "
             "before each run, every file checked on the server. Rate: the folder's bytes / wall time of the whole "
             "command; CPU: the sender's processes on host a (the server's sshd shares the same cores).", "",
             f"    {command_line}", "",
             f"| tool | median s | Mbit/s | % of link | sender's CPU s (% of {os.cpu_count()} cores) | Ferry --pack is "
             "| runs |",
             "|---|---|---|---|---|---|---|"]
    tools = args.tools.split(",")
    walls = {t: [r["wall_s"] for r in rows if r["tool"] == t and r["exit"] == 0] for t in tools}
    medians = {t: statistics.median(w) for t, w in walls.items() if w}
    ours = medians.get("ferry --pack")
    for tool in tools:
        if tool not in medians:
            lines.append(f"| {tool} | failed | | | | 0 |")
            continue
        rate = data_bytes * 8 / medians[tool]
        ratio = f"{medians[tool] / ours:.2f}× faster" if ours and tool != "ferry --pack" else "—"
        shown = tool.replace("|", "\\|")  # a pipe inside a table cell
        cpu = statistics.median(r["cpu_s"] for r in rows if r["tool"] == tool and r["exit"] == 0)
        cores = os.cpu_count() or 1
        lines.append(f"| {shown} | {medians[tool]:.1f} | {rate / 1e6:.0f} | {100 * rate / link:.0f} % | {cpu:.1f} "
                     f"({100 * cpu / medians[tool] / cores:.0f} %) | {ratio} | {len(walls[tool])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=300_000)
    parser.add_argument("--rtt", type=float, default=50)
    parser.add_argument("--loss", type=float, default=1e-3)
    parser.add_argument("--rate", type=int, default=1000, help="Mbit/s")
    parser.add_argument("--jitter", type=float, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--work", default="/tmp/labferry-bench-archive")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--write", metavar="MARKDOWN")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: wanem's namespaces, and each run drops the page cache", file=sys.stderr)
        return 2
    precompile()
    work = Path(args.work)
    src, digests = make_set("millions", work, args.files, 0)
    data_bytes = sum((src / rel).stat().st_size for rel in digests)
    link_up(LINK, NET, args)
    host = f"198.18.{NET}.2"
    server = Sshd(work / "sshd-send", listen=host).start(argv_prefix=tuple(on_host(LINK, "b")))
    rows = []
    try:
        sender = Sender(server, host, work)
        for round_no in range(args.rounds):
            for tool in rotated(tuple(args.tools.split(",")), round_no):
                row = run_once(sender, tool, src, digests, server.home / "incoming") | {"round": round_no}
                rows.append(row)
                print(json.dumps(row) if args.json else f"  {tool:<14} {row['wall_s']:8.1f} s", flush=True)
    finally:
        server.stop()
        link_down(LINK)
    text = render(rows, args, data_bytes, len(digests),
                  "sudo .venv/bin/python tests/bench/archive_send.py " + " ".join(sys.argv[1:]))
    print(text)
    if args.write:
        replace_section(args.write, f"{HEADING} ({len(digests):,} files)", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
