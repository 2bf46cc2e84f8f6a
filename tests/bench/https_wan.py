#!/usr/bin/env python3
"""Ferry's HTTPS backend against aria2c and curl on emulated long fat networks.

Needs root (network namespaces) and ``../shared/tools/wanem``; nginx, aria2c and
curl on PATH. For each path, a 1 GiB file is served by nginx (TLS) on host b and
fetched on host a by each tool in turn, ``--rounds`` times, interleaved so that
machine noise hits every tool alike; figures are size / wall-clock time of the
whole command (start-up, handshakes and verification included). Ferry runs with
``--streams auto`` and a fresh ``LABFERRY_HOME`` each time (cold: nothing
learned from earlier runs), and once more with the home it has learned in (warm).

Then, on the unshaped loopback, Ferry against aria2c with peak RSS.

    sudo .venv/bin/python tests/bench/https_wan.py [--rounds 3] [--size-mib 1024] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.report import on_host, precompile, replace_section, warm_cache  # noqa: E402
from tests.servers.nginx import Nginx, make_certificates  # noqa: E402

WANEM = ROOT.parent / "shared" / "tools" / "wanem"
PATHS = [  # name, rtt ms, rate Mbit/s, loss, wanem --net
    ("50ms-1e-4", 50, 1000, 1e-4, 41),
    ("100ms-1e-3", 100, 1000, 1e-3, 42),
]
MiB = 1024 * 1024


def sh(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True, **kw)


def make_file(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size == size:
        return
    with open(path, "wb") as fh:
        left = size
        while left:
            block = os.urandom(min(left, 16 * MiB))
            fh.write(block)
            left -= len(block)


def timed(argv: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Wall seconds, exit status and stdout of one command."""
    began = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    out, err = proc.communicate()
    spent = time.monotonic() - began
    if proc.returncode != 0:
        print(f"   ! {' '.join(argv[:6])}… exit {proc.returncode}: {err.strip()[-300:]}", file=sys.stderr)
    return spent, proc.returncode, out


def run_rss(argv: list[str], env: dict | None = None) -> tuple[float, int, int, str]:
    """Wall seconds, exit status, peak RSS (KiB) and stdout of one command, via wait4."""
    with tempfile.TemporaryFile("w+") as out:
        began = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        spent = time.monotonic() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return spent, proc.returncode, usage.ru_maxrss, out.read()


class Tools:
    def __init__(self, url: str, ca: str, out: Path, size: int, ns_prefix: list[str]) -> None:
        self.url, self.ca, self.out, self.size, self.ns = url, ca, out, size, ns_prefix

    def clean(self) -> None:
        for p in self.out.parent.glob(self.out.name + "*"):
            p.unlink()

    def ferry(self, home: Path) -> list[str]:
        return [*self.ns, sys.executable, "-m", "app", "copy", self.url, str(self.out), "--ca-file", self.ca,
                "--streams", "auto", "--json", "--overwrite", "-q"]

    def aria2(self) -> list[str]:
        return [*self.ns, "aria2c", "-x16", "-s16", "-k1M", "--summary-interval=0", "--console-log-level=warn",
                f"--ca-certificate={self.ca}", "-d", str(self.out.parent), "-o", self.out.name,
                "--allow-overwrite=true", self.url]

    def curl(self) -> list[str]:
        return [*self.ns, "curl", "-sS", "--fail", "--cacert", self.ca, "-o", str(self.out), self.url]


def mbps(size: int, seconds: float) -> float:
    return size * 8 / seconds / 1e6


_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def reported_mbps(tool: str, out: str) -> float | None:
    """The transfer rate the tool itself reports (without its process start-up)."""
    if tool.startswith("ferry"):
        return json.loads(out.strip().splitlines()[-1])["throughput_mbps"]
    if tool == "aria2c":
        match = re.search(r"\|OK\s*\|\s*([\d.]+)(B|KiB|MiB|GiB)/s\|", out)
        return float(match.group(1)) * _UNITS[match.group(2)] * 8 / 1e6 if match else None
    return None


