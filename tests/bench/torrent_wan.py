#!/usr/bin/env python3
"""BitTorrent on emulated long fat networks: one seed on host b, fetchers on host a, scp in the same run.

Needs root and ``../shared/tools/wanem``; sshd, scp on PATH; libtorrent in the venv. Host b
runs ``labferry seed`` (``--connections K`` sessions on consecutive ports) and an sshd;
host a fetches a 1 GiB file with ``labferry copy FILE.torrent --peer B:PORT`` (a fresh
data folder each time), with ``scp``, and with three fetchers at once that also name each
other (they trade pieces over host a's loopback). Figures are size / wall time of the
whole command; for three fetchers, the time until the last one is done.
Targets (issues 5 and 27): ≥ 2× scp and ≥ 85 % of the link at 50 ms/1e-4; three fetchers in
≤ 1.6× the time of one, with TLS on.

``--security rc4,tls,plain`` measures each way of securing the peers in the same run, rounds interleaved:
RC4 "encryption required" (Ferry's default for torrents without a CA), a TLS torrent (``torrent create --tls``:
the seed with Ferry's own certificate, each fetcher with one from ``torrent cert``) and no encryption. For each,
the CPU the seed and one fetcher spent per GiB (``/proc`` of the seed, the fetcher's rusage).

    sudo .venv/bin/python tests/bench/torrent_wan.py [--rounds 2] [--security rc4,tls,plain] [--write …]
"""

from __future__ import annotations

import json
import os
import resource
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


def ferry_argv(ns: list[str], *args: str) -> list[str]:
    return [*ns, sys.executable, "-m", "app", *args]


def home(work: Path) -> dict:
    return dict(os.environ, LABFERRY_HOME=tempfile.mkdtemp(prefix="bthome", dir=work))


PORTS = {"rc4": 6881, "tls": 6921, "plain": 6961}  # each security's seed: K sessions from its port on
SECURITY = {"rc4": ["--encryption", "required"], "plain": ["--encryption", "off"], "tls": []}


