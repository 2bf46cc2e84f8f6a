#!/usr/bin/env python3
"""A whole study from an archive: Ferry by accession against aria2c's best and against wget one file at a time.

Needs root and ``../shared/tools/wanem``; nginx, aria2c, wget. Host b runs nginx with TLS serving the files under
``vol1/fastq/…`` (as ftp.sra.ebi.ac.uk lays them out) and a stand-in for ENA's Portal API
(tests/servers/ena_portal.py) that reports them with their MD5s. Host a fetches each study with each tool in
turn, rounds interleaved: ``labferry copy ena:STUDY`` (which asks the portal first, then fetches and checks
every MD5), ``aria2c -i urls -j4 -x16`` (its best for a study: four files at once, 16 connections each) and
``wget -i urls`` (one file after another, what per-file pipelines do); for the study of small runs
``aria2c -i urls -j16 -x4`` (``-j16`` for a thousand). Four studies (``--studies``, default mixed,small,thousand):
mixed (4 paired runs of 2 × 96 MiB and 4 single runs of 64 MiB: 12 files, 1 GiB), small (40 runs of 4 MiB),
thousand (1,000 runs of 256 KiB: where per-file tools are slowest) and large (4 paired runs of 2 × 512 MiB: the
steady state, where start-up counts little); wget on mixed and thousand. ``--host-connections`` sets Ferry's
budget per study (Ferry's default, 32, when not given; aria2c's -j4 -x16 -s16 may open 64). Figures are bytes /
wall-clock time of the whole command, and the share of the link; every file is compared with its MD5 afterwards.

Each run writes into a folder of its own, and a study of many files keeps its folders until the bench ends. On
ext4 without a journal (this machine's disk), every file created checks each inode freed in the last 5–30
seconds before taking one (``recently_deleted`` in ext4's inode allocator). A run creating a thousand files just
after the last run's thousand were removed spent most of a second of CPU on that, the bench's own doing. And
the disk is synced after laying the studies out and after each run: what one run (or the set-up) wrote was
otherwise written back during the next one (the first run of a round, always Ferry's, came 10–25% slower).

    sudo .venv/bin/python tests/bench/archive_wan.py --rtt 50 --loss 1e-3 --rate 1000 \\
        [--jitter 0] [--rounds 3] [--wget-rounds 1] [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import hashlib
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

from app.accessions.fetch import BUDGET  # noqa: E402
from tests.bench.https_wan import make_file  # noqa: E402
from tests.bench.report import (  # noqa: E402
    MiB,
    link_down,
    link_up,
    on_host,
    path_arguments,
    prepare_path,
    replace_section,
    rotated,
)
from tests.servers.ena_portal import report_row  # noqa: E402
from tests.servers.nginx import Nginx, free_port, make_certificates  # noqa: E402

NET = 94
STUDIES = {"mixed": "PRJEB90001", "small": "PRJEB90002", "large": "PRJEB90003", "thousand": "PRJEB90004"}
WHAT = {"mixed": "12 files, 1 GiB (aria2c -j4 -x16)", "small": "40 × 4 MiB (aria2c -j16 -x4)",
        "large": "8 files, 4 GiB (aria2c -j4 -x16)", "thousand": "1,000 × 256 KiB (aria2c -j16)"}
#: the studies wget is run on (one file after another, as per-file pipelines fetch)
WGET_STUDIES = ("mixed", "thousand")
#: a run's folder of at most this many files is removed once checked; one of more is kept until the bench ends
FEW_FILES = 64


def lay_out(data: Path, studies: list[str]) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """The studies' files under ``data/vol1/fastq``: report rows, and each study's {name: md5}."""
    rows, expected = [], {}
    specs = {"mixed": [(f"ERR900{i:04d}", 2, 96) for i in range(4)] + [(f"ERR901{i:04d}", 1, 64) for i in range(4)],
             "small": [(f"ERR902{i:04d}", 1, 4) for i in range(40)],
             "large": [(f"ERR903{i:04d}", 2, 512) for i in range(4)],
             "thousand": [(f"ERR904{i:04d}", 1, 0.25) for i in range(1000)]}
    for study, runs in specs.items():
        if study not in studies:
            continue
        expected[study] = {}
        for run, count, mib in runs:
            names = [f"{run}_{k}.fastq.gz" for k in (1, 2)] if count == 2 else [f"{run}.fastq.gz"]
            files = []
            for name in names:
                rel = f"vol1/fastq/{run[:6]}/{run}/{name}"
                (data / rel).parent.mkdir(parents=True, exist_ok=True)
                make_file(data / rel, int(mib * MiB))
                files.append((rel, data / rel))
            row = report_row(run, files, experiment_accession=run.replace("ERR", "ERX"),
                             sample_accession="SAMEA9" + run[3:], study_accession=STUDIES[study],
                             secondary_study_accession="ERP9" + STUDIES[study][-4:],
                             library_layout="PAIRED" if count == 2 else "SINGLE")
            rows.append(row)
            expected[study] |= dict(zip(names, row["fastq_md5"].split(";"), strict=True))
    return rows, expected


def command(tool: str, study: str, out: Path, urls: Path, ca: str, connections: dict[str, int]) -> list[str]:
    if tool.startswith("ferry"):  # ferry: the study's --host-connections, if given, else Ferry's default; ferry@N
        budget = tool.partition("@")[2] or (str(connections[study]) if study in connections else "")
        return [sys.executable, "-m", "app", "copy", f"ena:{STUDIES[study]}", f"{out}/", "--ca-file", ca, "--json",
                "-q", *(["--host-connections", budget] if budget else [])]
    if tool == "aria2c":
        jobs = {"small": ["-j16", "-x4"], "thousand": ["-j16"]}.get(study, ["-j4", "-x16", "-s16", "-k1M"])
        return ["aria2c", "-i", str(urls), *jobs, f"--ca-certificate={ca}", "-d", str(out), "--allow-overwrite=true",
                "--file-allocation=none", "--console-log-level=warn", "--summary-interval=0"]
    return ["wget", "-q", f"--ca-certificate={ca}", "-i", str(urls), "-P", str(out)]


def _children_cpu() -> float:
    """User and system seconds of the commands run so far (the tool's own CPU: this machine has two cores)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_tool(tool: str, argv: list[str], out: Path, expected: dict[str, str], env: dict, work: Path) -> dict:
    out.mkdir(parents=True)
    home = Path(tempfile.mkdtemp(prefix="ferryhome", dir=work))
    began, cpu = time.monotonic(), _children_cpu()
    proc = subprocess.run(argv, capture_output=True, text=True, env=dict(env, LABFERRY_HOME=str(home)), timeout=7200)
    spent, cpu = time.monotonic() - began, _children_cpu() - cpu
    size = sum((out / name).stat().st_size for name in expected if (out / name).exists())
    ok = proc.returncode == 0 and all((out / n).exists() and _md5(out / n) == m for n, m in expected.items())
    row = {"tool": tool, "exit": proc.returncode, "seconds": round(spent, 2), "mbps": round(size * 8 / spent / 1e6, 1),
           "md5_ok": ok, "files": len(expected), "cpu_seconds": round(cpu, 2)}
    if proc.returncode != 0:
        row["error"] = proc.stderr.strip()[-300:]
    elif tool.startswith("ferry"):  # the wall time spent fetching (after the portal's answer and the set-up)
        try:
            row["fetch_seconds"] = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
        except (ValueError, IndexError, KeyError):
            pass
    shutil.rmtree(home, ignore_errors=True)
    return row


def _md5(path: Path) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def bench(args: argparse.Namespace, work: Path) -> list[dict]:
    link = f"ar{NET}"
    link_up(link, NET, args)
    host = f"198.18.{NET}.2"
    prefix = tuple(on_host(link, "b"))
    certs = make_certificates(work / "nginx" / "tls", names=(f"IP:{host}",))
    nginx = Nginx(work / "nginx", work / "data", listen=host, certs=certs)
    rows_out: list[dict] = []
    portal = None
    shutil.rmtree(work / "out", ignore_errors=True)
    try:
        report, expected = lay_out(work / "data", args.studies)
        os.sync()  # the studies' files on disk before the first run, not written back during it
        (work / "report.json").write_text(json.dumps(report))
        nginx.start(argv_prefix=prefix)
        port = free_port()
        portal = subprocess.Popen([*prefix, sys.executable, "-m", "tests.servers.ena_portal", str(work / "report.json"),
                                   host, str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        env = dict(os.environ, LABFERRY_ENA_PORTAL=f"http://{host}:{port}/ena/portal/api",
                   LABFERRY_NCBI_SDL=f"http://{host}:{port}/sdl/2/retrieve",
                   LABFERRY_ENA_FILES=nginx.url("").rstrip("/"))
        urls = {}
        for study in args.studies:  # the same files by address, for the peers (no portal: they are given the list)
            urls[study] = work / f"urls-{study}.txt"
            paths = [p for r in report if r["study_accession"] == STUDIES[study] for p in r["fastq_ftp"].split(";")]
            urls[study].write_text("".join(nginx.url(p.split("/", 1)[1]) + "\n" for p in paths))
        ns = on_host(link, "a")
        for r in range(args.rounds):
            for study in args.studies:
                ferries = tuple(f"ferry@{b}" for b in args.budgets) or ("ferry",)
                tools = (*ferries, "aria2c") + (("wget",) if study in WGET_STUDIES and r < args.wget_rounds else ())
                for tool in rotated(tools, r):
                    out = work / "out" / f"{r + 1}-{study}-{tool}"
                    row = run_tool(tool, [*ns, *command(tool, study, out, urls[study], nginx.ca_file,
                                                        args.connections)],
                                   out, expected[study], env, work)
                    if len(expected[study]) <= FEW_FILES:
                        shutil.rmtree(out, ignore_errors=True)
                    os.sync()  # what this run wrote reaches the disk before the next run, not during it
                    row |= {"round": r + 1, "study": study, "rtt_ms": args.rtt, "loss": args.loss,
                            "rate_mbps": args.rate, "link_share": round(row["mbps"] / args.rate, 3)}
                    rows_out.append(row)
                    print(json.dumps(row) if args.json else
                          f"  round {r + 1} {study:<8} {tool:<9} {row['mbps']:7.0f} Mbit/s "
                          f"({row['link_share']:.0%} of the link) md5 {'ok' if row['md5_ok'] else 'BAD'}"
                          f"{'  ' + row['error'] if row.get('error') else ''}", flush=True)
        shutil.rmtree(work / "out", ignore_errors=True)
    finally:
        if portal is not None:
            portal.kill()
        nginx.stop()
        link_down(link)
    return rows_out


def median(rows: list[dict], study: str, tool: str) -> float:
    values = [r["mbps"] for r in rows if r["study"] == study and r["tool"] == tool and r["exit"] == 0]
    return statistics.median(values) if values else float("nan")


def render(rows: list[dict], args: argparse.Namespace, command_line: str) -> str:
    lines = [
        "## A whole study by accession (ENA stand-in) on an emulated long fat network",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `wanem` ({args.rtt} ms, loss "
        f"{args.loss:g}, {args.rate} Mbit/s, jitter {args.jitter} ms): nginx with TLS and a stand-in for ENA's "
        "Portal API on host b, each tool on host a; rounds interleaved, median of "
        f"{args.rounds} (wget: {args.wget_rounds}). Mbit/s = the study's bytes / wall-clock time of the whole "
        "command (Ferry's portal query and MD5 checks included); % = share of the link. Every file's MD5 was "
        "compared afterwards.",
        "",
        "| study | Ferry `copy ena:…` | aria2c | wget, one file after another | Ferry / aria2c | Ferry / wget | MD5 |",
        "|---|---|---|---|---|---|---|",
    ]
    share = lambda v: "not run" if v != v else f"{v:.0f} ({v / args.rate:.0%})"  # noqa: E731
    for study, what in ((s, WHAT[s]) for s in args.studies):
        aria, wget = (median(rows, study, t) for t in ("aria2c", "wget"))
        ok = all(r["md5_ok"] for r in rows if r["study"] == study)
        for tool in [f"ferry@{b}" for b in args.budgets] or ["ferry"]:
            ferry = median(rows, study, tool)
            label = f"{what}, Ferry with {tool.partition('@')[2] or args.connections.get(study, BUDGET)} connections"
            lines.append(f"| {label} | {share(ferry)} | {share(aria)} | {share(wget)} | {ferry / aria:.2f}× | "
                         f"{'-' if wget != wget else f'{ferry / wget:.1f}×'} | "
                         f"{'all matched' if ok else '**MISMATCH**'} |")
    lines += ["", "Reproduce:", "", "```", command_line, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = path_arguments(__doc__, rtt=50, loss=1e-3, work="/tmp/ferry-bench-archive")
    parser.add_argument("--wget-rounds", type=int, default=1, help="rounds that include wget (slow)")
    parser.add_argument("--studies", default="mixed,small,thousand",
                        help="which studies (default mixed,small,thousand; also large)")
    parser.add_argument("--host-connections", default="", metavar="STUDY=N,…",
                        help="Ferry's --host-connections per study, its default for those not named; aria2c "
                             "-j4 -x16 -s16 may open 64 for mixed and large")
    parser.add_argument("--budgets", default="", metavar="N,…",
                        help="run Ferry once per budget in each round (ferry@N), interleaved with the peers")
    args = parser.parse_args()
    args.budgets = [int(b) for b in args.budgets.split(",") if b]
    args.studies = [s for s in args.studies.split(",") if s in STUDIES]
    args.connections = {k: int(v) for k, v in (p.split("=") for p in args.host_connections.split(",") if p)}
    if prepare_path(args) is None:
        return 2
    work = Path(args.work)
    rows = bench(args, work)
    text = render(rows, args, "sudo .venv/bin/python tests/bench/archive_wan.py " + " ".join(sys.argv[1:]))
    if not args.json:
        print(text)
    if args.write:
        replace_section(args.write, "## A whole study by accession", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
