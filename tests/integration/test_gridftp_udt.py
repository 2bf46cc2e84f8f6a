"""GridFTP over UDT: a real globus-gridftp-server on gsiftp:// with GSI credentials made for the test, started
with -allow-udt, and one without it. UDT is asked for only on gsiftp:// (``globus-url-copy -udt`` sets its data
channel stack together with the GSI driver), so this is the one place Ferry's ``--transport udt`` can work."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from tests.servers.gridftp import GridftpServer
from tests.servers.gsi import GsiCredentials

from .conftest import MiB, labferry, require, sha256_of, write_random


@pytest.fixture(scope="module")
def gsi(tmp_path_factory):
    require("globus-gridftp-server")
    require("grid-proxy-init")
    return GsiCredentials(tmp_path_factory.mktemp("gsi")).make()


@pytest.fixture(scope="module")
def servers(tmp_path_factory, gsi):
    """(a server that allows UDT, one that does not), both gsiftp:// with the same credentials."""
    udt = GridftpServer(tmp_path_factory.mktemp("gsiftp-udt"), gsi=gsi, udt=True).start()
    tcp = GridftpServer(tmp_path_factory.mktemp("gsiftp-tcp"), gsi=gsi).start()
    for server in (udt, tcp):
        server.give(server.data)
    yield udt, tcp
    udt.stop()
    tcp.stop()


def _env(gsi) -> dict:
    return dict(os.environ, **gsi.client_env())


def test_a_file_crosses_over_udt_both_ways(servers, gsi, tmp_path, ferry_home):
    udt, _ = servers
    source = udt.data / "reads.bin"
    digest = write_random(source, 24 * MiB, seed=27)
    udt.give(source)
    down = labferry("copy", udt.url(source), str(tmp_path / "reads.bin"), "--transport", "udt", "--json",
                    env_home=ferry_home, env=_env(gsi))
    assert down.returncode == 0, down.stderr
    assert sha256_of(tmp_path / "reads.bin") == digest == json.loads(down.stdout.splitlines()[-1])["sha256"]
    up = labferry("copy", str(tmp_path / "reads.bin"), udt.url(udt.data / "back.bin"), "--transport", "udt",
                  "--json", env_home=ferry_home, env=_env(gsi))
    assert up.returncode == 0, up.stderr
    assert sha256_of(udt.data / "back.bin") == digest
    log = udt.log.read_text(errors="replace")
    assert log.count("SITE SETNETSTACK udt") >= 2 and "250 OK" in log  # the data channel really was UDT


def test_a_server_that_refuses_udt_is_one_sentence(servers, gsi, tmp_path, ferry_home):
    _, tcp = servers
    source = tcp.data / "small.bin"
    write_random(source, 2 * MiB, seed=28)
    tcp.give(source)
    proc = labferry("copy", tcp.url(source), str(tmp_path / "small.bin"), "--transport", "udt", env_home=ferry_home,
                    env=_env(gsi))
    assert proc.returncode != 0 and "does not allow UDT" in proc.stderr and "--transport tcp" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "small.bin").exists()
    plain = labferry("copy", tcp.url(source), str(tmp_path / "small.bin"), "--json", env_home=ferry_home,
                     env=_env(gsi))
    assert plain.returncode == 0 and sha256_of(tmp_path / "small.bin") == sha256_of(source), plain.stderr


def test_udt_on_another_scheme_is_refused(tmp_path, ferry_home):
    proc = labferry("copy", "ftp://127.0.0.1:1/x.bin", str(tmp_path / "x.bin"), "--backend", "gridftp",
                    "--transport", "udt", env_home=ferry_home)
    assert proc.returncode != 0 and "UDT works only on gsiftp:// addresses" in proc.stderr


