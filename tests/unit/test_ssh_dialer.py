"""The dialer that opens OpenSSH's TCP connections with Nagle off (``backends/ssh/dialer.py``).

Which configurations it may take over, and the dialer program itself run as ssh runs it
(``$SHELL -c``, the socket passed back over a socket pair), against a real listening socket.
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from backends.ssh.dialer import dial_from_config

PLAIN = """\
user alice
hostname 198.51.100.7
port 2222
addressfamily any
connecttimeout 20
"""


def test_a_plain_configuration_connects_through_the_dialer():
    dial = dial_from_config(PLAIN, 20)
    assert "ProxyUseFdpass=yes" in dial.argv
    assert dial.env["FERRY_DIAL_HOST"] == "198.51.100.7"
    assert dial.env["FERRY_DIAL_PORT"] == "2222"
    command = next(arg for arg in dial.argv if arg.startswith("ProxyCommand="))
    assert "198.51.100.7" not in command and "2222" not in command  # never in the shell command


@pytest.mark.parametrize("line", [
    "proxycommand ssh -W %h:%p bastion",
    "proxyjump bastion.example.org",
    "bindaddress 10.0.0.5",
    "bindinterface eth1",
    "addressfamily inet6",
    "checkhostip yes",
    "canonicalizehostname yes",
    "connectionattempts 3",
])
def test_a_configuration_that_shapes_the_connection_is_left_to_ssh(line):
    key = line.split()[0]  # ``ssh -G`` prints each setting once
    config = "".join(ln + "\n" for ln in PLAIN.splitlines() if not ln.startswith(key)) + line + "\n"
    assert dial_from_config(config, 20).argv == ()


def test_proxy_settings_of_none_are_the_defaults():
    assert dial_from_config(PLAIN + "proxycommand none\nproxyjump none\n", 20).argv != ()


def _run_dialer(env_extra: dict) -> tuple[subprocess.CompletedProcess, socket.socket]:
    """Run the ProxyCommand as ssh does: through the shell, stdout one end of a socket pair."""
    dial = dial_from_config(PLAIN, 5)
    command = next(arg for arg in dial.argv if arg.startswith("ProxyCommand="))[len("ProxyCommand="):]
    ours, theirs = socket.socketpair()
    env = {**os.environ, **dial.env, **env_extra}
    done = subprocess.run(["/bin/sh", "-c", "exec " + command.replace("%%", "%")], stdout=theirs,
                          stderr=subprocess.PIPE, env=env, timeout=20)
    theirs.close()
    return done, ours


def test_the_dialer_hands_over_a_connected_socket_with_nagle_off():
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    done, ours = _run_dialer({"FERRY_DIAL_HOST": "127.0.0.1", "FERRY_DIAL_PORT": str(port)})
    assert done.returncode == 0, done.stderr
    _, fds, _, _ = socket.recv_fds(ours, 1, 1)
    passed = socket.socket(fileno=fds[0])
    accepted, _ = server.accept()
    passed.sendall(b"hello")
    assert accepted.recv(5) == b"hello"
    assert passed.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    assert passed.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) != 0
    for s in (passed, accepted, server, ours):
        s.close()


def test_a_refused_connection_is_reported_as_ssh_would():
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # free once closed: nothing listens there
    done, ours = _run_dialer({"FERRY_DIAL_HOST": "127.0.0.1", "FERRY_DIAL_PORT": str(port)})
    ours.close()
    assert done.returncode != 0
    assert f"connect to host 127.0.0.1 port {port}: Connection refused" in done.stderr.decode()
