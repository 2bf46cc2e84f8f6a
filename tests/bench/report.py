"""Shared by the benchmarks: putting a section into docs/benchmarks.md."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

WANEM = Path(__file__).resolve().parents[3] / "shared" / "tools" / "wanem"
MiB = 1024 * 1024


def on_host(link: str, host: str) -> list[str]:
    """The argv prefix that runs a command on host ``a`` or ``b`` of a wanem link: what ``wanem exec`` runs
    (``ip netns exec NAME-a``), without starting wanem's Python first - behind a pyenv shim that took ~0.2 s
    per command, the same for every tool measured, so it only blurred the differences between them."""
    return ["ip", "netns", "exec", f"{link}-{host}"]


def replace_section(target: Path | str, heading: str, text: str) -> None:
    """Replace the section that starts with ``heading`` (a ``## …`` line) with ``text`` where it stands, or
    append it: the sections after it stay after it."""
    target = Path(target)
    old = target.read_text() if target.exists() else "# Benchmarks\n"
    start = old.find(heading)
    if start < 0:
        target.write_text(old.rstrip() + "\n\n" + text.rstrip() + "\n")
        return
    end = old.find("\n## ", start + len(heading))
    after = old[end + 1:] if end >= 0 else ""
    target.write_text(old[:start] + text.rstrip() + "\n" + ("\n" + after if after else ""))


def precompile() -> None:
    """Byte-compile Ferry's sources, as an installed Ferry is: with PYTHONDONTWRITEBYTECODE set (this machine)
    every run would otherwise compile each edited module again (measured: up to 0.1 s per run)."""
    import compileall

    root = Path(__file__).resolve().parents[2]
    for folder in ("app", "backends"):
        compileall.compile_dir(root / folder, quiet=1)


def warm_cache(path: Path) -> None:
    """Read ``path`` once so that the server serves it from memory: every tool is then measured on the network,
    not on this VM's disk (the kernel reclaims pages idle for a while: a run after a long one found the file
    half evicted)."""
    with open(path, "rb") as fh:
        while fh.read(16 * MiB):
            pass


def wan_arguments(doc: str, work: str, loopback_flag: str) -> argparse.ArgumentParser:
    """The options every WAN benchmark takes (``loopback_flag``: ``--loopback`` or ``--no-loopback``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--paths", default="all")
    parser.add_argument(loopback_flag, action="store_true")
    parser.add_argument("--write", metavar="MARKDOWN")
    parser.add_argument("--work", default=work)
    return parser


def prepare_wan(args: argparse.Namespace) -> tuple[Path, int] | None:
    """Root and wanem present? Then the work folder with the 1 GiB test file in data/; else None (said why)."""
    from tests.bench.https_wan import make_file

    work = _work_folder(args)
    if work is None:
        return None
    size = args.size_mib * MiB
    make_file(work / "data" / "big.bin", size)
    return work, size


# -- benchmarks that take their path as arguments (ftp_wan.py, sftp_only_wan.py) ----------------------------------
def path_arguments(doc: str, *, rtt: float, loss: float, work: str) -> argparse.ArgumentParser:
    """The path (``--rtt --loss --rate --jitter``), the file sizes, the rounds and the outputs every such
    benchmark takes."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--rtt", type=float, default=rtt)
    parser.add_argument("--loss", type=float, default=loss)
    parser.add_argument("--rate", type=int, default=1000, help="Mbit/s")
    parser.add_argument("--jitter", type=float, default=0)
    parser.add_argument("--size", default="1G,4G", help="comma-separated sizes: 1G,4G or MiB counts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    parser.add_argument("--write", metavar="MARKDOWN")
    parser.add_argument("--work", default=work)
    return parser


def prepare_path(args: argparse.Namespace) -> tuple[Path, list[int]] | None:
    """Root and wanem present? Then the work folder and the sizes asked for; else None (said why)."""
    work = _work_folder(args)
    return None if work is None else (work, [size_of(s) for s in args.size.split(",")])


def _work_folder(args: argparse.Namespace) -> Path | None:
    """Root and wanem present? Then ``--work`` with its data/ folder, Ferry byte-compiled; else None (said why)."""
    if os.geteuid() != 0 or not WANEM.exists():
        print("needs root and ../shared/tools/wanem", file=sys.stderr)
        return None
    precompile()
    work = Path(args.work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)
    return work


def timed_copy(tool: str, argv: list[str], out: Path, work: Path, size: int, expected: str) -> dict:
    """Run one tool's copy to ``out`` with a fresh Ferry data folder: its row (exit, seconds, Mbit/s, whether the
    copy's SHA-256 is ``expected``; Ferry's streams and own rate from its JSON)."""
    import json
    import shutil
    import tempfile
    import time

    from backends.streams.hashing import hash_file

    for old in out.parent.glob(out.name + "*"):  # the copy and what a tool leaves beside it (aria2c's .aria2)
        old.unlink()
    home = Path(tempfile.mkdtemp(prefix="ferryhome", dir=work))
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, LABFERRY_HOME=str(home)),
                          timeout=3600)
    spent = time.monotonic() - began
    row = {"tool": tool, "exit": proc.returncode, "seconds": round(spent, 2), "mbps": round(size * 8 / spent / 1e6, 1)}
    row["sha256_ok"] = proc.returncode == 0 and out.exists() and hash_file(out)["sha256"] == expected
    if tool.startswith("ferry") and proc.returncode == 0:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        row["streams"], row["own_mbps"] = result.get("streams"), result.get("throughput_mbps")
    if proc.returncode != 0:
        row["error"] = proc.stderr.strip()[-300:]
    shutil.rmtree(home, ignore_errors=True)
    return row


def rated(row: dict, size: int, spent: float, cut: float | None, target: Path, digest: str,
          written: int | None = None) -> dict:
    """``row`` (with its ``exit``) given its rate: a run stopped at its cap after ``cut`` seconds counts what it
    wrote by then (``written``, else ``target``'s size) and has no SHA-256; a whole run is ``size`` over
    ``spent``, its copy checked against ``digest``."""
    from backends.streams.hashing import hash_file

    if cut is not None:
        if written is None:
            written = target.stat().st_size if target.exists() else 0
        row |= {"exit": 0, "partial_bytes": written, "mbps": round(written * 8 / cut / 1e6, 1), "sha256_ok": None}
    else:
        row["mbps"] = round(size * 8 / spent / 1e6, 1)
        row["sha256_ok"] = row["exit"] == 0 and target.exists() and hash_file(target)["sha256"] == digest
    return row


def outcome_lines(rows: list[dict], command: str) -> list[str]:
    """How a run's copies ended (SHA-256, runs stopped at a cap, failures) and the command that reproduces it."""
    bad = [r for r in rows if r.get("sha256_ok") is False and r["exit"] == 0]
    failed = [r for r in rows if r["exit"] != 0]
    cut = [r for r in rows if r.get("partial_bytes") is not None]
    lines = ["", "Every completed copy's SHA-256 matched its source." if not bad
             else f"SHA-256 MISMATCH in {len(bad)} runs."]
    if cut:
        lines.append(f"{len(cut)} run(s) stopped at the cap: " + ", ".join(sorted({r['tool'] for r in cut})) + ".")
    if failed:
        lines.append(f"{len(failed)} run(s) failed and are left out: "
                     + "; ".join(f"{r['tool']} exit {r['exit']}" for r in failed) + ".")
    return [*lines, "", "Reproduce:", "", "```", command, "```", ""]


def link_up(link: str, net: int, args: argparse.Namespace) -> None:
    """A fresh wanem link ``link`` on 198.18.``net``.0/24 with the path the arguments give."""
    subprocess.run([str(WANEM), "down", link], capture_output=True)
    subprocess.run([str(WANEM), "up", link, "--rtt", str(args.rtt), "--rate", str(args.rate), "--loss",
                    str(args.loss), "--jitter", str(args.jitter), "--net", str(net)], check=True, capture_output=True)


def link_down(link: str) -> None:
    subprocess.run([str(WANEM), "down", link], capture_output=True)


def rotated(tools: tuple[str, ...], round_index: int) -> tuple[str, ...]:
    """The tools in this round's order: who goes first changes every round."""
    shift = round_index % len(tools)
    return tools[shift:] + tools[:shift]


def median_rate(rows: list[dict], size: int, tool: str) -> float:
    """The median Mbit/s of ``tool``'s successful runs on files of ``size`` bytes (nan: none)."""
    values = [r["mbps"] for r in rows if r["size_mib"] == size // MiB and r["tool"] == tool and r["exit"] == 0]
    return statistics.median(values) if values else float("nan")


def size_of(text: str) -> int:
    units = {"K": 1024, "M": MiB, "G": 1024 * MiB}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def serve_files(work: Path, sizes: list[int], servers) -> tuple[dict[int, str], dict[int, str]]:
    """One file of each size under ``work/data``, linked into each sshd's home and given to its user: ({size:
    SHA-256}, {size: name})."""
    from backends.streams.hashing import hash_file
    from tests.bench.https_wan import make_file

    digests, names = {}, {}
    for size in sizes:
        name = f"big-{size // MiB}M.bin"
        make_file(work / "data" / name, size)
        for server in servers:
            target = server.home / name
            if not target.exists():
                os.link(work / "data" / name, target)
            server.give(target)
        digests[size], names[size] = hash_file(work / "data" / name)["sha256"], name
    return digests, names


def record_row(row: dict, args: argparse.Namespace, round_index: int, size: int, width: int = 16) -> dict:
    """``row`` with the round, the size and the path, and its share of the link; printed as one JSON line with
    ``--json``, else as a line for a person."""
    import json

    row |= {"round": round_index + 1, "size_mib": size // MiB, "rtt_ms": args.rtt, "loss": args.loss,
            "rate_mbps": args.rate, "jitter_ms": args.jitter, "link_share": round(row["mbps"] / args.rate, 3)}
    if args.json:
        print(json.dumps(row), flush=True)
    else:
        print(f"  round {round_index + 1} {size // MiB:>5} MiB {row['tool']:<{width}} {row['mbps']:7.0f} Mbit/s "
              f"({row['link_share']:.0%} of the link) sha256 {'ok' if row['sha256_ok'] else 'BAD'}"
              f"{'  streams ' + str(row.get('streams')) if row.get('streams') else ''}", flush=True)
    return row
