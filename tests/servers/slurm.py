"""A real Slurm cluster on this machine, from Debian's ``slurm-wlm``: ``munged``, ``slurmctld`` and one
``slurmd -N nodeK`` per node, each node in a network namespace of its own behind its own emulated link.

The controller and the test servers live in this (the root) namespace; each node reaches them over a veth pair
of its own, so a node's traffic really leaves through its own link, and the link's counters (``link_bytes``) say
how much each node moved. (This kernel has no ``netem``: the benchmarks put each node behind a ``wanem`` link
instead, with delay, rate and loss; see ``tests/bench/cluster_wan.py``.)
The servers listen on ``server_address``, an address of this namespace's loopback, which every node routes to
through its link. The shared file system is this machine's own: every namespace sees the same folders.

Two settings are shorter than a site's: ``SlurmdTimeout=10`` (a killed node is found down within ~10 s) and
``cred_expire=10`` (Slurm holds a requeued job for that long plus one second; 120 s by default).

Each node has one CPU (``CPUs=1``, the hardware's count overridden): an array task takes a whole node, so the
tasks of a three-task array run on three nodes at once. Partitions: ``xfer`` (the default) and ``held``
(``State=DOWN``: jobs there wait, with a Reason). Needs root and iproute2.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from .nginx import free_port

_made = itertools.count()
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "scontrol", "ip")


def _run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=timeout)


class SlurmCluster:
    """``nodes`` nodes, each behind a link of its own."""

    def __init__(self, root: Path, nodes: int = 3, *, wanem: tuple[str, ...] = ()) -> None:
        """``wanem``: the emulator's path and its ``up`` options (``--rtt 50 --rate 300 --loss 1e-4``), for the
        benchmarks: each node is then host ``a`` of a wanem link whose host ``b`` forwards to this namespace."""
        missing = [p for p in PROGRAMS if shutil.which(p) is None]
        if missing or os.geteuid() != 0:
            raise RuntimeError(f"a Slurm cluster needs root and {', '.join(missing) or 'nothing more'}; "
                               "make test installs slurmctld, slurmd, slurm-client and munge")
        self.root, self.count = root, nodes
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw9").removeprefix("gw")[:1]
        self.tag = f"{worker if worker.isdigit() else '9'}{os.getpid() % 100}{next(_made) % 10}"
        self.net = f"10.{150 + (os.getpid() + next(_made)) % 50}"
        self.server_address = f"{self.net}.0.1"
        self.names = [f"node{k + 1}" for k in range(nodes)]
        self.procs: dict[str, subprocess.Popen] = {}
        self.env: dict[str, str] = {}
        self.conf = root / "slurm.conf"
        self.wanem = wanem

    # --- network -------------------------------------------------------------------------------------------
    def _ns(self, k: int) -> str:
        return f"{self._wan(k)}-a" if self.wanem else f"ferryslurm{self.tag}n{k + 1}"

    def _wan(self, k: int) -> str:
        return f"fc{self.tag}n{k + 1}"

    def _wan_net(self, k: int) -> int:
        return 100 + (int(self.net.split(".")[1]) + 7 * k) % 100

    def _links(self, k: int) -> tuple[str, str]:
        return f"fsh{self.tag}n{k + 1}"[:15], f"fsn{self.tag}n{k + 1}"[:15]

    def node_address(self, k: int) -> str:
        return f"198.18.{self._wan_net(k)}.1" if self.wanem else f"{self.net}.{k + 1}.2"

    def _network(self) -> None:
        _run("ip", "addr", "add", f"{self.server_address}/32", "dev", "lo")  # no dummy module in containers
        self.on_lo = True
        for k in range(self.count):
            if self.wanem:
                self._wan_link(k)
                continue
            ns = self._ns(k)
            _run("ip", "netns", "add", ns)
            self._veth(k, ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run("ip", "-n", ns, "route", "add", "default", "via", f"{self.net}.{k + 1}.1")

    def _veth(self, k: int, ns: str) -> None:
        """Link ``k``'s veth pair: this side ``NET.(k+1).1``, the namespace ``ns``'s side ``.2``."""
        here, there = self._links(k)
        _run("ip", "link", "add", here, "type", "veth", "peer", "name", there)
        _run("ip", "link", "set", there, "netns", ns)
        _run("ip", "addr", "add", f"{self.net}.{k + 1}.1/30", "dev", here)
        _run("ip", "link", "set", here, "up")
        _run("ip", "-n", ns, "addr", "add", f"{self.net}.{k + 1}.2/30", "dev", there)
        _run("ip", "-n", ns, "link", "set", there, "up")

    def _wan_link(self, k: int) -> None:
        """Node ``k`` as host a of a wanem link; host b forwards to this namespace over a veth pair."""
        name, net = self._wan(k), self._wan_net(k)
        _run(self.wanem[0], "up", name, "--net", str(net), *self.wanem[1:], timeout=60)
        gateway = f"{name}-b"
        self._veth(k, gateway)
        _run("ip", "netns", "exec", gateway, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
        _run("ip", "-n", gateway, "route", "add", "default", "via", f"{self.net}.{k + 1}.1")
        _run("ip", "-n", self._ns(k), "route", "add", "default", "via", f"198.18.{net}.2")
        _run("ip", "route", "add", f"198.18.{net}.1/32", "via", f"{self.net}.{k + 1}.2")

    # --- daemons -------------------------------------------------------------------------------------------
    def _munge(self) -> None:
        folder = self.root / "munge"
        folder.mkdir(mode=0o700, parents=True)
        key = folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.socket = folder / "munge.socket"
        self.procs["munged"] = subprocess.Popen(
            ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={self.socket}",
             f"--pid-file={folder / 'munged.pid'}", f"--log-file={folder / 'munged.log'}",
             f"--seed-file={folder / 'munged.seed'}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._until(lambda: self.socket.exists(), 10, "munged's socket", self.procs["munged"])

    def _write_conf(self) -> None:
        for sub in ("state", "spool", "logs"):
            (self.root / sub).mkdir(mode=0o700, exist_ok=True)
        self.ctl_port, self.node_port = free_port(), free_port()
        nodes = "\n".join(f"NodeName={name} NodeAddr={self.node_address(k)} CPUs=1 RealMemory=1000 State=UNKNOWN"
                          for k, name in enumerate(self.names))
        r = self.root
        self.conf.write_text(f"""\