def bench_path(name, rtt, rate, loss, net, work: Path, size: int, rounds: int) -> dict:
    link = f"fb{net}"
    subprocess.run([str(WANEM), "down", link], capture_output=True)
    sh(str(WANEM), "up", link, "--rtt", str(rtt), "--rate", str(rate), "--loss", str(loss), "--net", str(net))
    server_ip = f"198.18.{net}.2"
    prefix = work / f"nginx-{name}"
    certs = make_certificates(prefix / "tls", names=(f"IP:{server_ip}",))
    server = Nginx(prefix, work / "data", listen=server_ip, certs=certs)
    server.start(argv_prefix=tuple(on_host(link, "b")))
    try:
        ns = on_host(link, "a")
        tools = Tools(server.url("big.bin"), str(certs["ca"]), work / "out" / "big.bin", size, ns)
        results: dict[str, list[float]] = {"ferry": [], "ferry-warm": [], "aria2c": [], "curl": []}
        reported: dict[str, list[float | None]] = {k: [] for k in results}
        streams: list[int] = []
        warm_home = work / f"home-warm-{name}"
        shutil.rmtree(warm_home, ignore_errors=True)
        for r in range(rounds):
            for tool in ("ferry", "aria2c", "ferry-warm", "curl"):
                if tool == "curl" and r > 0 and rtt >= 100:
                    continue  # one curl run at 100 ms takes minutes; its figure is stable
                tools.clean()
                home = warm_home if tool == "ferry-warm" else Path(tempfile.mkdtemp(prefix="ferryhome", dir=work))
                env = dict(os.environ, LABFERRY_HOME=str(home))
                argv = {"ferry": tools.ferry, "ferry-warm": tools.ferry}.get(tool, None)
                argv = argv(home) if argv else getattr(tools, tool.replace("aria2c", "aria2"))()
                warm_cache(work / "data" / "big.bin")
                spent, status, out = timed(argv, env)
                own = reported_mbps(tool, out) if status == 0 else None
                if status == 0:
                    results[tool].append(mbps(size, spent))
                    reported[tool].append(own)
                    if tool.startswith("ferry"):
                        streams.append(json.loads(out.strip().splitlines()[-1])["streams"])
                print(f"  {name} round {r + 1} {tool:<10} {mbps(size, spent):7.0f} Mbit/s  ({spent:.1f} s)"
                      f"  self-reported {own or 0:.0f}", flush=True)
        tools.clean()
        return {"path": name, "rtt": rtt, "rate": rate, "loss": loss, "results": results, "reported": reported,
                "streams": streams}
    finally:
        server.stop()
        subprocess.run([str(WANEM), "down", link], capture_output=True)


def bench_loopback(work: Path, size: int, rounds: int) -> dict:
    server = Nginx(work / "nginx-lo", work / "data").start()
    try:
        tools = Tools(server.url("big.bin"), server.ca_file, work / "out" / "big.bin", size, [])
        rows: dict[str, list[tuple[float, int, float | None]]] = {"ferry": [], "aria2c": []}
        for _ in range(rounds):
            for tool in ("ferry", "aria2c"):
                tools.clean()
                home = Path(tempfile.mkdtemp(prefix="ferryhome", dir=work))
                env = dict(os.environ, LABFERRY_HOME=str(home))
                argv = tools.ferry(home) if tool == "ferry" else tools.aria2()
                warm_cache(work / "data" / "big.bin")
                spent, status, rss, out = run_rss(argv, env)
                own = reported_mbps(tool, out) if status == 0 else None
                if status == 0:
                    rows[tool].append((mbps(size, spent), rss, own))
                print(f"  loopback {tool:<7} {mbps(size, spent):7.0f} Mbit/s  self-reported {own or 0:.0f}"
                      f"  peak RSS {rss / 1024:.0f} MiB", flush=True)
        tools.clean()
        return rows
    finally:
        server.stop()


