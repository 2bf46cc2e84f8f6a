"""A laptop's network goes away mid-transfer (the lid closes, the Wi-Fi roams, the VPN drops) and comes back:
the copy waits, says it is waiting for the network, and goes on by itself, byte-exact, without spending its
retries. The server is a real nginx in a network namespace of its own, joined to this one by a veth link that
the test takes down (no route: what a laptop whose Wi-Fi is gone sees) and brings up again. A stream that gets
nothing for 6 s is a fault here (``--stall-timeout 6``; 60 s by default, which a shorter outage rides out on
TCP's own retransmissions without any fault at all). The process being
suspended (SIGSTOP, a closed lid) and woken again is the other half.

The outages here last ``LABFERRY_TEST_OUTAGE_S`` (default 40 s) to keep the suite short; docs/reliability.md
records the same tests run with outages of several minutes."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.servers.far import cut, far_server, mend

from .conftest import MiB, popen_labferry, sha256_of, write_random

OUTAGE_S = float(os.environ.get("LABFERRY_TEST_OUTAGE_S", "40"))


@pytest.fixture
def far_nginx(tmp_path):
    with far_server(tmp_path) as server:
        yield server


def _after(path, size: int, seconds: float = 60) -> None:
    """Until the resume record says ``size`` bytes are in (the part file is allocated whole at the start)."""
    record = path.with_name(path.name + ".part.ferry")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if sum(end - start for start, end in json.loads(record.read_text())["done"]) >= size:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"{path.name} did not reach {size} bytes in {seconds:.0f} s")


def test_the_link_goes_down_mid_transfer_and_the_copy_waits_then_finishes_by_itself(far_nginx, tmp_path,
                                                                                   ferry_home):
    digest = write_random(far_nginx.data / "roaming.bam", 96 * MiB, seed=481)
    dest = tmp_path / "roaming.bam"
    proc = popen_labferry("copy", far_nginx.url("slow/roaming.bam", scheme="http"), str(dest), "--streams", "4",
                          "--retries", "2", "--stall-timeout", "6", "--json", env_home=ferry_home)
    _after(dest, 12 * MiB)
    cut(far_nginx)  # no route to the server, as when the Wi-Fi is gone
    time.sleep(OUTAGE_S)
    assert proc.poll() is None, proc.communicate()  # still there, waiting: 2 retries would have ended it
    mend(far_nginx)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert sha256_of(dest) == digest
    assert f"{far_nginx.listen} is out of reach" in err and "no network to it" in err, err
    assert "waiting for it, up to 12 h" in err and f"{far_nginx.listen} is back" in err, err


def test_a_copy_suspended_with_its_lid_closed_goes_on_when_woken(far_nginx, tmp_path, ferry_home):
    """SIGSTOP for the outage (a laptop asleep), then SIGCONT: the server may have given up on the connections
    meanwhile; the copy takes up again from what it has."""
    digest = write_random(far_nginx.data / "asleep.bam", 64 * MiB, seed=482)
    dest = tmp_path / "asleep.bam"
    proc = popen_labferry("copy", far_nginx.url("slow/asleep.bam", scheme="http"), str(dest), "--streams", "4",
                          "--stall-timeout", "6", "--json", env_home=ferry_home)
    _after(dest, 8 * MiB)
    proc.send_signal(signal.SIGSTOP)
    time.sleep(OUTAGE_S)
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert sha256_of(dest) == digest


def test_the_link_gone_longer_than_asked_ends_in_one_sentence(far_nginx, tmp_path, ferry_home):
    write_random(far_nginx.data / "gone.bam", 64 * MiB, seed=483)
    dest = tmp_path / "gone.bam"
    proc = popen_labferry("copy", far_nginx.url("slow/gone.bam", scheme="http"), str(dest), "--streams", "2",
                          "--wait-network", "8s", "--stall-timeout", "6", env_home=ferry_home)
    _after(dest, 4 * MiB)
    cut(far_nginx)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        mend(far_nginx)
    assert proc.returncode == 4, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"labferry: {far_nginx.listen} was out of reach for 8 s (no network to it)"), err
    assert "Traceback" not in err and dest.with_name("gone.bam.part").exists()  # kept for the same command


SERVER_OUTAGE_S = float(os.environ.get("LABFERRY_TEST_SERVER_OUTAGE_S", "90"))


def test_an_ssh_server_stopped_for_90_s_mid_download_is_waited_for_and_the_copy_finishes(tmp_path, ferry_home,
                                                                                        tmp_path_factory):
    """The SSH server stopped (its listener and every session) for longer than the retries last (5, about a
    minute of backoff), then started again: a refused connection is an outage, not the server's answer, so the
    copy waits, says for whom and why, and finishes byte-exact by itself with the default retries."""
    from tests.conformance.servers import signal_tree
    from tests.servers.sshd import Sshd

    server = Sshd(tmp_path_factory.mktemp("sshd-outage")).start()  # its own: it is stopped, as no other test's is
    try:
        remote = server.home / "outage.bam"
        digest = write_random(remote, 48 * MiB, seed=484)
        server.give(remote)
        dest = tmp_path / "outage.bam"
        proc = popen_labferry("copy", server.url(str(remote)), str(dest), *server.args(), "--limit-rate", "4M",
                              "--json", env_home=ferry_home)
        try:
            _after(dest, 6 * MiB)
        except AssertionError:
            proc.kill()
            raise AssertionError(proc.communicate()) from None
        signal_tree(server.proc.pid, signal.SIGTERM)  # sshd and its sessions: connections cut, then refused
        server.proc.wait(10)
        time.sleep(SERVER_OUTAGE_S)
        assert proc.poll() is None, proc.communicate()  # still there, waiting: 5 retries would have ended it
        server.start()
        out, err = proc.communicate(timeout=300)
    finally:
        server.stop()
    assert proc.returncode == 0, err
    assert sha256_of(dest) == digest
    assert "127.0.0.1 is out of reach" in err and "its server refuses connections" in err, err
    assert "127.0.0.1 is back after" in err, err
    assert json.loads(out.strip().splitlines()[-1])["sha256"] == digest
