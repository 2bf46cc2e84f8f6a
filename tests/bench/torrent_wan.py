#!/usr/bin/env python3
"""BitTorrent on emulated long fat networks: one seed on host b, fetchers on host a, scp in the same run.

Needs root and ``../shared/tools/wanem``; sshd, scp on PATH; libtorrent in the venv. Host b
runs ``labferry seed`` (``--connections K`` sessions on consecutive ports) and an sshd;
host a fetches a 1 GiB file with ``labferry copy FILE.torrent --peer B:PORT`` (a fresh
data folder each time), with ``scp``, and with three fetchers at once that also name each
other (they trade pieces over host a's loopback). Figures are size / wall time of the
whole command; for three fetchers, the time until the last one is done.
Targets (issue 5): ≥ 2× scp and ≥ 85 % of the link at 50 ms/1e-4; three fetchers in
≤ 1.6× the time of one.

    sudo .venv/bin/python tests/bench/torrent_wan.py [--rounds 2] [--connections 8] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.report import WANEM, MiB, on_host, prepare_wan, replace_section, wan_arguments  # noqa: E402
from tests.servers.sshd import Sshd  # noqa: E402

PATHS = [("50ms-1e-4", 50, 1000, 1e-4, 61), ("100ms-1e-3", 100, 1000, 1e-3, 62)]
SEED_PORT = 6881


def ferry_argv(ns: list[str], *args: str) -> list[str]:
    return [*ns, sys.executable, "-m", "app", *args]


def home(work: Path) -> dict:
    return dict(os.environ, LABFERRY_HOME=tempfile.mkdtemp(prefix="bthome", dir=work))


EXTRA: list[str] = []  # options for every labferry seed/copy of this run (--encryption …)


def fetch_one(ns, torrent: Path, out: Path, seed: str, k: int, work: Path) -> tuple[float, dict | None]:
    shutil.rmtree(out, ignore_errors=True)
    began = time.monotonic()
    proc = subprocess.run(ferry_argv(ns, "copy", str(torrent), str(out), "--peer", seed, "--connections", str(k),
                                     *EXTRA, "--json", "-q"), capture_output=True, text=True, env=home(work),
                          timeout=1800)
    spent = time.monotonic() - began
    if proc.returncode != 0:
        print(f"   ! fetch exit {proc.returncode}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return spent, None
    return spent, json.loads(proc.stdout.strip().splitlines()[-1])


def fetch_three(ns, torrent: Path, work: Path, seed: str, k: int) -> tuple[float, list[float], int]:
    """Three fetchers at once on host a, each naming the seed and the other two; (last done, each, shared)."""
    ports = [7001, 7002, 7003]
    procs = []
    began = time.monotonic()
    for i, port in enumerate(ports):
        out = work / f"out3-{i}"
        shutil.rmtree(out, ignore_errors=True)
        others = [a for p in ports if p != port for a in ("--peer", f"127.0.0.1:{p}")]
        procs.append(subprocess.Popen(
            ferry_argv(ns, "copy", str(torrent), str(out), "--peer", seed, "--connections", str(k), *others, *EXTRA,
                       "--listen", f"0.0.0.0:{port}", "--json", "-q"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=home(work)))
    each, shared = [], 0
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=1800)
        each.append(time.monotonic() - began)
        if proc.returncode != 0:
            print(f"   ! fetcher exit {proc.returncode}: {stderr.strip()[-300:]}", file=sys.stderr)
            continue
        notes = json.loads(stdout.strip().splitlines()[-1])["notes"]
        shared += sum(int(n.split()[1]) for n in notes if n.startswith("Shared "))
    return max(each), each, shared


def scp(ns, server: Sshd, host: str, remote: Path, out: Path) -> float | None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    began = time.monotonic()
    proc = subprocess.run([*ns, "scp", "-q", "-i", str(server.key), "-o", f"UserKnownHostsFile={server.known_hosts}",
                           "-o", "BatchMode=yes", "-P", str(server.port), f"{server.user}@{host}:{remote}",
                           str(out / "big.bin")], capture_output=True, text=True, timeout=1800)
    spent = time.monotonic() - began
    if proc.returncode != 0:
        print(f"   ! scp exit {proc.returncode}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return spent


def run_path(name, rtt, rate, loss, net, work: Path, size: int, rounds: int, k: int, torrent: Path,
             skip_scp: bool = False) -> dict:
    link = f"bt{net}"
    subprocess.run([str(WANEM), "down", link], capture_output=True)
    subprocess.run([str(WANEM), "up", link, "--rtt", str(rtt), "--rate", str(rate), "--loss", str(loss),
                    "--net", str(net)], check=True, capture_output=True)
    host = f"198.18.{net}.2"
    a = on_host(link, "a")
    b = on_host(link, "b")
    server = Sshd(work / f"sshd-{name}", listen=host).start(argv_prefix=tuple(b))
    big = server.home / "big.bin"
    if not big.exists():
        os.link(work / "data" / "big.bin", big)
    server.give(server.home)
    seed = subprocess.Popen(ferry_argv(b, "seed", str(torrent), "--data", str(work / "data" / "big.bin"), "--listen",
                                       f"{host}:{SEED_PORT}", "--connections", str(k), *EXTRA),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=home(work))
    time.sleep(2)
    rows: dict[str, list[float]] = {"torrent": [], "scp": [], "three": []}
    shared = []
    try:
        for r in range(rounds):
            spent, out = fetch_one(a, torrent, work / "out1", f"{host}:{SEED_PORT}", k, work)
            if out:
                rows["torrent"].append(spent)
            own = f"; own {out['throughput_mbps']:.0f} Mbit/s in {out['seconds']:.1f} s" if out else ""
            print(f"  {name} round {r + 1} torrent  {size * 8 / spent / 1e6:7.0f} Mbit/s ({spent:.1f} s{own})",
                  flush=True)
            if not (r > 0 and rtt >= 100) and not skip_scp:  # scp at 100 ms takes minutes and its figure is stable
                spent_scp = scp(a, server, host, big, work / "outscp")
                if spent_scp:
                    rows["scp"].append(spent_scp)
                    rate_scp = size * 8 / spent_scp / 1e6
                    print(f"  {name} round {r + 1} scp      {rate_scp:7.0f} Mbit/s ({spent_scp:.1f} s)", flush=True)
            last, each, bytes_shared = fetch_three(a, torrent, work, f"{host}:{SEED_PORT}", k)
            rows["three"].append(last)
            shared.append(bytes_shared)
            times = ", ".join(f"{e:.1f}" for e in each)
            print(f"  {name} round {r + 1} 3 fetchers: all done in {last:.1f} s ({times});"
                  f" {bytes_shared / MiB:.0f} MiB passed between them", flush=True)
    finally:
        seed.terminate()
        seed.wait(30)
        server.stop()
        subprocess.run([str(WANEM), "down", link], capture_output=True)
        for out in work.glob("out*"):
            shutil.rmtree(out, ignore_errors=True)
    return {"path": name, "rtt": rtt, "loss": loss, "rate": rate, "rows": rows, "shared": shared}


def render(paths: list[dict], size: int, rounds: int, k: int, command: str) -> str:
    lines = [
        "## BitTorrent backend on emulated long fat networks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} with `wanem` (1000 Mbit/s links): `labferry seed` on host b with"
        f" `--connections {k}` (that many sessions on consecutive ports, encryption required), fetchers on host a"
        f" (`labferry copy FILE.torrent --peer B:6881 --connections {k}`, fresh data folder, pieces checked, sha256"
        f" computed at the end), scp from an sshd on host b in the same run; {size // MiB} MiB, median of {rounds}"
        " round(s), size / wall time of the whole command. Three fetchers start together and name each other;"
        " their time is until the last one is done.",
        "",
        "| path | scp | Ferry BitTorrent, 1 fetcher | vs scp | share of the link | 3 fetchers: all done | 3 vs 1 |"
        " MiB passed between fetchers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in paths:
        r = p["rows"]
        one = statistics.median(r["torrent"]) if r["torrent"] else float("nan")
        scp_s = statistics.median(r["scp"]) if r["scp"] else float("nan")
        three = statistics.median(r["three"]) if r["three"] else float("nan")
        mb = size * 8 / 1e6
        lines.append(
            f"| {p['rtt']} ms, loss {p['loss']:g} | {mb / scp_s:.0f} Mbit/s | {mb / one:.0f} Mbit/s |"
            f" {scp_s / one:.1f}× | {mb / one / p['rate'] * 100:.0f} % | {three:.1f} s | {three / one:.2f}× |"
            f" {statistics.median(p['shared']) / MiB:.0f} |")
    lines += ["", "Reproduce:", "", "```", command, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = wan_arguments(__doc__, "/tmp/ferry-bench", "--no-loopback")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--encryption", choices=("required", "off"), default="required")
    parser.add_argument("--skip-scp", action="store_true", help="torrent runs only (tuning experiments)")
    args = parser.parse_args()
    prepared = prepare_wan(args)
    if prepared is None:
        return 2
    work, size = prepared
    EXTRA.extend(["--encryption", args.encryption])
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "app"), str(ROOT / "backends")])
    torrent = work / "big.torrent"  # made afresh: the defaults (v2, private) are what is measured
    subprocess.run(ferry_argv([], "torrent", "create", str(work / "data" / "big.bin"), "-o", str(torrent)),
                   check=True, env=home(work))
    chosen = [p for p in PATHS if args.paths == "all" or p[0] in args.paths.split(",")]
    paths = [run_path(*p, work=work, size=size, rounds=args.rounds, k=args.connections, torrent=torrent,
                      skip_scp=args.skip_scp) for p in chosen]
    command = "sudo .venv/bin/python tests/bench/torrent_wan.py " + " ".join(sys.argv[1:])
    text = render(paths, size, args.rounds, args.connections, command.strip())
    print(text)
    if args.write:
        replace_section(args.write, "## BitTorrent backend on emulated", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
