#!/usr/bin/env python3
"""An SFTP-only account at speed: Ferry against OpenSSH's ``sftp`` client, and against Ferry on a shell account.

Needs root and ``../shared/tools/wanem``; sshd, ssh, sftp. Two stock sshd run on host b for the same test user
and key: one forces ``internal-sftp`` (an SFTP-only account: no ``dd``, no ``sha256sum``), one gives the user a
shell. Host a fetches each file size with each tool in turn, rounds interleaved: Ferry from the SFTP-only account
(``--streams auto``), ``sftp`` from it (OpenSSH's client: one session, 64 requests of 32 KiB in flight), and
Ferry from the shell account (its parallel ``dd`` path: the figure the SFTP-only one is held to). Figures are
size / wall-clock time of the whole command, and the share of the link's rate; every copy's SHA-256 is compared
with the server's file.

    sudo .venv/bin/python tests/bench/sftp_only_wan.py --rtt 100 --loss 1e-3 --rate 1000 --size 1G,4G \\
        [--jitter 0] [--rounds 3] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.report import (  # noqa: E402
    MiB,
    link_down,
    link_up,
    median_rate,
    on_host,
    path_arguments,
    prepare_path,
    record_row,
    replace_section,
    rotated,
    serve_files,
    timed_copy,
    warm_cache,
)
from tests.servers.sshd import Sshd  # noqa: E402

TOOLS = ("ferry sftp-only", "sftp", "ferry shell")
NET = 92


def command(tool: str, servers: dict[str, Sshd], host: str, remote: str, out: Path) -> list[str]:
    server = servers["shell" if tool == "ferry shell" else "sftp-only"]
    if tool == "sftp":
        return ["sftp", "-q", "-i", str(server.key), "-o", f"UserKnownHostsFile={server.known_hosts}",
                "-o", "BatchMode=yes", "-P", str(server.port), f"{server.user}@{host}:{remote}", str(out)]
    url = f"sftp://{server.user}@{host}:{server.port}{remote}"
    return [sys.executable, "-m", "app", "copy", url, str(out), *server.args(), "--streams", "auto", "--json", "-q",
            "--overwrite"]


def bench(args: argparse.Namespace, work: Path, sizes: list[int]) -> list[dict]:
    link = f"so{NET}"
    link_up(link, NET, args)
    host = f"198.18.{NET}.2"
    prefix = tuple(on_host(link, "b"))
    shell = Sshd(work / "sshd-shell", listen=host).start(argv_prefix=prefix)
    only = Sshd(work / "sshd-sftp-only", listen=host, sftp_only=True, user=shell.user,
                client_key=shell.key).start(argv_prefix=prefix)
    servers = {"shell": shell, "sftp-only": only}
    rows = []
    try:
        digests, remotes = serve_files(work, sizes, servers.values())
        ns = on_host(link, "a")
        (work / "out").mkdir(exist_ok=True)
        for r in range(args.rounds):
            for size in sizes:
                for tool in rotated(TOOLS, r):
                    if tool == "sftp" and r >= args.sftp_rounds:
                        continue  # one sftp stream on a lossy path takes many minutes per file; its rate is steady
                    server = servers["shell" if tool == "ferry shell" else "sftp-only"]
                    remote = str(server.home / remotes[size])
                    out = work / "out" / remotes[size]
                    warm_cache(work / "data" / remotes[size])
                    row = timed_copy(tool, [*ns, *command(tool, servers, host, remote, out)], out, work, size,
                                     digests[size])
                    rows.append(record_row(row, args, r, size))
        shutil.rmtree(work / "out", ignore_errors=True)
    finally:
        only.stop()
        shell.stop()
        link_down(link)
    return rows


def render(rows: list[dict], args: argparse.Namespace, sizes: list[int], command_line: str) -> str:
    lines = [
        "## SFTP-only accounts on an emulated long fat network",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt} ms, loss {args.loss:g}, "
        f"{args.rate} Mbit/s, jitter {args.jitter} ms, cubic, untuned buffers): two stock OpenSSH sshd on host b for "
        "the same user and key, one forcing `internal-sftp` (an SFTP-only account), one with a shell; host a "
        "fetches with each tool in turn, rounds interleaved, median of "
        f"{args.rounds} (OpenSSH's `sftp`: {args.sftp_rounds} round{'s' if args.sftp_rounds != 1 else ''}, minutes "
        "per file). Mbit/s = size / wall-clock time of the whole command; % = share of the link's rate. Every "
        "copy's SHA-256 was compared with the server's file.",
        "",
        "| file | Ferry, SFTP-only | OpenSSH `sftp`, SFTP-only | Ferry, shell account | Ferry SFTP-only / sftp | "
        "SFTP-only / shell | Ferry streams | SHA-256 |",
        "|---|---|---|---|---|---|---|---|",
    ]

    for size in sizes:
        only, sftp, shell = (median_rate(rows, size, tool) for tool in TOOLS)
        streams = sorted({r["streams"] for r in rows if r["size_mib"] == size // MiB and r.get("streams")
                          and r["tool"] == "ferry sftp-only"})
        ok = all(r["sha256_ok"] for r in rows if r["size_mib"] == size // MiB)
        runs = sum(1 for r in rows if r["size_mib"] == size // MiB)
        share = lambda v: f"{v:.0f} ({v / args.rate:.0%})"  # noqa: E731
        lines.append(f"| {size // MiB} MiB | {share(only)} | {share(sftp)} | {share(shell)} | {only / sftp:.1f}× | "
                     f"{only / shell:.0%} | {', '.join(map(str, streams))} | "
                     f"{'all ' + str(runs) + ' matched' if ok else '**MISMATCH**'} |")
    lines += ["", "Every round:", "", "| round | file | " + " | ".join(TOOLS) + " |", "|---|---|---|---|---|"]
    for r in range(1, args.rounds + 1):
        for size in sizes:
            cell = {row["tool"]: row for row in rows if row["round"] == r and row["size_mib"] == size // MiB}
            lines.append(f"| {r} | {size // MiB} MiB | " + " | ".join(
                "not run" if t not in cell else f"{cell[t]['mbps']:.0f}" if cell[t]["exit"] == 0 else "failed"
                for t in TOOLS) + " |")
    lines += ["", "Reproduce:", "", "```", command_line, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = path_arguments(__doc__, rtt=100, loss=1e-3, work="/tmp/ferry-bench-sftp-only")
    parser.add_argument("--sftp-rounds", type=int, default=1, help="rounds that include OpenSSH's sftp (slow)")
    args = parser.parse_args()
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    rows = bench(args, work, sizes)
    text = render(rows, args, sizes, "sudo .venv/bin/python tests/bench/sftp_only_wan.py " + " ".join(sys.argv[1:]))
    if not args.json:
        print(text)
    if args.write:
        replace_section(args.write, "## SFTP-only accounts", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
