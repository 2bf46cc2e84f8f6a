#!/usr/bin/env python3
"""A run folder uploaded over FTP: Ferry against lftp ``mirror -R``, to a stock vsftpd on an emulated path.

Needs root and ``../shared/tools/wanem``; vsftpd and lftp. The folder is shaped like a finished run: many small
files (``--files`` of ``--small`` bytes each) beside one large one (``--size``). Host a uploads it to vsftpd's
password user on host b, each tool in turn, rounds interleaved. Every upload since issue 54 takes a lock per file
on the server and checks each file at its final name: a second Ferry checkout given in ``FERRY_BEFORE`` (a
folder holding ``app/``, e.g. a ``git worktree`` of an older commit) runs as its own peer, so the cost is measured
in the same rounds. Figures are bytes / wall-clock time of the whole command; % = share of the link's rate. Every
uploaded tree is compared with the source, file by file (SHA-256).

    sudo .venv/bin/python tests/bench/ftp_upload_wan.py --rtt 50 --loss 1e-4 --rate 1000 --files 300 \\
        --small 32K --size 256M [--rounds 3] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
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
    on_host,
    path_arguments,
    prepare_path,
    record_row,
    replace_section,
    rotated,
    size_of,
)
from tests.servers.ftp import Vsftpd  # noqa: E402

NET = 93
HEADING = "## FTP folder upload on an emulated long fat network"


def peers() -> tuple[tuple[str, Path | None], ...]:
    """(name, checkout) of each tool measured: Ferry here, an older Ferry when FERRY_BEFORE names one, lftp."""
    before = os.environ.get("FERRY_BEFORE")
    found = [("ferry", ROOT)]
    if before and (Path(before) / "app").is_dir():
        found.append(("ferry-before", Path(before)))
    return (*found, ("lftp", None))


def command(tool: str, checkout: Path | None, source: Path, url: str) -> list[str]:
    if checkout is not None:
        return [sys.executable, "-m", "app", "copy", f"{source}/", url, "--json", "-q", "--overwrite"]
    return ["lftp", "-c", f"open {url}; mirror -R --parallel=16 --no-perms {source} {source.name}"]


def make_run(folder: Path, files: int, small: int, large: int) -> dict[str, str]:
    """The run folder (``files`` small files in 10 subfolders, one large file): {relative path: SHA-256}."""
    for index in range(files):
        target = folder / f"s{index % 10}" / f"sample{index:06d}.vcf"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(os.urandom(small))
    make_file(folder / "reads.bam", large)
    return {str(p.relative_to(folder)): hash_file(p)["sha256"] for p in folder.rglob("*") if p.is_file()}


def timed_upload(tool: str, checkout: Path | None, argv: list[str], landed: Path, digests: dict[str, str],
                 work: Path) -> dict:
    shutil.rmtree(landed, ignore_errors=True)
    home = Path(tempfile.mkdtemp(prefix="ferryhome", dir=work))
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, cwd=checkout or work,
                          env=dict(os.environ, LABFERRY_HOME=str(home)))
    spent = time.monotonic() - began
    size = sum((landed / rel).stat().st_size for rel in digests if (landed / rel).exists())
    got = {str(p.relative_to(landed)): hash_file(p)["sha256"] for p in landed.rglob("*") if p.is_file()} \
        if landed.exists() else {}
    row = {"tool": tool, "exit": proc.returncode, "seconds": round(spent, 2), "mbps": round(size * 8 / spent / 1e6, 1),
           "files": len(got), "sha256_ok": proc.returncode == 0 and got == digests}
    if proc.returncode != 0:
        row["error"] = proc.stderr.strip()[-300:]
    shutil.rmtree(home, ignore_errors=True)
    return row


def bench(args, work: Path) -> tuple[list[dict], dict[str, str]]:
    link = f"fu{NET}"
    link_up(link, NET, args)
    server = Vsftpd(work / "vsftpd", listen=f"198.18.{NET}.2", argv_prefix=tuple(on_host(link, "b")))
    source = work / "data" / "run"
    digests = make_run(source, args.files, size_of(args.small), size_of(args.size))
    os.chmod(work / "data", 0o755)
    rows = []
    try:
        server.start()
        for r in range(args.rounds):
            for tool, checkout in rotated(peers(), r):
                landed = server.user_root / "run"
                url = server.url("", user=True)  # the login's folder: the run lands in run/ there
                row = timed_upload(tool, checkout, [*on_host(link, "a"), *command(tool, checkout, source, url)],
                                   landed, digests, work)
                rows.append(record_row(row, args, r, sum((source / rel).stat().st_size for rel in digests), 12))
    finally:
        server.stop()
        link_down(link)
    return rows, digests


def render(rows: list[dict], args, digests: dict[str, str], command_line: str) -> str:
    import statistics

    tools = [t for t, _ in peers()]
    median = {t: statistics.median([r["seconds"] for r in rows if r["tool"] == t and r["exit"] == 0] or [float("nan")])
              for t in tools}
    total = rows[0]["size_mib"] if rows else 0
    lines = [HEADING, "", f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt:g} ms, "
             f"loss {args.loss:g}, {args.rate} Mbit/s): a stock vsftpd on host b takes a run folder of {args.files} "
             f"files of {args.small} and one of {args.size} ({len(digests)} files, {total} MiB) from host a; rounds "
             f"interleaved, median of {args.rounds}. Seconds are the whole command's; Mbit/s = bytes / those "
             "seconds; % = share of the link. `ferry-before` is the commit before uploads took a lock per file and "
             "checked each at its final name (56ef504), measured in the same rounds.", "",
             "| tool | seconds | Mbit/s (% of link) | files landed, SHA-256 |", "|---|---|---|---|"]
    for t in tools:
        mine = [r for r in rows if r["tool"] == t]
        ok = all(r["sha256_ok"] for r in mine)
        rate = total * MiB * 8 / median[t] / 1e6
        lines.append(f"| {t} | {median[t]:.1f} | {rate:.0f} ({rate / args.rate:.0%}) | "
                     f"{'all ' + str(len(mine)) + ' runs matched' if ok else 'MISMATCH or failure'} |")
    lines += ["", "Every round (seconds):", "", "| round | " + " | ".join(tools) + " |",
              "|---|" + "---|" * len(tools)]
    for r in range(1, args.rounds + 1):
        cell = {row["tool"]: row for row in rows if row["round"] == r}
        lines.append(f"| {r} | " + " | ".join(f"{cell[t]['seconds']:.1f}" if t in cell and cell[t]["exit"] == 0
                                              else "failed" for t in tools) + " |")
    lines += ["", "Reproduce (`FERRY_BEFORE` a worktree of the older commit):", "", "```", command_line, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = path_arguments(__doc__, rtt=50, loss=1e-4, work="/tmp/ferry-bench-ftp-up")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--small", default="32K")
    parser.set_defaults(size="256M")
    args = parser.parse_args()
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    rows, digests = bench(args, prepared[0])
    text = render(rows, args, digests, "sudo FERRY_BEFORE=… .venv/bin/python tests/bench/ftp_upload_wan.py "
                  + " ".join(sys.argv[1:]))
    if not args.json:
        print(text)
    if args.write:
        replace_section(args.write, HEADING, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
