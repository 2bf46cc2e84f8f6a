#!/usr/bin/env python3
"""GridFTP's UDT against TCP on one emulated path: what ``--transport auto`` should pick, and what UDT costs.

Run through ``gridftp_wan.py udt``. Needs root and ``../shared/tools/wanem``; globus-url-copy,
globus-gridftp-server, the UDT driver and grid-proxy-init. Host b runs a globus-gridftp-server on gsiftp://
with GSI credentials made for the run (``tests/servers/gsi.py``) and ``-allow-udt``; host a fetches a file of
random bytes, in the same run with rounds interleaved (who goes first rotates):

- ``udt``: bare ``globus-url-copy -udt`` (one UDT flow: UDT runs in stream mode, without ``-p``);
- ``tcp-p1``: bare ``globus-url-copy -p 1``, the one TCP stream UDT is meant to beat;
- ``ferry-tcp``: Ferry ``--transport tcp --streams auto`` (fresh data folder: streams from the round trip);
- ``ferry-auto``: Ferry's default ``--transport auto`` in a data folder where ``labferry preflight`` measured
  this path first (UDT beside the TCP sweep): it takes UDT only if that measured faster.

Mbit/s are the file's size per second of wall time of the whole command; a run still going after
``--cap-seconds`` is stopped and its rate is what it wrote by then (no SHA-256 for it). CPU seconds per GiB are
the client's (host a: Ferry and globus-url-copy) and the server's (its sessions) for the bytes moved.

    sudo .venv/bin/python tests/bench/gridftp_wan.py udt --rtt 50 --loss 1e-4 --size 1G,4G --rounds 2 --json
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
from tests.bench.gridftp_wan import hosts_files  # noqa: E402
from tests.bench.https_wan import make_file  # noqa: E402
from tests.bench.report import (  # noqa: E402
    MiB,
    link_down,
    link_up,
    on_host,
    outcome_lines,
    path_arguments,
    prepare_path,
    rated,
    replace_section,
    rotated,
)
from tests.servers.gridftp import GridftpServer  # noqa: E402
from tests.servers.gsi import GsiCredentials  # noqa: E402

TOOLS = ("udt", "tcp-p1", "ferry-tcp", "ferry-auto")
NET = 83
TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> float:
    """CPU seconds of the server and the sessions it forked and reaped (utime, stime, cutime, cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICKS


class Bench:
    def __init__(self, args, work: Path) -> None:
        self.args, self.work = args, work
        self.link = f"udt{NET}"
        self.ns = on_host(self.link, "a")

    def start(self) -> None:
        link_up(self.link, NET, self.args)
        self.host = hosts_files(self.link, NET)
        self.gsi = GsiCredentials(self.work / "gsi", host=self.host).make()
        self.server = GridftpServer(self.work / "gsiftp", listen=self.host, gsi=self.gsi, udt=True,
                                    argv_prefix=tuple(self.on_b())).start()
        self.env = dict(os.environ, **self.gsi.client_env())

    def on_b(self) -> list[str]:
        return on_host(self.link, "b")

    def stop(self) -> None:
        self.server.stop()
        link_down(self.link)
        hosts_files(self.link, NET, remove=True)

    def source(self, size: int) -> tuple[Path, str]:
        local = self.work / "data" / f"random-{size // MiB}M.bin"
        make_file(local, size)
        there = self.server.data / local.name
        if not there.exists():
            os.link(local, there)
        self.server.give(there)
        return there, hash_file(local)["sha256"]

    def preflight(self) -> dict:
        """``labferry preflight`` of the server in its own data folder, which ``ferry-auto`` starts from."""
        self.preflight_home = self.work / "preflight-home"
        shutil.rmtree(self.preflight_home, ignore_errors=True)
        proc = subprocess.run([*self.ns, sys.executable, "-m", "app", "preflight",
                               f"gsiftp://{self.host}:{self.server.port}/", "--json"], capture_output=True, text=True,
                              env=dict(self.env, LABFERRY_HOME=str(self.preflight_home)), cwd=ROOT, timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"preflight failed: {proc.stderr[-500:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def argv(self, tool: str, url: str, target: Path) -> tuple[list[str], dict]:
        if tool in ("udt", "tcp-p1"):
            return [*self.ns, "globus-url-copy", *(["-udt"] if tool == "udt" else ["-p", "1"]), url,
                    f"file://{target}"], self.env
        if tool == "ferry-auto":
            home = Path(tempfile.mkdtemp(prefix="ferryhome", dir=self.work))
            shutil.copytree(self.preflight_home, home, dirs_exist_ok=True)
            extra = []
        else:
            home, extra = Path(tempfile.mkdtemp(prefix="ferryhome", dir=self.work)), ["--transport", "tcp"]
        return [*self.ns, sys.executable, "-m", "app", "copy", url, str(target), "--streams", "auto", *extra,
                "--json", "-q"], dict(self.env, LABFERRY_HOME=str(home))

    def run(self, tool: str, remote: Path, digest: str) -> dict:
        out = self.work / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        os.chmod(out, 0o777)
        target = out / remote.name
        argv, env = self.argv(tool, self.server.url(remote), target)
        size = remote.stat().st_size
        before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu(self.server.proc.pid)
        began = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        cut = None
        try:
            stdout, stderr = proc.communicate(timeout=self.args.cap_seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            cut = time.monotonic() - began
        spent = time.monotonic() - began
        time.sleep(0.5)  # the server reaps the session it forked
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        row = {"tool": tool, "size_mib": size // MiB, "exit": proc.returncode, "seconds": round(spent, 2),
               "client_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
               "server_cpu_s": round(server_cpu(self.server.proc.pid) - server_before, 1)}
        written = max((p.stat().st_size for p in out.iterdir() if p.is_file()), default=0)  # Ferry's is a .part
        rated(row, size, spent, cut, target, digest, written if cut is not None else None)
        if tool.startswith("ferry") and proc.returncode == 0:
            result = json.loads(stdout.strip().splitlines()[-1])
            row |= {"streams": result["streams"],
                    "transport": "udt" if any("UDT chosen" in n for n in result["notes"]) else "tcp"}
        elif proc.returncode and cut is None:
            row["error"] = stderr.strip()[-300:]
        shutil.rmtree(out, ignore_errors=True)
        return row


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")  # a tool that wrote nothing before its cap


def render(rows: list[dict], preflight: dict, args, command: str) -> str:
    def med(tool: str, size: int, key: str = "mbps") -> float:
        got = [r[key] for r in rows if r["tool"] == tool and r["size_mib"] == size and r["exit"] == 0]
        return statistics.median(got) if got else float("nan")

    def cpu(tool: str, size: int) -> str:
        # whole runs only: a run stopped at the cap leaves its server session running, not yet counted
        whole = [r for r in rows if r["tool"] == tool and r["size_mib"] == size and r["exit"] == 0
                 and r.get("partial_bytes") is None]
        if not whole:
            return "–"
        gib = size / 1024
        client = statistics.median(r["client_cpu_s"] for r in whole) / gib
        return f"{client:.1f} + {statistics.median(r['server_cpu_s'] for r in whole) / gib:.1f}"

    udt = (preflight.get("transports") or {}).get("udt")
    lines = [
        f"## GridFTP UDT against TCP on {args.rtt:g} ms / {args.loss:g} loss, {args.rate} Mbit/s",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine (client, server and the emulated link share "
        "its two cores): wanem, globus-gridftp-server 13.24 on gsiftp:// with GSI and `-allow-udt` on host b, "
        "globus-url-copy 10.12 on host a, a file of random bytes. Mbit/s = size / wall time of the whole command "
        f"(% of the link); medians of {args.rounds} rounds, interleaved. A run still going after "
        f"{args.cap_seconds:g} s was stopped and counts what it wrote by then. CPU is seconds per GiB moved, "
        "client (host a) + server (host b).",
        "",
        "`labferry preflight` of this path first (the data folder `ferry-auto` starts from): TCP sweep "
        + ", ".join(f"{n}: {v:.0f}" for n, v in preflight["sweep"].items())
        + (f" Mbit/s, UDT {udt:.0f} Mbit/s " if udt else " Mbit/s, UDT not measured "),
        f"→ `--transport auto` takes **{preflight.get('recommended_transport')}** ({preflight.get('transport_why')}).",
        "",
        "| file | UDT (bare `-udt`) | TCP `-p 1` (bare) | Ferry TCP, auto streams | Ferry `--transport auto` "
        "| UDT / TCP -p 1 | UDT / Ferry TCP | CPU s/GiB: UDT | TCP -p 1 | Ferry TCP |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sorted({r["size_mib"] for r in rows}):
        u, p1, ft, fa = (med(t, size) for t in TOOLS)
        streams = sorted({r.get("streams") for r in rows if r["tool"] == "ferry-tcp" and r["size_mib"] == size
                          and r.get("streams")})
        chosen = sorted({r.get("transport") for r in rows if r["tool"] == "ferry-auto" and r["size_mib"] == size
                         and r.get("transport")})
        lines.append(f"| {size} MiB | {u:.0f} ({u / args.rate:.0%}) | {p1:.0f} ({p1 / args.rate:.0%}) | {ft:.0f} "
                     f"({ft / args.rate:.0%}, {'/'.join(map(str, streams))} streams) | {fa:.0f} "
                     f"({fa / args.rate:.0%}, {'/'.join(chosen)}) | {u / p1:.2f}× | {u / ft:.2f}× | "
                     f"{cpu('udt', size)} | {cpu('tcp-p1', size)} | {cpu('ferry-tcp', size)} |")
    lines += outcome_lines(rows, command)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = path_arguments(__doc__, rtt=50, loss=1e-4, work="/tmp/ferry-bench-udt")
    parser.add_argument("--cap-seconds", type=float, default=150)
    parser.add_argument("--tools", default=",".join(TOOLS))
    args = parser.parse_args(argv)
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    bench = Bench(args, work)
    rows: list[dict] = []
    bench.start()
    try:
        preflight = bench.preflight()
        print(json.dumps({"preflight": {k: preflight.get(k) for k in ("sweep", "transports", "recommended_streams",
                                                                      "recommended_transport", "transport_why")}}),
              flush=True)
        tools = tuple(args.tools.split(","))
        for size in sizes:
            remote, digest = bench.source(size)
            for index in range(args.rounds):
                for tool in rotated(tools, index):
                    row = bench.run(tool, remote, digest) | {"round": index + 1}
                    rows.append(row)
                    print(json.dumps(row) if args.json else f"  {tool:<11} {row['size_mib']} MiB "
                          f"{row['mbps']:7.0f} Mbit/s sha256 {row['sha256_ok']}", flush=True)
    finally:
        bench.stop()
    command = "sudo .venv/bin/python tests/bench/gridftp_wan.py udt " + " ".join(argv)
    text = render(rows, preflight, args, command.strip())
    print(text, file=sys.stderr)
    if args.write:
        replace_section(args.write, text.splitlines()[0], text)
    return 0