def median_of(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def render(paths: list[dict], loop: dict, size: int, rounds: int, command: str) -> str:
    lines = [
        "## HTTPS backend on emulated long fat networks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` (packet-level link emulator,"
        f" cubic on both hosts, untuned Linux buffers), a {size // MiB} MiB file served by nginx over TLS;"
        f" median of {rounds} interleaved rounds. **Wall** = size / wall-clock time of the whole command"
        " (process start-up, handshakes and verification included); **own** = the rate the tool reports for its"
        " transfer (Ferry's JSON `throughput_mbps`, aria2c's *avg speed*), without process start-up.",
        "Ferry runs `--streams auto` with a fresh data folder (cold) and with one that has learned from earlier runs"
        " (warm). curl runs once at 100 ms (one run takes minutes).",
        "",
        "| path (1000 Mbit/s) | Ferry cold: wall / own | Ferry warm: wall / own | aria2c -x16 -s16 -k1M: wall / own"
        " | curl | Ferry / aria2c (wall) | Ferry streams |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in paths:
        r, o = p["results"], p["reported"]
        cold, warm, aria, curl = (median_of(r[k]) for k in ("ferry", "ferry-warm", "aria2c", "curl"))
        ocold, owarm, oaria = (median_of(o[k]) for k in ("ferry", "ferry-warm", "aria2c"))
        lines.append(
            f"| {p['rtt']} ms, loss {p['loss']:g} | {cold:.0f} / {ocold:.0f} | {warm:.0f} / {owarm:.0f} |"
            f" {aria:.0f} / {oaria:.0f} | {curl:.0f} | {cold / aria:.2f}× (warm {warm / aria:.2f}×) |"
            f" {min(p['streams'])}–{max(p['streams'])} |"
        )
    if loop:
        lines += [
            "",
            "Unshaped loopback (same file, same nginx, one worker process):",
            "",
            "| tool | wall Mbit/s | own Mbit/s | peak RSS |",
            "|---|---|---|---|",
        ]
        for tool, label in (("ferry", "Ferry auto"), ("aria2c", "aria2c -x16 -s16 -k1M")):
            rows = loop[tool]
            lines.append(
                f"| {label} | {median_of([w for w, _, _ in rows]):.0f} | {median_of([x for _, _, x in rows]):.0f} |"
                f" {max(m for _, m, _ in rows) / 1024:.0f} MiB |"
            )
    lines += ["", "Reproduce:", "", "```", command, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--paths", default="all", help="comma-separated path names, or all")
    parser.add_argument("--no-loopback", action="store_true")
    parser.add_argument("--write", metavar="MARKDOWN", help="replace the HTTPS section of this file")
    parser.add_argument("--work", default="/tmp/ferry-bench")
    args = parser.parse_args()
    precompile()
    if os.geteuid() != 0 or not WANEM.exists():
        print("needs root and ../shared/tools/wanem", file=sys.stderr)
        return 2
    for tool in ("nginx", "aria2c", "curl"):
        if not shutil.which(tool):
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    work = Path(args.work)
    (work / "data").mkdir(parents=True, exist_ok=True)
    (work / "out").mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)
    size = args.size_mib * MiB
    make_file(work / "data" / "big.bin", size)
    chosen = [p for p in PATHS if args.paths == "all" or p[0] in args.paths.split(",")]
    paths = [bench_path(*p, work=work, size=size, rounds=args.rounds) for p in chosen]
    loop = {} if args.no_loopback else bench_loopback(work, size, args.rounds)
    command = "sudo .venv/bin/python tests/bench/https_wan.py " + " ".join(sys.argv[1:])
    text = render(paths, loop, size, args.rounds, command.strip())
    print(text)
    if args.write:
        replace_section(args.write, "## HTTPS backend on emulated", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
