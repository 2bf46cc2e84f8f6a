#!/usr/bin/env python3
"""SSH from a Windows laptop: one OpenSSH login per stream against paramiko's SFTP over one login.

Windows' OpenSSH client has no ControlMaster and Windows' event loop cannot poll a pipe, so there Ferry either
logs in once per stream (``backends/ssh/direct.py``: each stream an ``ssh host COMMAND`` whose output is read
through the loop's subprocess pipes) or, with no ssh client at all, uses paramiko's SFTP. This benchmark runs
Ferry as Windows (``tests/other_os.py windows``: what Windows' Python lacks taken away) both ways, beside Ferry
as it runs on Linux and macOS (ControlMaster streams, the output spliced into the file) and OpenSSH's ``scp``.
Needs root and ``../shared/tools/wanem``; sshd, ssh, scp. A stock sshd runs on host b; host a fetches each
size with each tool in turn, rounds interleaved. Figures are size / wall-clock time of the whole command, and
the share of the link's rate; every copy's SHA-256 is compared with the server's file.

    sudo .venv/bin/python tests/bench/laptop_ssh_wan.py --rtt 50 --loss 1e-4 --rate 1000 --size 1G,4G \\
        [--jitter 0] [--rounds 3] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import os
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

TOOLS = ("ferry windows logins", "ferry windows paramiko", "ferry linux", "scp")
NET = 94


def command(tool: str, server: Sshd, host: str, remote: str, out: Path, empty_bin: Path) -> list[str]:
    if tool == "scp":
        return ["scp", "-q", "-i", str(server.key), "-o", f"UserKnownHostsFile={server.known_hosts}",
                "-o", "BatchMode=yes", "-P", str(server.port), f"{server.user}@{host}:{remote}", str(out)]
    url = f"sftp://{server.user}@{host}:{server.port}{remote}"
    copy = ["copy", url, str(out), *server.args(), "--streams", "auto", "--json", "-q", "--overwrite"]
    if tool == "ferry linux":
        return [sys.executable, "-m", "app", *copy]
    path = str(empty_bin) if tool == "ferry windows paramiko" else os.environ["PATH"]  # no ssh: paramiko
    return ["env", f"PYTHONPATH={ROOT}", f"PATH={path}", sys.executable, "-m", "tests.other_os", "windows",
            "--no-import-check", *copy]


def bench(args: argparse.Namespace, work: Path, sizes: list[int]) -> list[dict]:
    link = f"lw{NET}"
    link_up(link, NET, args)
    host = f"198.18.{NET}.2"
    server = Sshd(work / "sshd", listen=host).start(argv_prefix=tuple(on_host(link, "b")))
    empty_bin = work / "empty-bin"
    empty_bin.mkdir(exist_ok=True)
    rows = []
    try:
        digests, names = serve_files(work, sizes, [server])
        ns = on_host(link, "a")
        (work / "out").mkdir(exist_ok=True)
        for r in range(args.rounds):
            for size in sizes:
                for tool in rotated(TOOLS, r):
                    out = work / "out" / names[size]
                    warm_cache(work / "data" / names[size])
                    argv = command(tool, server, host, str(server.home / names[size]), out, empty_bin)
                    row = timed_copy(tool, [*ns, *argv], out, work, size, digests[size])
                    rows.append(record_row(row, args, r, size, width=24))
        shutil.rmtree(work / "out", ignore_errors=True)
    finally:
        server.stop()
        link_down(link)
    return rows


def render(rows: list[dict], args: argparse.Namespace, sizes: list[int], command_line: str) -> str:
    lines = [
        "## SSH from a Windows laptop: a login per stream or paramiko",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt:g} ms, loss "
        f"{args.loss:g}, {args.rate} Mbit/s, jitter {args.jitter:g} ms, cubic, untuned buffers): a stock sshd on "
        "host b; host a fetches with each tool in turn, rounds interleaved, median of "
        f"{args.rounds}. *As Windows* is Ferry run by `tests/other_os.py windows` (no ControlMaster, no pipe "
        "polled by the loop, no `os.pread`/`os.pwrite`, no `fcntl`), with the OpenSSH client in PATH (a login "
        "per stream) or without one (paramiko's SFTP). Mbit/s = size / wall-clock time of the whole command; "
        "% = share of the link's rate. Every copy's SHA-256 was compared with the server's file.",
        "",
        "| file | as Windows, a login per stream | as Windows, paramiko | Linux/macOS, ControlMaster | `scp` | "
        "logins / paramiko | logins / Linux | streams (logins) | SHA-256 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    share = lambda v: f"{v:.0f} ({v / args.rate:.0%})"  # noqa: E731
    for size in sizes:
        logins, paramiko, linux, scp = (median_rate(rows, size, tool) for tool in TOOLS)
        streams = sorted({r["streams"] for r in rows if r["size_mib"] == size // MiB and r.get("streams")
                          and r["tool"] == TOOLS[0]})
        ok = all(r["sha256_ok"] for r in rows if r["size_mib"] == size // MiB)
        runs = sum(1 for r in rows if r["size_mib"] == size // MiB)
        lines.append(f"| {size // MiB} MiB | {share(logins)} | {share(paramiko)} | {share(linux)} | {share(scp)} | "
                     f"{logins / paramiko:.1f}× | {logins / linux:.0%} | {', '.join(map(str, streams))} | "
                     f"{'all ' + str(runs) + ' matched' if ok else '**MISMATCH**'} |")
    lines += ["", "Every round (Mbit/s):", "", "| round | file | " + " | ".join(TOOLS) + " |",
              "|---|---|" + "---|" * len(TOOLS)]
    for r in range(1, args.rounds + 1):
        for size in sizes:
            cell = {row["tool"]: row for row in rows if row["round"] == r and row["size_mib"] == size // MiB}
            lines.append(f"| {r} | {size // MiB} MiB | " + " | ".join(
                "not run" if t not in cell else f"{cell[t]['mbps']:.0f}" if cell[t]["exit"] == 0 else "failed"
                for t in TOOLS) + " |")
    lines += ["", "Reproduce:", "", "```", command_line, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = path_arguments(__doc__, rtt=50, loss=1e-4, work="/tmp/ferry-bench-laptop-ssh")
    args = parser.parse_args()
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    rows = bench(args, work, sizes)
    text = render(rows, args, sizes, "sudo .venv/bin/python tests/bench/laptop_ssh_wan.py " + " ".join(sys.argv[1:]))
    if not args.json:
        print(text)
    if args.write:
        replace_section(args.write, "## SSH from a Windows laptop", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
