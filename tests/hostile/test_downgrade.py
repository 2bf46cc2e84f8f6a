"""An https address that redirects to plain http (a real nginx with TLS, whose /downgrade/ answers 302 to its own
plain port): refused with exit 3 unless --allow-downgrade, and a login never sent over the plain leg."""

from __future__ import annotations

import os

from tests.integration.conftest import write_random
from tests.servers.nginx import LOGIN_PASSWORD, LOGIN_USER

from .conftest import ferry, files_below

MiB = 1024 * 1024


def _file(nginx, name: str) -> bytes:
    write_random(nginx.data / name, 2 * MiB, seed=len(name))
    return (nginx.data / name).read_bytes()


def test_an_https_redirect_to_http_is_refused(nginx, tmp_path):
    _file(nginx, "down.bin")
    dest = tmp_path / "dest"
    dest.mkdir()
    ran = ferry("copy", nginx.url("downgrade/down.bin"), str(dest), "--ca-file", nginx.ca_file, home=tmp_path / "h")
    assert ran.returncode == 3, ran.stderr
    assert "redirects to the plain http address" in ran.said[-1] and "--allow-downgrade" in ran.said[-1], ran.said
    assert "Retrying" not in ran.stderr and ran.seconds < 15
    assert files_below(dest) == {}


def test_allow_downgrade_follows_it(nginx, tmp_path):
    body = _file(nginx, "down2.bin")
    dest = tmp_path / "dest"
    dest.mkdir()
    ran = ferry("copy", nginx.url("downgrade/down2.bin"), str(dest), "--ca-file", nginx.ca_file,
                "--allow-downgrade", home=tmp_path / "h")
    assert ran.returncode == 0, ran.stderr
    assert (dest / "down2.bin").read_bytes() == body


def test_allow_downgrade_never_sends_the_password_over_http(nginx, tmp_path):
    _file(nginx, "down3.bin")
    dest = tmp_path / "dest"
    dest.mkdir()
    before = os.path.getsize(nginx.access_log)
    address = nginx.url("downgrade-login/down3.bin").replace("://", f"://{LOGIN_USER}:{LOGIN_PASSWORD}@")
    ran = ferry("copy", address, str(dest), "--ca-file", nginx.ca_file, "--allow-downgrade", home=tmp_path / "h")
    assert ran.returncode == 3, ran.stderr
    assert "HTTP 401" in ran.said[-1], ran.said
    with open(nginx.access_log) as log:
        log.seek(before)
        plain = [line for line in log if "/login/down3.bin" in line]
    assert plain and all(" 401 " in line for line in plain), plain  # asked without the login, every time
    assert files_below(dest) == {}
