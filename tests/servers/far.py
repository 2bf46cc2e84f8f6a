"""A server on a link that can be cut: nginx in a network namespace of its own, joined to this one by a veth
pair. ``cut`` takes this side's end down (no route at all, as on a laptop whose Wi-Fi is gone), ``mend`` brings
it up again. Needs root and iproute2."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from .nginx import Nginx

_made = itertools.count()


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def far_server(root: Path) -> Iterator[Nginx]:
    """nginx at 10.N.M.2 in its own namespace; its ``link`` is this side's end of the veth between them."""
    if shutil.which("ip") is None or os.geteuid() != 0:
        raise RuntimeError("a far server needs iproute2 and root (network namespaces); make test runs as root")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw9").removeprefix("gw")[:2]
    worker = worker if worker.isdigit() else "9"
    serial = next(_made) % 100
    tag = f"{worker}{os.getpid() % 1000}{serial}"
    ns, link, peer = f"ferrywait{tag}", f"fwh{tag}"[:15], f"fwn{tag}"[:15]
    net = f"10.{200 + int(worker) % 50}.{(os.getpid() % 200 + serial) % 250}"
    _ip("netns", "add", ns)
    try:
        _ip("link", "add", link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", ns)
        _ip("addr", "add", f"{net}.1/30", "dev", link)
        _ip("link", "set", link, "up")
        _ip("-n", ns, "addr", "add", f"{net}.2/30", "dev", peer)
        _ip("-n", ns, "link", "set", peer, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        # with the link down, no route at all (as a laptop without Wi-Fi), not the default route: that one may
        # lead to a gateway that answers in the server's place
        _ip("route", "add", "unreachable", f"{net}.0/24")
        server = Nginx(root / "far", root / "far-data", listen=f"{net}.2", slow_rate="3m")
        server.start(argv_prefix=("ip", "netns", "exec", ns))
        server.link = link
        try:
            yield server
        finally:
            server.stop()
    finally:
        subprocess.run(["ip", "route", "del", "unreachable", f"{net}.0/24"], capture_output=True)
        subprocess.run(["ip", "link", "del", link], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def cut(server: Nginx) -> None:
    _ip("link", "set", server.link, "down")


def mend(server: Nginx) -> None:
    _ip("link", "set", server.link, "up")
