#!/usr/bin/env python3
"""Ferry --compress auto against --compress off and scp -C, on simulated Illumina reads over an emulated path.

Host b runs a stock sshd serving plain FASTQ (art_illumina's HiSeq 2500 reads over a generated reference,
``tests/genomic.py``) and the same reads gzipped; host a fetches them. In the same run, rounds interleaved:

- plain FASTQ: Ferry ``--compress auto``, Ferry ``--compress off``, ``scp -C`` (zlib inside SSH, one stream);
- gzipped FASTQ: Ferry ``--compress auto`` (skips it by name), Ferry ``--compress off``.

Mbit/s are of **original bytes** (the file's size) per second of wall time of the whole command, and every
copy's SHA-256 is checked against the source. The link's payload ceiling is ``--rate`` × 1448/1500 (TCP's
payload in a 1500-byte packet with timestamps): compression's target is to deliver at twice that. scp -C on a
long lossy path is slow (one TCP stream), so it runs for ``--scp-seconds`` and its rate is what it wrote then.

    sudo .venv/bin/python tests/bench/compress_wan.py --rtt 50 --loss 1e-4 --size 4G --rounds 2 --json
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

from backends.streams.hashing import hash_file  # noqa: E402
from tests.bench.report import (  # noqa: E402
    WANEM,
    MiB,
    on_host,
    outcome_lines,
    path_arguments,
    prepare_path,
    rated,
    replace_section,
    warm_cache,
)
from tests.genomic import simulate  # noqa: E402
from tests.servers.sshd import Sshd  # noqa: E402

TOOLS = ("ferry-auto", "ferry-off", "scp-C", "gz-ferry-auto", "gz-ferry-off")
NET = 94
PAYLOAD = 1448 / 1500


def reads_of(work: Path, size: int) -> tuple[Path, Path]:
    """Plain and gzipped FASTQ of about ``size`` bytes, made once per size (art_illumina, then gzip -6)."""
    folder = work / "data" / f"reads-{size // MiB}M"
    fastq, gz = folder / "reads.fq", folder / "reads.fq.gz"
    if not fastq.exists():
        print(f"simulating {size // MiB} MiB of reads …", file=sys.stderr, flush=True)
        simulate(folder, size, sam=False)
    if not gz.exists():
        with open(gz, "wb") as out:
            subprocess.run(["gzip", "-6", "-c", str(fastq)], stdout=out, check=True)
    return fastq, gz


def run_one(tool: str, server: Sshd, host: str, ns: list[str], remote: Path, digest: str, work: Path,
            scp_seconds: float) -> dict:
    out = work / "out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    target = out / remote.name
    warm_cache(remote)
    if tool == "scp-C":
        argv = [*ns, "scp", "-q", "-C", "-i", str(server.key), "-o", f"UserKnownHostsFile={server.known_hosts}",
                "-o", "BatchMode=yes", "-P", str(server.port), f"{server.user}@{host}:{remote}", str(target)]
        env = None
    else:
        home = tempfile.mkdtemp(prefix="ferryhome", dir=work)
        env = dict(os.environ, LABFERRY_HOME=home)
        argv = [*ns, sys.executable, "-m", "app", "copy", f"sftp://{server.user}@{host}:{server.port}{remote}",
                str(target), *server.args(), "--streams", "auto", "--compress", tool.rsplit("-", 1)[1], "--json",
                "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    cut = None
    try:
        stdout, stderr = proc.communicate(timeout=scp_seconds if tool == "scp-C" else 3600)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        cut = time.monotonic() - began
    spent = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    size = remote.stat().st_size
    row = {"tool": tool, "file": remote.name, "size_mib": size // MiB, "exit": proc.returncode,
           "seconds": round(spent, 2),
           "client_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)}
    rated(row, size, spent, cut, target, digest)
    if tool != "scp-C" and proc.returncode == 0:
        result = json.loads(stdout.strip().splitlines()[-1])
        row |= {"streams": result["streams"], "bytes_on_wire": result.get("bytes_on_wire"),
                "own_mbps": result["throughput_mbps"]}
    elif proc.returncode and cut is None:
        row["error"] = stderr.strip()[-300:]
    shutil.rmtree(out, ignore_errors=True)
    return row


def render(rows: list[dict], args, command: str) -> str:
    ceiling = args.rate * PAYLOAD

    def med(tool: str, size: int) -> float:
        got = [r["mbps"] for r in rows if r["tool"] == tool and r["size_mib"] == size and r["exit"] == 0]
        return statistics.median(got) if got else float("nan")

    lines = [
        f"## Compression (--compress) on {args.rtt:g} ms / {args.loss:g} loss, {args.rate} Mbit/s",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine (both ends and the emulated link share its "
        "two cores): wanem, stock sshd on host b, Ferry on host a, `--streams auto`, fresh data folder. Plain "
        "FASTQ: art_illumina HiSeq 2500 150 bp reads at 20-fold over a generated reference (`tests/genomic.py`); "
        "gzipped: the same reads through `gzip -6`. Mbit/s of **original bytes** per second of wall time; "
        f"payload ceiling {ceiling:.0f} Mbit/s (`--rate` × 1448/1500). Medians of {args.rounds} rounds, "
        f"interleaved; scp -C runs for {args.scp_seconds:g} s and its rate is what it wrote then.",
        "",
        "| FASTQ (plain) | Ferry auto | Ferry off | scp -C | auto / ceiling (target ≥ 2×) | auto / off | auto / scp -C "
        "| gzipped: Ferry auto | gzipped: Ferry off | gz auto / off (target ≥ 0.98) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sorted({r["size_mib"] for r in rows if r["tool"] == "ferry-auto"}):
        a, o, s = med("ferry-auto", size), med("ferry-off", size), med("scp-C", size)
        gz_sizes = sorted({r["size_mib"] for r in rows if r["tool"].startswith("gz-")})
        gz = min(gz_sizes, key=lambda g: abs(g - size * 0.34)) if gz_sizes else None
        ga, go = (med("gz-ferry-auto", gz), med("gz-ferry-off", gz)) if gz is not None else (float("nan"),) * 2
        lines.append(f"| {size} MiB | {a:.0f} ({a / args.rate:.0%}) | {o:.0f} ({o / args.rate:.0%}) | {s:.0f} | "
                     f"**{a / ceiling:.2f}×** | {a / o:.2f}× | {a / s:.1f}× | {ga:.0f} ({gz} MiB) | {go:.0f} | "
                     f"**{ga / go:.3f}** |")
    wire = [r for r in rows if r["tool"] == "ferry-auto" and r.get("bytes_on_wire")]
    if wire:
        ratio = statistics.median([r["size_mib"] * MiB / r["bytes_on_wire"] for r in wire])
        cpu = statistics.median([r["client_cpu_s"] / (r["size_mib"] / 1024) for r in wire])
        lines += ["", f"Ferry auto put {ratio:.2f}× fewer bytes on the wire than it delivered; this side (host a: "
                      f"ssh, unpacking, hashing) spent {cpu:.1f} s of CPU per GiB."]
    lines += outcome_lines(rows, command)
    return "\n".join(lines)


def main() -> int:
    parser = path_arguments(__doc__, rtt=50, loss=1e-4, work="/tmp/ferry-bench-compress")
    parser.add_argument("--scp-seconds", type=float, default=60)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--render", metavar="LOG", help="only write the table again from a run's --json lines")
    args = parser.parse_args()
    if args.render:  # the same path's arguments, the rows a --json run printed
        rows = [json.loads(line) for line in Path(args.render).read_text().splitlines() if line.startswith("{")]
        command = "sudo .venv/bin/python tests/bench/compress_wan.py " + " ".join(
            a for a in sys.argv[1:] if not a.startswith("--render") and a != args.render)
        text = render(rows, args, command)
        print(text)
        if args.write:
            replace_section(args.write, text.splitlines()[0], text)
        return 0
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    link = f"cz{NET}"
    subprocess.run([str(WANEM), "down", link], capture_output=True)
    subprocess.run([str(WANEM), "up", link, "--rtt", str(args.rtt), "--rate", str(args.rate), "--loss",
                    str(args.loss), "--jitter", str(args.jitter), "--net", str(NET)], check=True, capture_output=True)
    host = f"198.18.{NET}.2"
    server = Sshd(work / "sshd", listen=host).start(argv_prefix=tuple(on_host(link, "b")))
    rows: list[dict] = []
    try:
        files = {}
        for size in sizes:
            fastq, gz = reads_of(work, size)
            for local, key in ((fastq, "plain"), (gz, "gz")):
                there = server.home / f"{size // MiB}M-{local.name}"
                if not there.exists():
                    os.link(local, there)
                files[(size, key)] = (there, hash_file(local)["sha256"])
        server.give(server.home)
        tools = args.tools.split(",")
        for size in sizes:
            for _ in range(args.rounds):
                for tool in tools:
                    remote, digest = files[(size, "gz" if tool.startswith("gz-") else "plain")]
                    row = run_one(tool.removeprefix("gz-") if tool.startswith("gz-") else tool, server, host,
                                  on_host(link, "a"), remote, digest, work, args.scp_seconds)
                    row["tool"] = tool
                    rows.append(row)
                    print(json.dumps(row) if args.json else f"  {tool:<14} {row['size_mib']} MiB {row['mbps']:7.0f} "
                          f"Mbit/s sha256 {row['sha256_ok']}", flush=True)
    finally:
        server.stop()
        subprocess.run([str(WANEM), "down", link], capture_output=True)
    command = "sudo .venv/bin/python tests/bench/compress_wan.py " + " ".join(sys.argv[1:])
    text = render(rows, args, command.strip())
    print(text, file=sys.stderr)
    if args.write:
        replace_section(args.write, text.splitlines()[0], text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
