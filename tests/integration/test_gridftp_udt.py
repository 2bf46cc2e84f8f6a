"""GridFTP over UDT: a real globus-gridftp-server on gsiftp:// with GSI credentials made for the test, started
with -allow-udt, and one without it. UDT is asked for only on gsiftp:// (``globus-url-copy -udt`` sets its data
channel stack together with the GSI driver), so this is the one place Ferry's ``--transport udt`` can work."""

from __future__ import annotations

import json
import os

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
