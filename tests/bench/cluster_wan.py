#!/usr/bin/env python3
"""A study spread over a Slurm cluster's nodes: ``copy --cluster slurm`` against Ferry on one node and against a
Slurm job array of aria2c with the same runs dealt the same way (the fetchngs way, with the best single-node tool).

Needs root, ``../shared/tools/wanem`` (or ``WANEM``), Debian's slurmctld, slurmd, munge and aria2c. A real Slurm
(tests/servers/slurm.py) runs with each of ``--nodes`` nodes as host a of its own wanem link (``--rtt``,
``--rate``, ``--loss``) whose host b forwards to this namespace, where nginx (TLS) serves the study's files as
ENA lays them out and the ENA stand-in reports them with their MD5s. Each round runs every tool once, in rotated
order, into a fresh folder, the page cache dropped first:

* ``ferry cluster``: ``labferry copy ena:STUDY DEST/ --cluster slurm --nodes N`` from this namespace (the login
  node); the whole command: plan, submit, the tasks, the final check.
* ``ferry one node``: ``labferry copy ena:STUDY DEST/`` run on node 1 itself.
* ``aria2c array``: the runs dealt to N lists by bytes as Ferry deals them (``app.cluster.plan.deal``), one
  ``sbatch --array`` task a list running ``aria2c -i LIST -j16 -x4`` with each file's MD5 (``checksum=md5=…``),
  timed from ``sbatch`` until the array has left the queue.

Figures: wall-clock seconds, Mbit/s of the study's bytes, % of the aggregate link (N × ``--rate``), CPU seconds
of the command (its children), and every file's MD5 checked afterwards (not timed).

    sudo .venv/bin/python tests/bench/cluster_wan.py --rtt 50 --rate 300 --loss 1e-4 --runs 300 --run-mib 8 \\
        [--nodes 3] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.cluster.plan import deal  # noqa: E402
from tests.bench.report import WANEM, rotated  # noqa: E402
from tests.servers.ena_portal import Portal  # noqa: E402
from tests.servers.nginx import Nginx, make_certificates  # noqa: E402
from tests.servers.slurm import SlurmCluster  # noqa: E402

MiB = 1 << 20
TOOLS = ("ferry cluster", "ferry one node", "aria2c array")
STUDY = "PRJEB5757"


def lay_out(portal: Portal, runs: int, size: int) -> list[tuple[str, str, int]]:
    """The study's runs (name, md5, size), written where nginx serves them."""
    rng = random.Random(57)
    files = []
    for i in range(runs):
        run = f"ERR57{i:05d}"
        data = rng.randbytes(size)
        portal.add_run(run, experiment=run.replace("ERR", "ERX"), layout="SINGLE", sample=f"SAMEA57{i:05d}",
                       study="ERP575757", project=STUDY, fastq=[(f"{run}.fastq.gz", data)])
        files.append((f"{run}.fastq.gz", hashlib.md5(data).hexdigest(), size))
    return files


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ferry(args, cluster: SlurmCluster, dest: Path, env: dict, one_node: bool) -> int:
    argv = [sys.executable, "-m", "app", "copy", f"ena:{STUDY}", f"{dest}/", "--ca-file", env["CA"], "-q",
            "--samplesheet", "none"]
    if one_node:
        argv = ["ip", "netns", "exec", cluster._ns(0), *argv]
    else:
        argv += ["--cluster", "slurm", "--nodes", str(args.nodes)]
        if args.host_budget:
            argv += ["--host-budget", str(args.host_budget)]
    if args.show:  # where the time goes: each line Ferry says, with the seconds since the command began
        argv.remove("-q")
        began = time.monotonic()
        proc = subprocess.Popen(argv, env={**env, "LABFERRY_PROGRESS_EVERY": "1"}, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            print(f"{time.monotonic() - began:6.2f} {line.rstrip()[:150]}", file=sys.stderr)
        return proc.wait(timeout=3600)
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
    return proc.returncode


def run_aria2c(args, cluster: SlurmCluster, dest: Path, env: dict, files, base: str, work: Path) -> int:
    """One array task a list, dealt as Ferry deals; each task's exit status in rc-K."""
    shares = deal([size for _, _, size in files], args.nodes)
    for k, share in enumerate(shares):
        lines = []
        for i in share:
            name, md5, _ = files[i]
            run = name.split(".")[0]
            lines += [f"{base}/vol1/fastq/{run[:6]}/{run}/{name}", f"  checksum=md5={md5}", f"  out={name}"]
        (work / f"list-{k}").write_text("\n".join(lines) + "\n")
    script = work / "aria2c.sh"
    script.write_text(f"""#!/bin/sh
aria2c -i {work}/list-$SLURM_ARRAY_TASK_ID -d {dest} -j16 -x4 -s4 --ca-certificate={env['CA']} \\
  --console-log-level=warn --summary-interval=0 --allow-overwrite=true --file-allocation=none
echo $? > {work}/rc-$SLURM_ARRAY_TASK_ID
""")
    script.chmod(0o755)
    for old in work.glob("rc-*"):
        old.unlink()
    job = subprocess.run(["sbatch", "--parsable", f"--array=0-{len(shares) - 1}", "--exclusive", "--nodes=1",
                          f"--output={work}/aria2c-%a.log", str(script)], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout.strip()
    while subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True,
                         timeout=60).stdout.strip():
        time.sleep(0.5)
    codes = [int((work / f"rc-{k}").read_text() or 1) for k in range(len(shares)) if (work / f"rc-{k}").exists()]
    return 0 if len(codes) == len(shares) and not any(codes) else 1


def checked(dest: Path, files) -> bool:
    for name, md5, _ in files:
        path = dest / name
        if not path.is_file() or hashlib.md5(path.read_bytes()).hexdigest() != md5:
            return False
    return True


def bench(args, work: Path) -> list[dict]:
    wanem = (os.environ.get("WANEM", str(WANEM)), "--rtt", str(args.rtt), "--rate", str(args.rate),
             "--loss", str(args.loss))
    cluster = SlurmCluster(work / "slurm", args.nodes, wanem=wanem).start()
    rows = []
    try:
        addr = cluster.server_address
        certs = make_certificates(work / "tls", names=(f"IP:{addr}",))
        web = Nginx(work / "nginx", work / "data", listen=addr, certs=certs)
        portal = Portal(work / "data", listen=addr)
        files = lay_out(portal, args.runs, args.run_mib * MiB)
        subprocess.run(["sync"], check=True)
        web.start()
        portal.start()
        base = f"https://{addr}:{web.port}"
        env = dict(os.environ, **cluster.env, LABFERRY_ENA_PORTAL=portal.url, LABFERRY_ENA_FILES=base,
                   LABFERRY_HOME=str(work / "home"), CA=web.ca_file)
        total = sum(size for _, _, size in files)
        for round_index in range(args.rounds):
            for tool in rotated(tuple(args.tools.split(",")), round_index):
                rows.append(one_run(args, cluster, tool, round_index, files, base, env, work, total))
                print(json.dumps(rows[-1]) if args.json else
                      f"round {round_index + 1} {tool:15s} {rows[-1]['seconds']:7.1f} s "
                      f"{rows[-1]['mbps']:7.1f} Mbit/s {rows[-1]['pct_link']:5.1f} % ok={rows[-1]['ok']}", flush=True)
        portal.stop()
        web.stop()
    finally:
        cluster.stop()
    return rows


def one_run(args, cluster, tool: str, round_index: int, files, base: str, env: dict, work: Path, total: int) -> dict:
    dest = work / "dest" / tool.replace(" ", "-")
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    cpu, began = _children_cpu(), time.monotonic()
    if tool == "aria2c array":
        code = run_aria2c(args, cluster, dest, env, files, base, work)
    else:
        code = run_ferry(args, cluster, dest, env, one_node=tool == "ferry one node")
    seconds = time.monotonic() - began
    cpu = _children_cpu() - cpu
    ok = code == 0 and checked(dest, files)
    shutil.rmtree(dest, ignore_errors=True)
    mbps = total * 8 / seconds / 1e6
    return {"tool": tool, "round": round_index + 1, "seconds": round(seconds, 2), "mbps": round(mbps, 1),
            "pct_link": round(100 * mbps / (args.nodes * args.rate), 1), "cpu_s": round(cpu, 1), "exit": code,
            "ok": ok, "files": len(files), "bytes": total, "nodes": args.nodes, "rtt": args.rtt, "rate": args.rate,
            "loss": args.loss}


def summary(rows: list[dict], args) -> str:
    medians = {t: statistics.median(r["seconds"] for r in rows if r["tool"] == t and r["ok"])
               for t in {r["tool"] for r in rows} if any(r["ok"] for r in rows if r["tool"] == t)}
    lines = [f"{t:15s} median {s:7.1f} s" for t, s in sorted(medians.items())]
    cluster = medians.get("ferry cluster")
    for peer in ("ferry one node", "aria2c array"):
        if cluster and peer in medians:
            lines.append(f"ferry cluster / {peer}: {medians[peer] / cluster:.2f}x")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rtt", type=float, default=50)
    p.add_argument("--rate", type=float, default=300)
    p.add_argument("--loss", type=float, default=1e-4)
    p.add_argument("--nodes", type=int, default=3)
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--run-mib", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--work", default="/tmp/labferry-bench-cluster")
    p.add_argument("--json", action="store_true")
    p.add_argument("--host-budget", type=int, help="Ferry cluster's --host-budget (default: Ferry's)")
    p.add_argument("--show", action="store_true", help="print Ferry's lines with the time since it began")
    args = p.parse_args()
    if os.geteuid() != 0 or not Path(os.environ.get("WANEM", str(WANEM))).exists():
        print("run as root, with ../shared/tools/wanem (or WANEM=path)", file=sys.stderr)
        return 2
    print(f"peers found: aria2c {'yes' if shutil.which('aria2c') else 'NO'}; sbatch "
          f"{'yes' if shutil.which('sbatch') else 'NO'}", file=sys.stderr)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rows = bench(args, work)
    print(summary(rows, args), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
