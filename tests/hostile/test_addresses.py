"""Addresses whose host or user reads as an option or holds a line break: refused before any command is built
from them (``ssh -oProxyCommand=…`` would run what the address says), with exit 2 and one sentence."""

from __future__ import annotations

import pytest

from .conftest import ferry

ADDRESSES = {
    "ssh host as an option": "sftp://-oProxyCommand=touch%20{mark}/data/x.bin",
    "ssh user as an option": "sftp://-oProxyCommand=touch%20{mark}@127.0.0.1/data/x.bin",
    "scp host as an option": "scp://-F{mark}/data/x.bin",
    "a user with a line break": "sftp://ann%0Arm@127.0.0.1/data/x.bin",
    "an ftp host with a space": "ftp://ftp%20host.example/x.bin",
    "an ftp user as an option": "ftp://-evil@127.0.0.1/x.bin",
    "a gridftp host as an option": "gsiftp://-dbg/x.bin",
    "a web host as an option": "https://-K/x.bin",
}


@pytest.mark.parametrize("kind", list(ADDRESSES))
def test_an_address_that_reads_as_an_option_is_refused_before_any_command(tmp_path, kind):
    mark = tmp_path / "ran"
    dest = tmp_path / "dest"
    dest.mkdir()
    ran = ferry("copy", ADDRESSES[kind].format(mark=mark), str(dest), "--retries", "0", "--wait-network", "0",
                home=tmp_path / "home", timeout=30)
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert len(ran.said) == 1 and "is not a" in ran.said[0] and "Check the address" in ran.said[0], ran.said
    assert ran.seconds < 10, ran.seconds
    assert not mark.exists() and not list(dest.iterdir())


def test_an_upload_to_such_an_address_is_refused_too(tmp_path):
    source = tmp_path / "x.bin"
    source.write_bytes(b"x" * 1000)
    mark = tmp_path / "ran"
    ran = ferry("copy", str(source), f"sftp://-oProxyCommand=touch%20{mark}/incoming/", "--retries", "0",
                home=tmp_path / "home", timeout=30)
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert not mark.exists()


@pytest.mark.parametrize("flag", [("--host=-oProxyCommand=x", "--user", "ann"), ("--host", "dtn", "--user=-lroot")],
                         ids=["host", "user"])
def test_a_site_whose_host_or_user_reads_as_an_option_is_not_saved(tmp_path, flag):
    ran = ferry("sites", "add", "lab", "--protocol", "sftp", *flag, home=tmp_path / "home", timeout=30)
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert len(ran.said) == 1 and "is not a" in ran.said[0], ran.said
    listed = ferry("sites", "list", home=tmp_path / "home", timeout=30)
    assert "No sites yet" in listed.stdout
