#!/usr/bin/env python3
"""The global bandwidth cap: three jobs of three kinds under one cap (Settings), measured together.

Needs root and ``../shared/tools/wanem``; nginx, sshd. Host b runs nginx (HTTPS with its own CA), a stock sshd
with a shell account and one that allows only SFTP. Host a runs one Ferry process (the engine, as the window
and ``labferry queue --run`` run it) with the cap in its settings and three jobs at once: an HTTPS file over
parallel ranges, an SSH folder of many files (the tar stream) and a file from the SFTP-only account, the last
with a lower cap of its own (``--limit-rate``: the lower of the two must win for it). The bytes each job has
delivered are sampled every 0.25 s; the figure is the three jobs' bytes over the measured window divided by
its length (after a warm-up), as a share of the cap, and the per-second extremes. Every copy that finished is
compared with the server's SHA-256; the rest are cancelled after the window.

    sudo .venv/bin/python tests/bench/global_cap.py --rtt 50 --loss 1e-4 --rate 1000 --cap 200 \\
        [--job-cap 40] [--seconds 20] [--rounds 3] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.https_wan import make_file  # noqa: E402
from tests.bench.report import (  # noqa: E402
    MiB,
    link_down,
    link_up,
    on_host,
    path_arguments,
    prepare_path,
    replace_section,
)

NET = 93
WARMUP = 3.0
JOBS = ("https file", "ssh folder (tar)", "sftp-only file")


def serve(work: Path, host: str, prefix: tuple[str, ...]):
    from tests.servers.nginx import Nginx, make_certificates
    from tests.servers.sshd import Sshd

    certs = make_certificates(work / "nginx" / "tls", names=(f"IP:{host}",))
    nginx = Nginx(work / "nginx", work / "data", listen=host, certs=certs).start(argv_prefix=prefix)
    shell = Sshd(work / "sshd-shell", listen=host).start(argv_prefix=prefix)
    only = Sshd(work / "sshd-sftp-only", listen=host, sftp_only=True, user=shell.user,
                client_key=shell.key).start(argv_prefix=prefix)
    return nginx, shell, only


def sources(work: Path, nginx, shell, only, size: int) -> list[dict]:
    """The three jobs: source URL, its CLI options, what to compare the copy with."""
    from backends.streams.hashing import hash_file

    make_file(work / "data" / "big.bin", size)
    folder = shell.home / "run"
    folder.mkdir(exist_ok=True)
    files = 64
    for i in range(files):
        make_file(folder / f"part{i:02d}.fastq", size // files)
    shell.give(folder)
    target = only.home / "big.bin"
    if not target.exists():
        os.link(work / "data" / "big.bin", target)
    only.give(target)
    digest = hash_file(work / "data" / "big.bin")["sha256"]
    return [
        {"job": JOBS[0], "source": nginx.url("big.bin"), "ca_file": nginx.ca_file, "sha256": digest},
        {"job": JOBS[1], "source": shell.url(str(folder)), "identity": str(shell.key),
         "known_hosts": str(shell.known_hosts)},
        {"job": JOBS[2], "source": only.url(str(target)), "identity": str(only.key),
         "known_hosts": str(only.known_hosts), "sha256": digest, "own_cap": True},
    ]


def inner(spec: dict) -> dict:
    """On host a: one engine, the cap in the settings, the three jobs at once; bytes sampled."""
    from app.engine import Engine
    from app.requests import Defaults, Overrides, resolve
    from app.store import Store

    with Store() as store:
        store.settings.set("limit_rate", f"{spec['cap']}Mbit")
        defaults = Defaults.from_settings(store.settings.all())
    out = Path(spec["out"])
    engine = Engine(run_queue=False, max_jobs=3).start()
    try:
        ids = []
        for job in spec["jobs"]:
            ssh = {k: job[k] for k in ("identity", "known_hosts") if k in job}
            overrides = Overrides(ca_file=job.get("ca_file"), backend_options=ssh,
                                  limit_rate=spec["job_cap"] * 1_000_000 // 8 if job.get("own_cap") else None)
            request = resolve(job["source"], str(out / job["job"].split()[0] / ""), overrides, defaults=defaults,
                              advice=False)
            ids.append(request.submit_to(engine).id)
        samples, began = [], time.monotonic()
        while time.monotonic() - began < WARMUP + spec["seconds"]:
            views = [engine.job(i) for i in ids]
            samples.append([round(time.monotonic() - began, 3), *[v.bytes_done for v in views]])
            time.sleep(0.25)
        states = [engine.job(i).state.value for i in ids]
        for i in ids:
            engine.cancel(i)
    finally:
        engine.close()
    return {"samples": samples, "states": states}


def measure(samples: list[list[float]], seconds: float) -> dict:
    """Mbit/s over [WARMUP, WARMUP + seconds] for all jobs and each one; per-second extremes of the total."""
    window = [s for s in samples if WARMUP <= s[0] <= WARMUP + seconds]
    first, last = window[0], window[-1]
    span = last[0] - first[0]
    per_job = [(last[k] - first[k]) * 8 / span / 1e6 for k in range(1, len(first))]
    seconds_rates = []
    for a in window:
        b = next((s for s in window if s[0] >= a[0] + 1.0), None)
        if b is not None:
            seconds_rates.append(sum(b[1:]) - sum(a[1:]))
    per_second = [v * 8 / 1e6 for v in seconds_rates]
    return {"total_mbps": round(sum(per_job), 1), "jobs_mbps": [round(v, 1) for v in per_job],
            "window_s": round(span, 2), "second_min": round(min(per_second), 1),
            "second_max": round(max(per_second), 1)}


def bench(args: argparse.Namespace, work: Path) -> list[dict]:
    link = f"gc{NET}"
    link_up(link, NET, args)
    host = f"198.18.{NET}.2"
    nginx, shell, only = serve(work, host, tuple(on_host(link, "b")))
    rows = []
    try:
        jobs = sources(work, nginx, shell, only, args.file_size)
        for r in range(args.rounds):
            out = work / "out"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            home = work / f"home-{r}"
            shutil.rmtree(home, ignore_errors=True)
            spec = {"cap": args.cap, "job_cap": args.job_cap, "seconds": args.seconds, "out": str(out), "jobs": jobs}
            proc = subprocess.run([*on_host(link, "a"), sys.executable, __file__, "--inner", json.dumps(spec)],
                                  capture_output=True, text=True, env=dict(os.environ, LABFERRY_HOME=str(home)),
                                  timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"round {r + 1} failed: {proc.stderr[-2000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            row = {"round": r + 1, **measure(got["samples"], args.seconds), "states": got["states"],
                   "cap_mbps": args.cap, "job_cap_mbps": args.job_cap, "rtt_ms": args.rtt, "loss": args.loss,
                   "rate_mbps": args.rate}
            row["cap_share"] = round(row["total_mbps"] / args.cap, 3)
            rows.append(row)
            print(json.dumps(row) if args.json else
                  f"  round {r + 1}: {row['total_mbps']:.1f} Mbit/s together ({row['cap_share']:.1%} of the cap; "
                  f"{row['total_mbps'] / args.rate:.0%} of the link), jobs {row['jobs_mbps']}, per second "
                  f"{row['second_min']}–{row['second_max']}", flush=True)
    finally:
        for server in (only, shell, nginx):
            server.stop()
        link_down(link)
    return rows


def render(rows: list[dict], args: argparse.Namespace, command_line: str) -> str:
    total = statistics.median(r["total_mbps"] for r in rows)
    lines = [
        "## The global bandwidth cap, three jobs together",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt} ms, loss "
        f"{args.loss:g}, {args.rate} Mbit/s): one Ferry engine on host a with a global cap of {args.cap} Mbit/s in "
        "its settings runs three jobs at once against servers on host b — an HTTPS file (nginx, parallel ranges), "
        "an SSH folder of 64 files (the tar stream) and a file from an SFTP-only account with its own "
        f"`--limit-rate` of {args.job_cap} Mbit/s. Bytes delivered were sampled every 0.25 s; a round's figure "
        f"is all bytes over the {args.seconds:g} s after a {WARMUP:g} s warm-up, divided by the time.",
        "",
        "| round | together | share of the cap | share of the link | " + " | ".join(JOBS) + " | 1-s min–max |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['round']} | {r['total_mbps']:.1f} Mbit/s | {r['cap_share']:.1%} | "
                     f"{r['total_mbps'] / args.rate:.0%} | " + " | ".join(f"{v:.1f}" for v in r["jobs_mbps"]) +
                     f" | {r['second_min']:.0f}–{r['second_max']:.0f} |")
    lines += ["", f"Median together: {total:.1f} Mbit/s, {total / args.cap:.1%} of the {args.cap} Mbit/s cap "
              f"(the target: within 5 %). The SFTP-only job's own cap ({args.job_cap} Mbit/s) is the lower "
              "one for it, so it wins there.", "", "Reproduce:", "", "```", command_line, "```", ""]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--inner":
        print(json.dumps(inner(json.loads(sys.argv[2]))))
        return 0
    parser = path_arguments(__doc__, rtt=50, loss=1e-4, work="/tmp/ferry-bench-cap")
    parser.add_argument("--cap", type=int, default=200, help="the global cap, Mbit/s")
    parser.add_argument("--job-cap", type=int, default=40, help="the SFTP-only job's own cap, Mbit/s")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--file-size", type=int, default=1024 * MiB, help=argparse.SUPPRESS)
    args = parser.parse_args()
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, _ = prepared
    rows = bench(args, work)
    text = render(rows, args, "sudo .venv/bin/python tests/bench/global_cap.py " + " ".join(sys.argv[1:]))
    if not args.json:
        print(text)
    if args.write:
        replace_section(args.write, "## The global bandwidth cap", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
