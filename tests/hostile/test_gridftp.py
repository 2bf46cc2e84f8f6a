"""A real globus-gridftp-server behind a relay (``tests/servers/dropping_relay.py``) that drops a connection while
Ferry logs in on it: what a server restarting, or crashing mid-login, does to a transfer already under way."""

from __future__ import annotations

import hashlib

import pytest

from tests.integration.conftest import gridftp, write_random  # noqa: F401  (the real server)
from tests.servers.dropping_relay import DroppingRelay

from .conftest import MiB, ferry, files_below


@pytest.fixture
def relay(gridftp):  # noqa: F811
    # Ferry's own control connections log in as "anonymous" with the password "ferry@" (globus-url-copy's says
    # "globus@"): a download opens two at its start, the look-up and the server's checksum, and both are dropped
    server = DroppingRelay(gridftp.port, trigger=b"PASS ferry@", drops=2).start()
    yield server
    server.stop()


def test_a_login_dropped_while_the_file_moves_is_retried_not_final(gridftp, relay, dest, ferry_home):  # noqa: F811
    # Ferry starts globus-url-copy at once and looks the file up on a connection of its own meanwhile: that
    # look-up dropped mid-login (a reset after the server took the connection) is a fault Ferry retries, as
    # the same drop of globus-url-copy's own connection is, never "check the address"
    digest = write_random(gridftp.data / "dropped-login.bin", 24 * MiB, seed=811)
    gridftp.give(gridftp.data / "dropped-login.bin")
    url = f"ftp://127.0.0.1:{relay.port}{gridftp.data}/dropped-login.bin"
    ran = ferry("copy", url, f"{dest}/", "--backend", "gridftp", "--streams", "2", "--retries", "2", home=ferry_home,
                timeout=120)
    assert relay.dropped == 2, f"the relay did not see Ferry's logins: the case did not happen {relay.heard}"
    assert ran.returncode == 0, ran.stderr
    assert any("dropped it before Ferry had logged in" in line for line in ran.stderr.splitlines()), ran.stderr
    assert files_below(dest) == {"dropped-login.bin": 24 * MiB}
    assert hashlib.sha256((dest / "dropped-login.bin").read_bytes()).hexdigest() == digest
    assert ran.seconds < 60


def test_a_server_that_drops_every_login_ends_in_a_sentence(gridftp, dest, ferry_home):  # noqa: F811
    # the drop is retried, but not for ever: after the retries one sentence that says what happened
    write_random(gridftp.data / "never.bin", 1 * MiB, seed=812)
    gridftp.give(gridftp.data / "never.bin")
    always = DroppingRelay(gridftp.port, trigger=b"PASS ", drops=10_000).start()
    try:
        url = f"ftp://127.0.0.1:{always.port}{gridftp.data}/never.bin"
        ran = ferry("copy", url, f"{dest}/", "--backend", "gridftp", "--retries", "1", home=ferry_home, timeout=120)
    finally:
        always.stop()
    assert ran.returncode == 4, ran.stderr
    assert "dropped" in ran.said[-1] and "Ferry tried" in ran.said[-1], ran.said
    assert files_below(dest) == {}
    assert ran.seconds < 60
