#!/usr/bin/env python3
"""Ferry's SSH backend against scp, rsync and tar|ssh on emulated long fat networks.

Needs root and ``../shared/tools/wanem``; sshd, ssh, scp, rsync on PATH. A stock sshd
(default MaxStartups) runs on host b for a test user; host a fetches a 1 GiB file with
Ferry (``--streams auto``, fresh data folder) and with ``scp``, in the same run; on the
50 ms path also a folder of 2,000 × 10 KiB files with Ferry, ``tar | ssh``, ``rsync -a``
and ``scp -r``. Then the same 1 GiB over the unshaped loopback. Figures are size / wall
time of the whole command.

    sudo .venv/bin/python tests/bench/ssh_wan.py [--rounds 2] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import json
import os
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

from tests.bench.report import WANEM, MiB, on_host, prepare_wan, replace_section, wan_arguments, warm_cache  # noqa: E402
from tests.servers.sshd import Sshd  # noqa: E402

PATHS = [("50ms-1e-4", 50, 1000, 1e-4, 71), ("100ms-1e-3", 100, 1000, 1e-3, 72)]


def timed(argv: list[str], env: dict | None = None, timeout: float = 1800) -> tuple[float, int, str]:
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    spent = time.monotonic() - began
    if proc.returncode != 0:
        print(f"   ! {' '.join(argv[-6:])} exit {proc.returncode}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
    return spent, proc.returncode, proc.stdout


def make_small_files(folder: Path, count: int = 2000, size: int = 10 * 1024) -> None:
    if folder.exists() and len(list(folder.iterdir())) == count:
        return
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (folder / f"reads_{i:05d}.txt").write_bytes(os.urandom(size))


class Client:
    def __init__(self, server: Sshd, host: str, ns: list[str], work: Path) -> None:
        self.s, self.host, self.ns, self.work = server, host, ns, work
        self.ssh_opts = ["-i", str(server.key), "-o", f"UserKnownHostsFile={server.known_hosts}",
                         "-o", "BatchMode=yes"]

    def ferry(self, remote: str, dest: Path) -> tuple[float, int, str]:
        home = tempfile.mkdtemp(prefix="ferryhome", dir=self.work)
        env = dict(os.environ, LABFERRY_HOME=home)
        url = f"sftp://{self.s.user}@{self.host}:{self.s.port}{remote}"
        return timed([*self.ns, sys.executable, "-m", "app", "copy", url, str(dest), *self.s.args(),
                      "--streams", "auto", "--json", "-q", "--overwrite"], env)

    def scp(self, remote: str, dest: Path, recursive: bool = False) -> tuple[float, int, str]:
        return timed([*self.ns, "scp", "-q", *(["-r"] if recursive else []), *self.ssh_opts, "-P", str(self.s.port),
                      f"{self.s.user}@{self.host}:{remote}", str(dest)])

    def rsync(self, remote: str, dest: Path) -> tuple[float, int, str]:
        rsh = " ".join(["ssh", *map(shlex.quote, self.ssh_opts), "-p", str(self.s.port)])
        return timed([*self.ns, "rsync", "-a", "-e", rsh, f"{self.s.user}@{self.host}:{remote}", str(dest)])

    def tar_ssh(self, remote_parent: str, name: str, dest: Path) -> tuple[float, int, str]:
        dest.mkdir(parents=True, exist_ok=True)
        ssh = ["ssh", *self.ssh_opts, "-p", str(self.s.port), f"{self.s.user}@{self.host}",
               f"tar -C {shlex.quote(remote_parent)} -cf - {shlex.quote(name)}"]
        script = " ".join(map(shlex.quote, ssh)) + f" | tar -C {shlex.quote(str(dest))} -xf -"
        return timed([*self.ns, "sh", "-c", script])


def mbps(size: int, seconds: float) -> float:
    return size * 8 / seconds / 1e6


def run_path(name, rtt, rate, loss, net, work: Path, size: int, rounds: int, small: bool) -> dict:
    link = f"sb{net}"
    subprocess.run([str(WANEM), "down", link], capture_output=True)
    subprocess.run([str(WANEM), "up", link, "--rtt", str(rtt), "--rate", str(rate), "--loss", str(loss),
                    "--net", str(net)], check=True, capture_output=True)
    host = f"198.18.{net}.2"
    server = Sshd(work / f"sshd-{name}", listen=host).start(argv_prefix=tuple(on_host(link, "b")))
    try:
        return measure(name, server, host, on_host(link, "a"), work, size, rounds, small)
    finally:
        server.stop()
        subprocess.run([str(WANEM), "down", link], capture_output=True)


def measure(name: str, server: Sshd, host: str, ns: list[str], work: Path, size: int, rounds: int,
            small: bool) -> dict:
    big = server.home / "big.bin"
    if not big.exists():
        os.link(work / "data" / "big.bin", big)
    server.give(server.home)
    client = Client(server, host, ns, work)
    out = work / "out"
    rows: dict[str, list[float]] = {"ferry": [], "scp": [], "own": []}
    streams = []
    for r in range(rounds):
        for tool in ("ferry", "scp"):
            if tool == "scp" and r > 0 and name.startswith("100"):
                continue  # minutes per run; the figure is stable
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            warm_cache(big)
            spent, status, stdout = (client.ferry(str(big), out / "big.bin") if tool == "ferry"
                                     else client.scp(str(big), out / "big.bin"))
            if status == 0:
                rows[tool].append(mbps(size, spent))
                if tool == "ferry":
                    result = json.loads(stdout.strip().splitlines()[-1])
                    streams.append(result["streams"])
                    rows["own"].append(result["throughput_mbps"])
            print(f"  {name} {tool:<6} {mbps(size, spent):7.0f} Mbit/s ({spent:.1f} s)", flush=True)
    result = {"path": name, "rows": rows, "streams": streams, "small": {}}
    if small:
        folder = server.home / "small2000"
        make_small_files(folder)
        server.give(folder)
        tools = {
            "ferry": lambda d: client.ferry(str(folder), d / "small2000"),
            "tar|ssh": lambda d: client.tar_ssh(str(server.home), "small2000", d),
            "rsync -a": lambda d: client.rsync(str(folder), d),
            "scp -r": lambda d: client.scp(str(folder), d, recursive=True),
        }
        for tool, run in tools.items():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            spent, status, _ = run(out)
            result["small"][tool] = spent if status == 0 else float("nan")
            print(f"  {name} small files {tool:<8} {spent:6.1f} s", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    return result


def _seconds(value: float) -> str:
    """A tool's time, or "failed" (NaN: it exited non-zero, see the log's "!" line)."""
    return f"{value:.1f}" if value == value else "failed"


def render(paths: list[dict], loop: dict | None, size: int, rounds: int, command: str, loop_rounds: int) -> str:
    med = lambda v: statistics.median(v) if v else float("nan")  # noqa: E731
    lines = [
        "## SSH backend (sftp://) on emulated long fat networks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine: `wanem` (cubic, untuned buffers), a stock "
        "OpenSSH 9.2 sshd (default MaxStartups, test user with `/bin/sh`) on host b, client on host a; "
        f"{size // MiB} MiB file, median of {rounds} rounds ({loop_rounds} over the loopback), "
        "Mbit/s = size / wall time of the whole command. "
        "Ferry: `--streams auto`, fresh data folder, default `--max-handshakes 8`, verified by the server's "
        "SHA-256. **Own** = the rate Ferry reports (`throughput_mbps`: from the job's start, logins included, "
        "without the ~0.25 s Python start-up).",
        "",
        "| path (1000 Mbit/s) | Ferry (wall) | Ferry (own) | scp | Ferry / scp (wall) | Ferry streams (peak) |",
        "|---|---|---|---|---|---|",
    ]
    for name, p in [(p["path"], p) for p in paths] + ([("loopback, unshaped", loop)] if loop else []):
        f, o, s = med(p["rows"]["ferry"]), med(p["rows"]["own"]), med(p["rows"]["scp"])
        ran = len(p["rows"]["ferry"])  # rounds that ended well; a failed one is in the log, not the median
        lines.append(f"| {name}{'' if ran >= rounds or 'loop' in name else f' ({ran} rounds ran)'} | {f:.0f} | "
                     f"{o:.0f} | {s:.0f} | {f / s:.2f}× | {min(p['streams'], default=0)}–"
                     f"{max(p['streams'], default=0)} |")
    for p in paths:
        if p["small"]:
            sm = p["small"]
            lines += ["", f"2,000 files of 10 KiB, {p['path']} (seconds, lower is better):", "",
                      "| Ferry | tar \\| ssh | rsync -a | scp -r | Ferry vs scp -r |", "|---|---|---|---|---|",
                      "| " + " | ".join(_seconds(sm[t]) for t in ("ferry", "tar|ssh", "rsync -a", "scp -r")) + " | "
                      + (f"{sm['scp -r'] / sm['ferry']:.0f}× faster |" if sm["scp -r"] == sm["scp -r"]
                         and sm["ferry"] == sm["ferry"] else "- |")]
    lines += ["", "Reproduce:", "", "```", command, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = wan_arguments(__doc__, "/tmp/ferry-bench-ssh", "--no-loopback")
    parser.add_argument("--loopback-rounds", type=int, default=5,
                        help="the unshaped runs take seconds and vary by ±25 %% between runs: more of them")
    args = parser.parse_args()
    prepared = prepare_wan(args)
    if prepared is None:
        return 2
    work, size = prepared
    chosen = [p for p in PATHS if args.paths == "all" or p[0] in args.paths.split(",")]
    paths = [run_path(*p, work=work, size=size, rounds=args.rounds, small=p[1] == 50) for p in chosen]
    loop = None
    if not args.no_loopback:
        server = Sshd(work / "sshd-lo").start()
        try:
            loop = measure("loopback", server, "127.0.0.1", [], work, size, args.loopback_rounds, False)
        finally:
            server.stop()
    command = "sudo .venv/bin/python tests/bench/ssh_wan.py " + " ".join(sys.argv[1:])
    text = render(paths, loop, size, args.rounds, command.strip(), args.loopback_rounds)
    print(text)
    if args.write:
        replace_section(args.write, "## SSH backend (sftp://)", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