def _preflight(server, home, gsi) -> dict:
    proc = labferry("preflight", server.url("/"), "--json", "--quick", "--max-streams", "2", env_home=home,
                    env=_env(gsi))
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def _measured_udt_faster(home) -> None:
    """Make the stored preflight of 127.0.0.1 one of a path where UDT measured faster than TCP, as on the
    benchmark's 200 ms / 1e-3 path with one stream (UDT 95 Mbit/s, TCP 27): loopback never is such a path."""
    conn = sqlite3.connect(home / "ferry.sqlite3")
    with conn:
        row = conn.execute("SELECT id, result FROM preflights ORDER BY id DESC LIMIT 1").fetchone()
        result = json.loads(row[1])
        result.update(transports={"udt": 95.0}, recommended_transport="udt",
                      transport_why="UDT at 95 Mbit/s and TCP at 27 Mbit/s with 1 stream")
        conn.execute("UPDATE preflights SET result = ? WHERE id = ?", (json.dumps(result), row[0]))
    conn.close()


def test_the_preflight_measures_udt_and_auto_follows_it(servers, gsi, tmp_path, ferry_home):
    udt, _ = servers
    proc, out = _preflight(udt, ferry_home, gsi)
    assert out["transports"]["udt"] > 0 and out["recommended_transport"] in ("tcp", "udt")
    assert "UDT at" in out["transport_why"] and "Transport     " in proc.stdout
    source = udt.data / "auto.bin"
    digest = write_random(source, 8 * MiB, seed=29)
    udt.give(source)
    before = udt.log.read_text(errors="replace").count("SITE SETNETSTACK udt")
    copy = labferry("copy", udt.url(source), str(tmp_path / "auto.bin"), "--json", env_home=ferry_home, env=_env(gsi))
    assert copy.returncode == 0 and sha256_of(tmp_path / "auto.bin") == digest, copy.stderr
    notes = " ".join(json.loads(copy.stdout.splitlines()[-1])["notes"])
    went_udt = udt.log.read_text(errors="replace").count("SITE SETNETSTACK udt") > before
    assert went_udt == (out["recommended_transport"] == "udt") == ("UDT chosen by --transport auto" in notes)


def test_auto_takes_udt_where_it_measured_faster_and_tcp_where_it_is_refused(servers, gsi, tmp_path, ferry_home):
    udt, tcp = servers
    _preflight(udt, ferry_home, gsi)
    _measured_udt_faster(ferry_home)
    for server, name in ((udt, "fast.bin"), (tcp, "refused.bin")):
        asked = server.log.read_text(errors="replace").count("SITE SETNETSTACK udt")
        source = server.data / name
        digest = write_random(source, 6 * MiB, seed=30)
        server.give(source)
        copy = labferry("copy", server.url(source), str(tmp_path / name), "--json", env_home=ferry_home,
                        env=_env(gsi))
        assert copy.returncode == 0 and sha256_of(tmp_path / name) == digest, copy.stderr
        result = json.loads(copy.stdout.splitlines()[-1])
        notes = " ".join(result["notes"])
        assert "UDT chosen by --transport auto: the preflight of" in notes and "UDT at 95 Mbit/s" in notes
        assert server.log.read_text(errors="replace").count("SITE SETNETSTACK udt") > asked  # UDT was asked for
        if server is udt:
            assert result["streams"] == 1 and "UDT, one flow" in notes
            assert "did not start" not in notes
        else:
            assert "UDT did not start (the server does not allow it), so --transport auto sent this copy over TCP" \
                in notes
    # an explicit --transport tcp ignores the measurement
    plain = labferry("copy", udt.url(udt.data / "fast.bin"), str(tmp_path / "tcp.bin"), "--transport", "tcp",
                     "--json", env_home=ferry_home, env=_env(gsi))
    assert plain.returncode == 0 and "UDT chosen" not in plain.stdout, plain.stderr


def test_a_preflight_of_a_server_refusing_udt_says_so_and_recommends_tcp(servers, gsi, ferry_home):
    _, tcp = servers
    proc, out = _preflight(tcp, ferry_home, gsi)
    assert out["transports"] == {"udt": None} and out["recommended_transport"] == "tcp"
    assert "UDT was not measured (the server does not allow it), so --transport auto keeps to TCP on this path." \
        in out["notes"]
    assert "UDT could not be measured" in out["transport_why"]
