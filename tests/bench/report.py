"""Shared by the benchmarks: putting a section into docs/benchmarks.md."""

from __future__ import annotations

import argparse
import os
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
    """Replace the section that starts with ``heading`` (a ``## …`` line) with ``text``, or append it."""
    target = Path(target)
    old = target.read_text() if target.exists() else "# Benchmarks\n"
    start = old.find(heading)
    if start >= 0:
        end = old.find("\n## ", start + len(heading))
        old = old[:start] + old[end + 1:] if end >= 0 else old[:start]
    target.write_text(old.rstrip() + "\n\n" + text.rstrip() + "\n")


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

    if os.geteuid() != 0 or not WANEM.exists():
        print("needs root and ../shared/tools/wanem", file=sys.stderr)
        return None
    precompile()
    work = Path(args.work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)
    size = args.size_mib * MiB
    make_file(work / "data" / "big.bin", size)
    return work, size
