#!/usr/bin/env python3
"""Ferry --via a DTN's agent (store-and-forward with cut-through) against Ferry direct and scp direct, on wanem's
relay topology.

Host a is the laptop, host r the DTN (sshd and Ferry's agent), host b the collaborator (sshd). a <-> r is the
first hop (``--rtt --loss --rate --jitter``: a lossy last mile), r <-> b the second (``--hop2`` as wanem takes
it: a clean backbone); a direct a -> b connection crosses both. In the same run, rounds interleaved: ``scp``
a -> b, Ferry a -> b (``--streams auto``), and Ferry ``--via site:dtn`` (the agent on r picks its own streams
for r -> b). ``--direction down`` copies b -> a. Every copy's SHA-256 is checked at its destination.

scp on a lossy long path takes an hour for a few GiB (7 Mbit/s on the default path), so it runs for
``--scp-seconds`` and its rate is the bytes it wrote in that time (start-up included, as for the others).

    sudo .venv/bin/python tests/bench/relay_wan.py --rtt 10 --loss 0.01 --hop2 "rtt=100,loss=0" \\
        --size 1G,4G --direction up,down --rounds 2 [--json] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import getpass
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

from tests.bench.https_wan import make_file  # noqa: E402
from tests.bench.report import WANEM, MiB, on_host, path_arguments, prepare_path, rated, replace_section  # noqa: E402
from tests.servers.agent import ferry_command  # noqa: E402
from tests.servers.sshd import Sshd  # noqa: E402

TOOLS = ("scp", "ferry-direct", "ferry-via")
NET = 93


class Topology:
    """The three hosts, an sshd on r and on b, the DTN's data folder with site "collab" (b as r sees it), and
    the command that starts Ferry on r."""

    def __init__(self, work: Path, args) -> None:
        self.work, self.link = work, "relay"
        subprocess.run([str(WANEM), "down", self.link], capture_output=True)
        subprocess.run([str(WANEM), "up", self.link, "--rtt", str(args.rtt), "--rate", str(args.rate), "--loss",
                        str(args.loss), "--jitter", str(args.jitter), "--hop2", args.hop2, "--net", str(NET)],
                       check=True, capture_output=True)
        self.a, self.b, self.r = (f"198.18.{NET}.{n}" for n in (1, 2, 3))
        user = getpass.getuser()
        self.sshd_r = Sshd(work / "sshd-r", listen=self.r, user=user).start(argv_prefix=tuple(on_host(self.link, "r")))
        self.sshd_b = Sshd(work / "sshd-b", listen=self.b, user=user).start(argv_prefix=tuple(on_host(self.link, "b")))
        self.srv = work / "collab"  # b's folder: the files it serves and receives
        self.srv.mkdir(exist_ok=True)
        self.dtn_home = work / "dtn-home"
        self.command = ferry_command(work / "ferry-on-dtn", self.dtn_home)
        self._save_site(self.dtn_home, "collab", self.sshd_b, self.b, str(self.srv))
        from app.store import Store

        with Store(self.dtn_home / "ferry.sqlite3") as store:
            store.settings.set("default_streams", args.agent_streams)

    @staticmethod
    def _save_site(home: Path, name: str, server: Sshd, host: str, folder: str) -> None:
        from app.sites import Site, SiteBook
        from app.store import Store

        with Store(home / "ferry.sqlite3") as store:
            SiteBook(store).save(Site(name, "sftp", host, server.port, server.user, folder, "auto", str(server.key),
                                      {"known_hosts": str(server.known_hosts)}))

    def laptop_home(self) -> Path:
        home = Path(tempfile.mkdtemp(prefix="laptop", dir=self.work))
        self._save_site(home, "dtn", self.sshd_r, self.r, str(self.work))
        return home

    def agent_pid(self) -> int | None:
        pid = self.dtn_home / "agent" / "agent.pid"
        try:
            return int(pid.read_text())
        except (OSError, ValueError):
            return None

    def forget_relays(self) -> None:
        """Each round is a new relay (the same command would resume the last one, already delivered)."""
        shutil.rmtree(self.dtn_home / "agent" / "relays", ignore_errors=True)
        shutil.rmtree(self.dtn_home / "spool", ignore_errors=True)

    def close(self) -> None:
        pid = self.agent_pid()
        if pid:
            subprocess.run([sys.executable, "-m", "app", "agent", "--stop"], capture_output=True,
                           env=dict(os.environ, LABFERRY_HOME=str(self.dtn_home)))
        self.sshd_r.stop()
        self.sshd_b.stop()
        subprocess.run([str(WANEM), "down", self.link], capture_output=True)


def cpu_seconds(pid: int | None) -> float:
    """User and system time of ``pid`` and its reaped children (its SSH clients)."""
    if not pid:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int | None) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, TypeError):
        pass
    return float("nan")


def one_run(top: Topology, tool: str, direction: str, name: str, size: int, digest: str, args) -> dict:

    ns = on_host(top.link, "a")
    out_dir = top.work / "out"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    remote_in = top.srv / "in"  # uploads land here on b
    shutil.rmtree(remote_in, ignore_errors=True)
    remote_in.mkdir()
    local = top.work / "data" / name
    home = top.laptop_home()
    b = top.sshd_b
    ssh_opts = ["-i", str(b.key), "-o", f"UserKnownHostsFile={b.known_hosts}", "-o", "BatchMode=yes",
                "-P", str(b.port)]
    if direction == "up":
        target = remote_in / name
        argv = {
            "scp": ["scp", "-q", *ssh_opts, str(local), f"{b.user}@{top.b}:{target}"],
            "ferry-direct": [sys.executable, "-m", "app", "copy", str(local), f"sftp://{b.user}@{top.b}:{b.port}"
                             f"{remote_in}/", *b.args(), "--streams", "auto", "--json", "-q"],
            "ferry-via": [sys.executable, "-m", "app", "copy", str(local), "site:collab/in/", "--via", "site:dtn",
                          "--agent-command", str(top.command), "--json", "-q"],
        }[tool]
    else:
        target = out_dir / name
        argv = {
            "scp": ["scp", "-q", *ssh_opts, f"{b.user}@{top.b}:{top.srv / name}", str(target)],
            "ferry-direct": [sys.executable, "-m", "app", "copy", f"sftp://{b.user}@{top.b}:{b.port}{top.srv / name}",
                             str(target), *b.args(), "--streams", "auto", "--json", "-q"],
            "ferry-via": [sys.executable, "-m", "app", "copy", f"site:collab/{name}", str(target), "--via",
                          "site:dtn", "--agent-command", str(top.command), "--json", "-q"],
        }[tool]
    if tool == "ferry-via":
        argv += args.via_args.split()
    top.forget_relays()
    agent, sshd_r = top.agent_pid(), top.sshd_r.proc.pid
    cpu_before = cpu_seconds(agent), cpu_seconds(sshd_r)
    env = dict(os.environ, LABFERRY_HOME=str(home))
    began = time.monotonic()
    proc = subprocess.Popen([*ns, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    cut = None
    try:
        stdout, stderr = proc.communicate(timeout=args.scp_seconds if tool == "scp" else 3600)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        cut = time.monotonic() - began
    spent = time.monotonic() - began
    row = {"tool": tool, "direction": direction, "size_mib": size // MiB, "exit": proc.returncode,
           "seconds": round(spent, 2)}
    rated(row, size, spent, cut, target, digest)  # scp stopped after --scp-seconds: what it wrote meanwhile
    if tool.startswith("ferry") and proc.returncode == 0:
        result = json.loads(stdout.strip().splitlines()[-1])
        row["streams"], row["hops"] = result.get("streams"), result.get("hops")
        row["cut_through"] = any(n.startswith("Cut-through") for n in result.get("notes", []))
    if tool == "ferry-via":
        agent = agent or top.agent_pid()
        row["relay_cpu_s"] = round(cpu_seconds(agent) - cpu_before[0] + cpu_seconds(sshd_r) - cpu_before[1], 1)
        row["agent_peak_rss_mib"] = round(peak_rss_mib(agent), 1)
    if proc.returncode not in (0, None) and cut is None:
        row["error"] = stderr.strip()[-400:]
    shutil.rmtree(home, ignore_errors=True)
    return row


def render(rows: list[dict], args, command: str) -> str:
    rate = args.rate
    med = lambda tool, d, s: statistics.median(  # noqa: E731
        [r["mbps"] for r in rows if r["tool"] == tool and r["direction"] == d and r["size_mib"] == s
         and r["exit"] == 0 and r["sha256_ok"] is not False] or [float("nan")])
    lines = [
        "## Relay through a DTN's agent (`--via`) on wanem's relay topology",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine (every host, both sshds, the agent and wanem "
        f"share its two cores): first hop a ↔ r {args.rtt:g} ms, loss {args.loss:g}, {rate} Mbit/s; second hop r ↔ b "
        f"`{args.hop2}`; a direct a ↔ b connection crosses both. Median of {args.rounds} rounds, tools interleaved; "
        "Mbit/s = size / wall time of the whole command, % of the link = of the slower hop's rate. scp runs for "
        f"{args.scp_seconds} s and its rate is what it wrote meanwhile. Ferry direct: `--streams auto`; Ferry via: "
        "`--via site:dtn` (the laptop's hop with `auto`, the agent's hop with its own `auto`), checked end to end "
        "against the original's SHA-256.",
        "",
        "| direction | size | scp direct | Ferry direct | Ferry --via | via / direct | via / scp | relay CPU (s/GiB) "
        "| agent peak RSS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for direction in args.direction.split(","):
        for size in sorted({r["size_mib"] for r in rows}):
            s, d, v = (med(t, direction, size) for t in TOOLS)
            via = [r for r in rows if r["tool"] == "ferry-via" and r["direction"] == direction
                   and r["size_mib"] == size and r["exit"] == 0]
            cpu = statistics.median([r["relay_cpu_s"] / (size / 1024) for r in via] or [float("nan")])
            rss = max([r["agent_peak_rss_mib"] for r in via] or [float("nan")])
            pct = lambda x: f"{x:.0f} ({100 * x / rate:.0f} %)"  # noqa: E731
            lines.append(f"| {direction} | {size // 1024 if size >= 1024 else size}"
                         f"{' GiB' if size >= 1024 else ' MiB'} | {pct(s)} | {pct(d)} | {pct(v)} | {v / d:.2f}× | "
                         f"{v / s:.1f}× | {cpu:.1f} | {rss:.0f} MiB |")
    lines += ["", "Reproduce:", "", "```", command, "```", ""]
    return "\n".join(lines)


def main() -> int:
    parser = path_arguments(__doc__, rtt=10, loss=0.01, work="/tmp/ferry-bench-relay")
    parser.add_argument("--hop2", default="rtt=100,loss=0", help="the r <-> b hop, as wanem --hop2 takes it")
    parser.add_argument("--direction", default="up,down", help="up (a -> b), down (b -> a), or both: up,down")
    parser.add_argument("--scp-seconds", type=float, default=60.0)
    parser.add_argument("--tools", default=",".join(TOOLS), help="a subset of the tools, comma-separated")
    parser.add_argument("--via-args", default="", help="extra flags for Ferry --via (e.g. --streams 16)")
    parser.add_argument("--agent-streams", default="auto", help="the agent's default streams (its Settings)")
    parser.set_defaults(rounds=2)
    args = parser.parse_args()
    prepared = prepare_path(args)
    if prepared is None:
        return 2
    work, sizes = prepared
    top = Topology(work, args)
    rows: list[dict] = []
    try:
        for size in sizes:
            name = f"big-{size // MiB}.bin"
            make_file(work / "data" / name, size)
            if not (top.srv / name).exists():
                os.link(work / "data" / name, top.srv / name)
            from backends.streams.hashing import hash_file

            digest = hash_file(work / "data" / name)["sha256"]
            for round_index in range(args.rounds):
                for direction in args.direction.split(","):
                    tools = tuple(t for t in TOOLS if t in args.tools.split(","))
                    order = tools[round_index % len(tools):] + tools[:round_index % len(tools)]
                    this_round = {}
                    for tool in order:
                        row = one_run(top, tool, direction, name, size, digest, args)
                        rows.append(row)
                        this_round[tool] = {k: v for k, v in row.items() if k not in ("tool", "direction", "size_mib")}
                        if not args.json:
                            print(f"  {direction} {size // MiB} MiB {tool:<13} {row['mbps']:7.1f} Mbit/s "
                                  f"sha256 {row['sha256_ok']} {row.get('error', '')}", flush=True)
                    if args.json:  # one line per round: each tool's Mbit/s and whether its SHA-256 matched
                        print(json.dumps({"round": round_index + 1, "direction": direction, "size_mib": size // MiB,
                                          **this_round}), flush=True)
    finally:
        top.close()
    command = "sudo .venv/bin/python tests/bench/relay_wan.py " + " ".join(sys.argv[1:])
    text = render(rows, args, command.strip())
    print(text)
    if args.write:
        replace_section(args.write, "## Relay through a DTN's agent", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
