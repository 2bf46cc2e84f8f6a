#!/usr/bin/env python3
"""Ferry's native FTP client against aria2c -x16 and lftp pget -n 16, from a stock vsftpd on an emulated path.

Needs root and ``../shared/tools/wanem``; vsftpd, aria2c and lftp. vsftpd (anonymous, as the public archives
serve) runs on host b; host a fetches each file size with each tool in turn, rounds interleaved so that machine
noise hits every tool alike. Figures are size / wall-clock time of the whole command (start-up, logins, the
last byte written; Ferry's SHA-256 and checks included), and the share of the link's rate. Every copy's SHA-256
is compared with the server's file. Ferry runs with ``--streams auto`` and a fresh data folder each time (cold:
nothing learned from earlier runs).

    sudo .venv/bin/python tests/bench/ftp_wan.py --rtt 80 --loss 3e-4 --rate 1000 --size 1G,4G \\
        [--jitter 0] [--rounds 3] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from backends.streams.hashing import hash_file  # noqa: E402
from tests.bench.https_wan import make_file  # noqa: E402
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
    timed_copy,
    warm_cache,
)
from tests.servers.ftp import Vsftpd  # noqa: E402

TOOLS = ("ferry", "aria2c", "lftp")
NET = 91


def command(tool: str, url: str, out: Path) -> list[str]:
    if tool == "ferry":
        return [sys.executable, "-m", "app", "copy", url, str(out), "--streams", "auto", "--json", "-q",
                "--overwrite"]
    if tool == "aria2c":
        return ["aria2c", "-x16", "-s16", "-k1M", "--summary-interval=0", "--console-log-level=warn",
                "--allow-overwrite=true", "--file-allocation=none", "-d", str(out.parent), "-o", out.name, url]
    return ["lftp", "-c", f"set xfer:clobber on; pget -n 16 {url} -o {out}"]


def bench(args: argparse.Namespace, work: Path, sizes: list[int]) -> list[dict]:
    link = f"fw{NET}"
    link_up(link, NET, args)
    server = Vsftpd(work / "vsftpd", listen=f"198.18.{NET}.2", argv_prefix=tuple(on_host(link, "b")))
    rows = []
    try:
        digests = {}
        for size in sizes:
            name = f"big-{size // MiB}M.bin"
            make_file(work / "data" / name, size)
            if not (server.anon / name).exists():
                os.link(work / "data" / name, server.anon / name)
            os.chmod(server.anon / name, 0o644)
            digests[size] = hash_file(work / "data" / name)["sha256"]
        server.start()
        ns = on_host(link, "a")
        (work / "out").mkdir(exist_ok=True)
        for r in range(args.rounds):
            for size in sizes:
                name = f"big-{size // MiB}M.bin"
                for tool in rotated(TOOLS, r):
                    warm_cache(work / "data" / name)
                    out = work / "out" / name
                    row = timed_copy(tool, [*ns, *command(tool, server.url(name), out)], out, work, size,
                                     digests[size])
                    rows.append(record_row(row, args, r, size, width=7))
        for old in (work / "out").iterdir():
            old.unlink()
    finally:
        server.stop()
        link_down(link)
    return rows


def render(rows: list[dict], args: argparse.Namespace, sizes: list[int], command_line: str) -> str:
    lines = [
        "## Native FTP client (ftp://) on an emulated long fat network",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt} ms, loss "
        f"{args.loss:g}, {args.rate} Mbit/s, jitter {args.jitter} ms, cubic on both hosts, untuned Linux buffers): "
        "a stock vsftpd 3.0.3 serves anonymous downloads on host b, each tool fetches on host a; rounds "
        "interleaved (the first tool changes every round), median of "
        f"{args.rounds}. Mbit/s = size / wall-clock time of the whole command (start-up, logins, Ferry's SHA-256 and "
        "size/date checks included); % = share of the link's rate. Every copy's SHA-256 was compared with the "
        "server's file.",
        "",
        "| file | Ferry `--streams auto` | aria2c -x16 -s16 -k1M | lftp `pget -n 16` | Ferry / better peer | "
        "Ferry streams | SHA-256 |",
        "|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        ferry, aria, lftp = (median_rate(rows, size, tool) for tool in TOOLS)
        share = lambda v: f"{v:.0f} ({v / args.rate:.0%})"  # noqa: E731
        streams = sorted({r.get("streams") for r in rows if r["size_mib"] == size // MiB and r["tool"] == "ferry"
                          and r.get("streams")})
        ok = all(r["sha256_ok"] for r in rows if r["size_mib"] == size // MiB)
        runs = sum(1 for r in rows if r["size_mib"] == size // MiB)
        lines.append(f"| {size // MiB} MiB | {share(ferry)} | {share(aria)} | {share(lftp)} | "
                     f"{ferry / max(aria, lftp):.2f}× | {', '.join(map(str, streams))} | "
                     f"{'all ' + str(runs) + ' matched' if ok else '**MISMATCH**'} |")
    lines += ["", "Every round:", "", "| round | file | Ferry | aria2c | lftp |", "|---|---|---|---|---|"]
    for r in range(1, args.rounds + 1):
        for size in sizes:
            cell = {row["tool"]: row for row in rows if row["round"] == r and row["size_mib"] == size // MiB}
            lines.append(f"| {r} | {size // MiB} MiB | " + " | ".join(
                f"{cell[t]['mbps']:.0f}" if t in cell and cell[t]["exit"] == 0 else "failed" for t in TOOLS) + " |")
    lines += ["", "Reproduce:", "", "```", command_line, "```", ""]
    return "\n".join(lines)


def main() -> int:
    args = path_arguments(__doc__, rtt=80, loss=3e-4, work="/tmp/ferry-bench-ftp").parse_args()
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    rows = bench(args, work, sizes)
    text = render(rows, args, sizes, "sudo .venv/bin/python tests/bench/ftp_wan.py " + " ".join(sys.argv[1:]))
    if not args.json:
        print(text)
    if args.write:
        replace_section(args.write, "## Native FTP client (ftp://)", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
