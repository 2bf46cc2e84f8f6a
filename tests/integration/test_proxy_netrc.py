"""Behind an institution's proxy, and with logins in ~/.netrc, as curl, wget and aria2c work there: HTTPS_PROXY,
HTTP_PROXY and NO_PROXY are followed, ``--proxy`` names one, and a netrc file gives the HTTP and FTP logins an
address leaves out. The proxy is a real tinyproxy, which logs every request it forwards."""

from __future__ import annotations

import os

import pytest

from tests.servers.nginx import LOGIN_PASSWORD, LOGIN_USER
from tests.servers.tinyproxy import Tinyproxy

from .conftest import MiB, labferry, sha256_of, write_random

CLEAN = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "no_proxy",
                                                                  "all_proxy", "netrc")}


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    server = Tinyproxy(tmp_path_factory.mktemp("tinyproxy")).start()
    yield server
    server.stop()


def _through(proxy, nginx) -> list[str]:
    return [r for r in proxy.requests() if f"127.0.0.1:{nginx.port}" in r or f"127.0.0.1:{nginx.http_port}" in r]


def test_https_proxy_from_the_environment_carries_every_stream(proxy, nginx, tmp_path, ferry_home):
    digest = write_random(nginx.data / "proxied.bin", 24 * MiB, seed=501)
    before = len(_through(proxy, nginx))
    proc = labferry("copy", nginx.url("proxied.bin"), str(tmp_path), "--ca-file", nginx.ca_file, "--streams", "4",
                    env_home=ferry_home, env=dict(CLEAN, HTTPS_PROXY=proxy.url))
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "proxied.bin") == digest
    tunnels = _through(proxy, nginx)[before:]
    assert len(tunnels) >= 2 and all(t.startswith(f"CONNECT 127.0.0.1:{nginx.port}") for t in tunnels), tunnels


def test_no_proxy_goes_direct_and_plain_http_uses_http_proxy(proxy, nginx, tmp_path, ferry_home):
    write_random(nginx.data / "direct.bin", 2 * MiB, seed=502)
    before = len(_through(proxy, nginx))
    direct = labferry("copy", nginx.url("direct.bin"), str(tmp_path), "--ca-file", nginx.ca_file,
                      env_home=ferry_home, env=dict(CLEAN, HTTPS_PROXY=proxy.url, NO_PROXY="127.0.0.1,localhost"))
    assert direct.returncode == 0, direct.stderr
    assert len(_through(proxy, nginx)) == before  # not through the proxy
    (tmp_path / "http").mkdir()
    plain = labferry("copy", nginx.url("direct.bin", scheme="http"), str(tmp_path / "http"), env_home=ferry_home,
                     env=dict(CLEAN, HTTP_PROXY=proxy.url))
    assert plain.returncode == 0, plain.stderr
    assert any(r.startswith(f"GET http://127.0.0.1:{nginx.http_port}/direct.bin") for r in _through(proxy, nginx))


def test_a_proxy_named_with_the_flag(proxy, nginx, tmp_path, ferry_home):
    digest = write_random(nginx.data / "flagged.bin", 4 * MiB, seed=503)
    before = len(_through(proxy, nginx))
    proc = labferry("copy", nginx.url("flagged.bin"), str(tmp_path), "--ca-file", nginx.ca_file, "--proxy",
                    proxy.url, env_home=ferry_home, env=CLEAN)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "flagged.bin") == digest and len(_through(proxy, nginx)) > before


def test_a_proxy_that_is_not_there_is_one_sentence(nginx, tmp_path, ferry_home):
    from tests.servers.nginx import free_port

    write_random(nginx.data / "nowhere.bin", 1 * MiB, seed=504)
    proc = labferry("copy", nginx.url("nowhere.bin"), str(tmp_path), "--ca-file", nginx.ca_file, "--retries", "0",
                    env_home=ferry_home, env=dict(CLEAN, HTTPS_PROXY=f"http://127.0.0.1:{free_port()}"))
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_netrc_gives_the_web_login_an_address_leaves_out(nginx, tmp_path, ferry_home):
    digest = write_random(nginx.data / "behind-login.bin", 3 * MiB, seed=505)
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1\n  login {LOGIN_USER}\n  password {LOGIN_PASSWORD}\n")
    os.chmod(netrc, 0o600)
    (tmp_path / "in").mkdir()
    proc = labferry("copy", nginx.url("login/behind-login.bin"), str(tmp_path / "in"), "--ca-file", nginx.ca_file,
                    env_home=ferry_home, env=dict(CLEAN, NETRC=str(netrc)))
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "in" / "behind-login.bin") == digest
    without = labferry("copy", nginx.url("login/behind-login.bin"), str(tmp_path / "in" / "again.bin"),
                       "--ca-file", nginx.ca_file, env_home=ferry_home, env=CLEAN)
    assert without.returncode == 3, without.stderr  # the same address without the file: refused, as before


def test_netrc_gives_the_ftp_login_and_the_password_of_a_named_user(vsftpd, tmp_path, ferry_home):
    home_file = vsftpd.user_root / "netrc-run.bam"
    digest = write_random(home_file, 2 * MiB, seed=506)
    vsftpd.give(home_file)
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {vsftpd.user} password {vsftpd.password}\n")
    os.chmod(netrc, 0o600)
    path = vsftpd.absolute(home_file)
    for address in (f"ftp://127.0.0.1:{vsftpd.port}/{path}", f"ftp://{vsftpd.user}@127.0.0.1:{vsftpd.port}/{path}"):
        dest = tmp_path / ("named" if "@" in address else "unnamed")
        dest.mkdir()
        proc = labferry("copy", address, f"{dest}/", env_home=ferry_home, env=dict(CLEAN, NETRC=str(netrc)))
        assert proc.returncode == 0, (address, proc.stderr)
        assert sha256_of(dest / "netrc-run.bam") == digest
