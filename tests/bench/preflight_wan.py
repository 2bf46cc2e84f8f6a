#!/usr/bin/env python3
"""Is the preflight's stream count right? Preflight, then every count for real, on emulated paths.

Needs root (network namespaces), ``../shared/tools/wanem`` and nginx. For each path, nginx
(TLS) serves a 1 GiB file on host b; on host a Ferry runs ``labferry preflight`` (timed:
the whole command), then real 1 GiB downloads with ``--streams 1, 2, 4 … 64`` (a fresh
data folder each, so nothing learned carries over). The figure that matters is the rate
of a real transfer with the recommended count over the best rate any count reached.
Targets (issue 7): that share ≥ 90 % on every path, the preflight ≤ 20 s.

    sudo .venv/bin/python tests/bench/preflight_wan.py [--rounds 1] [--write docs/benchmarks.md]
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
from tests.servers.nginx import Nginx, make_certificates  # noqa: E402

PATHS = [  # name, rtt ms, rate Mbit/s, loss, wanem --net
    ("50ms-1e-4", 50, 1000, 1e-4, 51),
    ("100ms-1e-3", 100, 1000, 1e-3, 52),
    ("20ms-1e-5", 20, 1000, 1e-5, 53),  # ours: a regional path (campus to a national data centre)
]
COUNTS = (1, 2, 4, 8, 16, 32, 64)


def ferry(ns: list[str], home: Path, *args: str, timeout: float = 1800) -> tuple[float, dict | None, str]:
    env = dict(os.environ, LABFERRY_HOME=str(home))
    began = time.monotonic()
    proc = subprocess.run([*ns, sys.executable, "-m", "app", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    spent = time.monotonic() - began
    if proc.returncode != 0:
        print(f"   ! {' '.join(args[:2])} exit {proc.returncode}: {proc.stderr.strip()[-400:]}", file=sys.stderr)
        return spent, None, proc.stderr
    return spent, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout


def bench_path(name, rtt, rate, loss, net, work: Path, rounds: int, preflight_only: bool = False,
               preflights: int = 2) -> dict:
    link = f"pf{net}"
    subprocess.run([str(WANEM), "down", link], capture_output=True)
    subprocess.run([str(WANEM), "up", link, "--rtt", str(rtt), "--rate", str(rate), "--loss", str(loss),
                    "--net", str(net)], check=True, capture_output=True)
    server_ip = f"198.18.{net}.2"
    prefix = work / f"nginx-{name}"
    certs = make_certificates(prefix / "tls", names=(f"IP:{server_ip}",))
    server = Nginx(prefix, work / "data", listen=server_ip, certs=certs)
    server.start(argv_prefix=tuple(on_host(link, "b")))
    ns = on_host(link, "a")
    url, ca = server.url("big.bin"), str(certs["ca"])
    out = work / "out" / "big.bin"
    try:
        results = []
        for _ in range(preflights):
            home = Path(tempfile.mkdtemp(prefix="pfhome", dir=work))
            wall, result, _ = ferry(ns, home, "preflight", url, "--ca-file", ca, "--json", timeout=120)
            if result:
                results.append({"wall": wall, **result})
                print(f"  {name} preflight {wall:.1f} s: sweep {result['sweep']} → {result['recommended_streams']}"
                      f" streams", flush=True)
        sweep: dict[int, list[float]] = {n: [] for n in COUNTS}
        for r in range(0 if preflight_only else rounds):
            for count in COUNTS:
                for stale in out.parent.glob("big.bin*"):
                    stale.unlink()
                home = Path(tempfile.mkdtemp(prefix="pfhome", dir=work))
                wall, result, _ = ferry(ns, home, "copy", url, str(out), "--ca-file", ca, "--streams", str(count),
                                        "--json", "--overwrite", "-q")
                if result:
                    sweep[count].append(result["throughput_mbps"])
                    print(f"  {name} round {r + 1} {count:>2} streams {result['throughput_mbps']:7.0f} Mbit/s"
                          f" ({wall:.1f} s)", flush=True)
        for stale in out.parent.glob("big.bin*"):
            stale.unlink()
        return {"path": name, "rtt": rtt, "rate": rate, "loss": loss, "preflights": results,
                "sweep": {n: statistics.median(v) for n, v in sweep.items() if v}}  # JSON turns the keys into strings
    finally:
        server.stop()
        subprocess.run([str(WANEM), "down", link], capture_output=True)


def render(paths: list[dict], size: int, rounds: int, command: str) -> str:
    lines = [
        "## Preflight: recommended streams against an exhaustive sweep",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} with `wanem` (1000 Mbit/s links), nginx over TLS on host b, Ferry on"
        f" host a. Per path: `labferry preflight URL` (wall time of the whole command), then real {size // MiB} MiB"
        f" HTTPS downloads with each stream count (median of {rounds} round(s); the transfer's own rate, a fresh"
        " data folder each). **Share** = the real transfer with the recommended count / the best count's. One row"
        " per preflight run; the targets: share ≥ 90 %, preflight ≤ 20 s.",
        "",
        "| path | preflight: time, its sweep (streams: Mbit/s) | recommended | real sweep 1/2/4/8/16/32/64 (Mbit/s)"
        " | best | share |",
        "|---|---|---|---|---|---|",
    ]
    for p in paths:
        sweep = p["sweep"]
        if not sweep:
            continue
        best_n = max(sweep, key=sweep.get)
        for pre in p["preflights"] or [{}]:
            rec = pre.get("recommended_streams")
            share = sweep.get(rec, float("nan")) / sweep[best_n] if rec else float("nan")
            probe = ", ".join(f"{k}: {v:.0f}" for k, v in (pre.get("sweep") or {}).items())
            real = " / ".join(f"{sweep.get(n, float('nan')):.0f}" for n in COUNTS)
            lines.append(
                f"| {p['rtt']} ms, loss {p['loss']:g} | {pre.get('wall', float('nan')):.1f} s; {probe} | {rec} |"
                f" {real} | {sweep[best_n]:.0f} ({best_n})"
                f" | {share * 100:.0f} % |"
            )
    lines += ["", "Reproduce:", "", "```", command, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = wan_arguments(__doc__, "/tmp/ferry-bench", "--no-loopback")
    parser.set_defaults(rounds=1)
    parser.add_argument("--preflight-only", action="store_true", help="only the preflights (a quick check)")
    parser.add_argument("--preflights", type=int, default=2, help="preflight runs per path")
    parser.add_argument("--merge", metavar="JSON", help="an earlier run's results (work/preflight.json): paths not "
                                                         "measured now are taken from it")
    args = parser.parse_args()
    if not shutil.which("nginx"):
        print("nginx is not installed", file=sys.stderr)
        return 2
    prepared = prepare_wan(args)
    if prepared is None:
        return 2
    work, size = prepared
    (work / "out").mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "app"), str(ROOT / "backends")])
    chosen = [p for p in PATHS if args.paths == "all" or p[0] in args.paths.split(",")]
    paths = [bench_path(*p, work=work, rounds=args.rounds, preflight_only=args.preflight_only,
                        preflights=args.preflights) for p in chosen]
    if args.merge:
        fresh = {p["path"] for p in paths}
        earlier = [p | {"sweep": {int(n): v for n, v in p["sweep"].items()}}
                   for p in json.loads(Path(args.merge).read_text()) if p["path"] not in fresh]
        order = [p[0] for p in PATHS]
        paths = sorted(paths + earlier, key=lambda p: order.index(p["path"]))
    command = "sudo .venv/bin/python tests/bench/preflight_wan.py " + " ".join(sys.argv[1:])
    text = render(paths, size, args.rounds, command.strip())
    print(text)
    (work / "preflight.json").write_text(json.dumps(paths, indent=1))
    if args.write and not args.preflight_only:
        replace_section(args.write, "## Preflight: recommended streams", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