ClusterName=ferry{self.tag}
SlurmctldHost={socket.gethostname()}({self.server_address})
SlurmctldPort={self.ctl_port}
SlurmdPort={self.node_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket},cred_expire=10
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}/%n
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'spool'}/slurmd-%n.pid
SlurmctldLogFile={r / 'logs' / 'slurmctld.log'}
SlurmdLogFile={r / 'logs'}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdTimeout=10
SlurmctldTimeout=20
InactiveLimit=0
KillWait=5
MinJobAge=600
OverTimeLimit=0
SchedulerParameters=sched_interval=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={r / 'logs' / 'jobcomp.log'}
SlurmdParameters=config_overrides
{nodes}
PartitionName=xfer Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=held Nodes=ALL MaxTime=INFINITE State=DOWN
""")
        self.conf.chmod(0o644)
        # slurmd 22.05 starts its cgroup plugin whatever the proctrack plugin; this machine mounts v1 hierarchies
        # (autodetection fails on their tmpfs)
        (self.root / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n")
        self.env = {"SLURM_CONF": str(self.conf)}

    def start(self) -> SlurmCluster:
        try:
            self._network()
            self._munge()
            self._write_conf()
            self.procs["slurmctld"] = subprocess.Popen(
                ["slurmctld", "-D", "-i", "-f", str(self.conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(0.5)
            for k in range(self.count):
                self.start_node(k)
            self._until(self._all_idle, 60, "three idle nodes in sinfo", self.procs["slurmctld"])
        except BaseException:
            self.stop()
            raise
        return self

    def start_node(self, k: int) -> None:
        name = self.names[k]
        (self.root / "spool" / name).mkdir(mode=0o700, exist_ok=True)
        self.procs[name] = subprocess.Popen(
            ["ip", "netns", "exec", self._ns(k), "slurmd", "-D", "-N", name, "-f", str(self.conf)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **self.env})

    def kill_node(self, k: int) -> None:
        """The node dies: its ``slurmd`` and every process in its namespace (the task) killed at once."""
        listed = subprocess.run(["ip", "netns", "pids", self._ns(k)], capture_output=True, text=True, timeout=30)
        for pid in listed.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        self.procs.pop(self.names[k], None)

    def link_bytes(self, k: int) -> int:
        """Bytes node ``k`` received over its link so far (this side's transmit counter)."""
        return int(Path(f"/sys/class/net/{self._links(k)[0]}/statistics/tx_bytes").read_text())

    def sinfo(self) -> dict[str, str]:
        out = subprocess.run(["sinfo", "-h", "-N", "-p", "xfer", "-o", "%N %t"], capture_output=True, text=True,
                             timeout=30, env={**os.environ, **self.env})
        return dict(line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)

    def _all_idle(self) -> bool:
        states = self.sinfo()
        return len(states) == self.count and all(s == "idle" for s in states.values())

    def _until(self, check, seconds: float, what: str, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if check():
                return
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} ended while waiting for {what}: "
                                   f"{proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
            time.sleep(0.3)
        raise RuntimeError(f"no {what} after {seconds} s; logs in {self.root / 'logs'}: {self.log_tail()}")

    def log_tail(self) -> str:
        return "\n".join(f"{p.name}: {p.read_text()[-1500:]}" for p in sorted((self.root / "logs").glob("*.log")))

    def stop(self) -> None:
        if self.env:
            subprocess.run(["scancel", "--full", "--quiet", "-M", "all", "-u", "root"], capture_output=True,
                           timeout=30, env={**os.environ, **self.env})
        for k in range(self.count):
            self.kill_node(k)
        for name in ("slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        for k in range(self.count):
            subprocess.run(["ip", "link", "del", self._links(k)[0]], capture_output=True, timeout=30)
            if self.wanem:
                subprocess.run([self.wanem[0], "down", self._wan(k)], capture_output=True, timeout=60)
                subprocess.run(["ip", "route", "del", f"{self.node_address(k)}/32"], capture_output=True, timeout=30)
            else:
                subprocess.run(["ip", "netns", "del", self._ns(k)], capture_output=True, timeout=30)
        if getattr(self, "on_lo", False):
            subprocess.run(["ip", "addr", "del", f"{self.server_address}/32", "dev", "lo"], capture_output=True,
                           timeout=30)
