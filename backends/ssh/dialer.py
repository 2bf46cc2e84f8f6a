"""Ferry's own TCP dialer for OpenSSH's logins: the same connection, with Nagle's algorithm off.

OpenSSH sets ``TCP_NODELAY`` only for interactive sessions and has no option for it. During a
login its 16-byte NEWKEYS goes out alone, and the SERVICE_REQUEST written right after it waits
under Nagle until the server's delayed ACK for NEWKEYS comes back: one round trip plus ~40 ms
more per login (traced with tcpdump at 50 ms: ~95 ms of a 0.67 s login). ``ProxyUseFdpass``
lets a small program open the TCP connection and hand the socket to ssh, which then speaks SSH
over it exactly as over its own. The dialer sets ``TCP_NODELAY`` (and ``SO_KEEPALIVE``, which
ssh sets only on connections it opens itself) and exits. Measured on the emulated 50 ms path:
a master's login 0.63-0.69 s without, 0.56-0.59 s with (the dialer's Python start included).

It is used only where it changes nothing else: on POSIX, from a Python interpreter (not a
frozen bundle, whose executable is Ferry itself), and when the user's SSH configuration (as
``ssh -G`` resolves it, system-wide file included) changes nothing about how ssh connects (no
ProxyCommand or ProxyJump, bind address, address family, CheckHostIP, ...). The host and port
reach the dialer in its environment, never in the shell command ssh builds from ProxyCommand.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

from ..host.procs import reap

#: the dialer: connect, set the options, pass the socket to ssh on stdout (a socket pair), exit. Its errors
#: read like ssh's own, so ``openssh.ssh_error`` words them the same way.
DIAL_CODE = """\
import os, socket, sys
host, port = os.environ["FERRY_DIAL_HOST"], int(os.environ["FERRY_DIAL_PORT"])
try:
    sock = socket.create_connection((host, port), float(os.environ.get("FERRY_DIAL_TIMEOUT", "20")))
except socket.gaierror as exc:
    sys.exit(f"ssh: Could not resolve hostname {host}: {exc.strerror}")
except OSError as exc:
    reason = exc.strerror or "Connection timed out"
    sys.exit(f"ssh: connect to host {host} port {port}: {reason}")
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
socket.send_fds(socket.socket(fileno=1), [b"\\0"], [sock.fileno()])
"""

#: ``ssh -G`` settings under which ssh must open the connection itself (their default values aside): a proxy
#: or jump host, a source address, an address family, canonical names, retried connects, or a host-key check
#: by IP address (ssh skips it on a connection it did not open)
OWN_CONNECT = {"proxycommand": "none", "proxyjump": "none", "bindaddress": "", "bindinterface": "",
               "addressfamily": "any", "canonicalizehostname": "false", "connectionattempts": "1",
               "checkhostip": "no"}


@dataclass(frozen=True)
class Dial:
    """The options and environment that make one master connect through the dialer (empty: ssh connects)."""

    argv: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


def dialer_available() -> bool:
    """A Python that can run the dialer: this one, unless Ferry is a frozen bundle; POSIX only."""
    return os.name == "posix" and not getattr(sys, "frozen", False) and bool(sys.executable)


def dial_from_config(resolved: str, timeout: float) -> Dial:
    """The dial for the settings ``ssh -G`` printed (``key value`` lines), or none when ssh must connect."""
    settings: dict[str, str] = {}
    for line in resolved.splitlines():
        key, _, value = line.strip().partition(" ")
        settings.setdefault(key.lower(), value.strip())
    for key, default in OWN_CONNECT.items():
        if settings.get(key, default).lower() not in (default, ""):
            return Dial()
    host, port = settings.get("hostname", ""), settings.get("port", "")
    if not host or not port.isdigit():
        return Dial()
    # ssh expands %-tokens in ProxyCommand and runs it with $SHELL -c: the command is ours alone, quoted for sh,
    # run by sh (a csh would not take the quoted newlines), and any % in the interpreter's path doubled
    command = shlex.join([sys.executable, "-S", "-I", "-c", DIAL_CODE]).replace("%", "%%")
    return Dial(("-o", f"ProxyCommand={command}", "-o", "ProxyUseFdpass=yes"),
                {"FERRY_DIAL_HOST": host, "FERRY_DIAL_PORT": port, "FERRY_DIAL_TIMEOUT": f"{timeout:g}",
                 "SHELL": "/bin/sh"})


async def resolve_dial(argv: list[str], alias: str, timeout: float) -> Dial:
    """Ask ``ssh -G`` (with the job's own options and config file) how it would connect to ``alias``."""
    if not dialer_available():
        return Dial()
    try:
        proc = await asyncio.create_subprocess_exec(*argv, "-G", "--", alias, stdin=subprocess.DEVNULL,
                                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return Dial()
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 10)
    except asyncio.TimeoutError:  # a ``Match exec`` that hangs, say: ssh connects as it would alone
        await reap(proc)
        return Dial()
    if proc.returncode != 0:
        return Dial()  # ssh itself will say what is wrong with the configuration
    return dial_from_config(out.decode("utf-8", "replace"), timeout)