class Mode:
    """One way of securing the peers: its torrent, its seed's options, every fetcher's options."""

    def __init__(self, name: str, work: Path, data: Path) -> None:
        self.name, self.port = name, PORTS[name]
        self.home = home(work)
        self.torrent = work / f"big-{name}.torrent"  # made afresh: the defaults (v2, private) are what is measured
        subprocess.run(ferry_argv([], "torrent", "create", str(data), "-o", str(self.torrent),
                                  *(["--tls"] if name == "tls" else [])), check=True, env=self.home,
                       capture_output=True)
        self.extra = list(SECURITY[name])
        if name == "tls":
            subprocess.run(ferry_argv([], "torrent", "cert", str(work / "collab")), check=True, env=self.home,
                           capture_output=True)
            self.extra += ["--tls-cert", str(work / "collab.pem"), "--tls-key", str(work / "collab.key")]
        self.seed_extra = list(SECURITY[name])  # the seed's own certificate: Ferry's, in the CA's data folder


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch_one(ns, mode: Mode, out: Path, seed: str, k: int, work: Path) -> tuple[float, dict | None, float]:
    """(wall seconds, the job's JSON, the fetcher's CPU seconds)."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    proc = subprocess.run(ferry_argv(ns, "copy", str(mode.torrent), str(out), "--peer", seed, "--connections", str(k),
                                     *mode.extra, "--json", "-q"), capture_output=True, text=True, env=home(work),
                          timeout=1800)
    spent = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode != 0:
        print(f"   ! fetch exit {proc.returncode}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return spent, None, cpu
    return spent, json.loads(proc.stdout.strip().splitlines()[-1]), cpu


def fetch_three(ns, mode: Mode, work: Path, seed: str, k: int) -> tuple[float, list[float], int]:
    """Three fetchers at once on host a, each naming the seed and the other two; (last done, each, shared)."""
    ports = [7001, 7002, 7003]
    procs = []
    began = time.monotonic()
    for i, port in enumerate(ports):
        out = work / f"out3-{i}"
        shutil.rmtree(out, ignore_errors=True)
        others = [a for p in ports if p != port for a in ("--peer", f"127.0.0.1:{p}")]
        procs.append(subprocess.Popen(
            ferry_argv(ns, "copy", str(mode.torrent), str(out), "--peer", seed, "--connections", str(k), *others,
                       *mode.extra,
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


def run_path(name, rtt, rate, loss, net, work: Path, size: int, rounds: int, k: int, modes: list[Mode],
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
    seeds = {m.name: subprocess.Popen(
        ferry_argv(b, "seed", str(m.torrent), "--data", str(work / "data" / "big.bin"), "--listen",
                   f"{host}:{m.port}", "--connections", str(k), *m.seed_extra),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=m.home) for m in modes}
    time.sleep(3)
    rows: dict[str, list[float]] = {"scp": []}
    shared: dict[str, list[int]] = {m.name: [] for m in modes}
    cpu: dict[str, list[tuple[float, float]]] = {m.name: [] for m in modes}  # (seed, fetcher) seconds per GiB
    for m in modes:
        rows[f"torrent-{m.name}"], rows[f"three-{m.name}"] = [], []
    try:
        for r in range(rounds):
            for m in modes:
                seed_cpu = cpu_of(seeds[m.name].pid)
                spent, out, fetcher_cpu = fetch_one(a, m, work / "out1", f"{host}:{m.port}", k, work)
                gib = size / (1 << 30)
                cpu[m.name].append(((cpu_of(seeds[m.name].pid) - seed_cpu) / gib, fetcher_cpu / gib))
                if out:
                    rows[f"torrent-{m.name}"].append(spent)
                own = f"; own {out['throughput_mbps']:.0f} Mbit/s in {out['seconds']:.1f} s" if out else ""
                print(json.dumps({"path": name, "round": r + 1, "tool": f"torrent-{m.name}",
                                  "mbps": round(size * 8 / spent / 1e6, 1), "sha256_ok": bool(out and out["sha256"]
                                                                                              == DIGEST[0]),
                                  "seed_cpu_s_per_gib": round(cpu[m.name][-1][0], 2),
                                  "fetcher_cpu_s_per_gib": round(cpu[m.name][-1][1], 2)}) if JSON else
                      f"  {name} round {r + 1} torrent {m.name:<5} {size * 8 / spent / 1e6:7.0f} Mbit/s "
                      f"({spent:.1f} s{own})", flush=True)
                last, each, bytes_shared = fetch_three(a, m, work, f"{host}:{m.port}", k)
                rows[f"three-{m.name}"].append(last)
                shared[m.name].append(bytes_shared)
                times = ", ".join(f"{e:.1f}" for e in each)
                print(json.dumps({"path": name, "round": r + 1, "tool": f"three-{m.name}", "seconds": round(last, 2),
                                  "each": [round(e, 2) for e in each], "shared_mib": round(bytes_shared / MiB)})
                      if JSON else f"  {name} round {r + 1} 3 fetchers {m.name}: all done in {last:.1f} s ({times});"
                      f" {bytes_shared / MiB:.0f} MiB passed between them", flush=True)
            if not (r > 0 and rtt >= 100) and not skip_scp:  # scp at 100 ms takes minutes and its figure is stable
                spent_scp = scp(a, server, host, big, work / "outscp")
                if spent_scp:
                    rows["scp"].append(spent_scp)
                    rate_scp = size * 8 / spent_scp / 1e6
                    print(f"  {name} round {r + 1} scp      {rate_scp:7.0f} Mbit/s ({spent_scp:.1f} s)", flush=True)
    finally:
        for seed in seeds.values():
            seed.terminate()
            seed.wait(30)
        server.stop()
        subprocess.run([str(WANEM), "down", link], capture_output=True)
        for out in work.glob("out*"):
            shutil.rmtree(out, ignore_errors=True)
    return {"path": name, "rtt": rtt, "loss": loss, "rate": rate, "rows": rows, "shared": shared, "cpu": cpu,
            "modes": [m.name for m in modes]}


def render(paths: list[dict], size: int, rounds: int, k: int, command: str) -> str:
    med = lambda v: statistics.median(v) if v else float("nan")  # noqa: E731
    names = {"rc4": "RC4 required", "tls": "TLS torrent", "plain": "no encryption"}
    lines = [
        "## BitTorrent backend on emulated long fat networks",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} with `wanem` (1000 Mbit/s links) on this 2-core machine (seed, "
        "fetchers and the emulated link share its two cores): `labferry seed` on host b with"
        f" `--connections {k}` (that many sessions on consecutive ports), fetchers on host a"
        f" (`labferry copy FILE.torrent --peer B:PORT --connections {k}`, fresh data folder, pieces checked, sha256"
        f" computed at the end), scp from an sshd on host b in the same run; {size // MiB} MiB, median of {rounds}"
        " round(s), interleaved, size / wall time of the whole command. Three fetchers start together and name each"
        " other; their time is until the last one is done. Each way of securing the peers has its own torrent and"
        " seed: RC4 required (`--encryption required`, the default for torrents without a CA), a TLS torrent"
        " (`torrent create --tls`; each fetcher with a `torrent cert` certificate), no encryption. CPU: the seed's"
        " and one fetcher's, per GiB delivered to one fetcher.",
        "",
        "| path | peers secured by | scp | 1 fetcher | vs scp | share of the link | 3 fetchers: all done | 3 vs 1 |"
        " MiB passed between fetchers | CPU s/GiB: seed + fetcher |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in paths:
        r = p["rows"]
        scp_s = med(r["scp"])
        mb = size * 8 / 1e6
        for mode in p["modes"]:
            one, three = med(r[f"torrent-{mode}"]), med(r[f"three-{mode}"])
            seed_cpu = med([c[0] for c in p["cpu"][mode]])
            fetch_cpu = med([c[1] for c in p["cpu"][mode]])
            lines.append(
                f"| {p['rtt']} ms, loss {p['loss']:g} | {names[mode]} | {mb / scp_s:.0f} Mbit/s | {mb / one:.0f} "
                f"Mbit/s | {scp_s / one:.1f}× | {mb / one / p['rate'] * 100:.0f} % | {three:.1f} s | "
                f"**{three / one:.2f}×** | {med(p['shared'][mode]) / MiB:.0f} | {seed_cpu:.1f} + {fetch_cpu:.1f} |")
    lines += ["", "Reproduce:", "", "```", command, "```", ""]
    return "\n".join(lines)


JSON = False
DIGEST = [""]


def main() -> int:
    global JSON
    parser = wan_arguments(__doc__, "/tmp/ferry-bench", "--no-loopback")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--security", default="rc4,tls", help="comma-separated: rc4, tls, plain")
    parser.add_argument("--skip-scp", action="store_true", help="torrent runs only (tuning experiments)")
    parser.add_argument("--json", action="store_true", help="one JSON line per run")
    args = parser.parse_args()
    JSON = args.json
    prepared = prepare_wan(args)
    if prepared is None:
        return 2
    work, size = prepared
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "app"), str(ROOT / "backends")])
    from backends.streams.hashing import hash_file

    DIGEST[0] = hash_file(work / "data" / "big.bin")["sha256"]
    modes = [Mode(name, work, work / "data" / "big.bin") for name in args.security.split(",")]
    chosen = [p for p in PATHS if args.paths == "all" or p[0] in args.paths.split(",")]
    paths = [run_path(*p, work=work, size=size, rounds=args.rounds, k=args.connections, modes=modes,
                      skip_scp=args.skip_scp) for p in chosen]
    command = "sudo .venv/bin/python tests/bench/torrent_wan.py " + " ".join(sys.argv[1:])
    text = render(paths, size, args.rounds, args.connections, command.strip())
    print(text)
    if args.write:
        replace_section(args.write, "## BitTorrent backend on emulated", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
