"""Bad input: each gets one sentence, a non-zero exit, and nothing under the final name."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.servers.nginx import free_port

from .conftest import labferry


def assert_clean_failure(proc, status: int | None = None, *, words: tuple[str, ...] = ()) -> str:
    assert proc.returncode != 0, proc.stdout
    if status is not None:
        assert proc.returncode == status, (proc.returncode, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("labferry: ")]
    assert len(lines) == 1 and len(err.splitlines()) == 1, err  # one sentence, nothing else
    for word in words:
        assert word.lower() in err.lower(), err
    return err


@pytest.mark.parametrize("url", ["https://", "htps//example.org/x", "https://exa mple.org/x", "https://host:99999/x"])
def test_malformed_url(url, tmp_path, ferry_home):
    proc = labferry("copy", url, str(tmp_path / "out.bin"), env_home=ferry_home)
    assert_clean_failure(proc, 2)
    assert not (tmp_path / "out.bin").exists()


def test_unsupported_scheme_names_what_is_supported(tmp_path, ferry_home):
    proc = labferry("copy", "gopher://example.org/x", str(tmp_path / "x"), env_home=ferry_home)
    assert_clean_failure(proc, 2, words=("gopher://", "https://"))


def test_unknown_host(tmp_path, ferry_home):
    proc = labferry("copy", "https://no-such-host.invalid/data.bin", str(tmp_path), env_home=ferry_home)
    assert_clean_failure(proc, 4, words=("no-such-host.invalid",))
    assert list(tmp_path.iterdir()) == []


def test_connection_refused(tmp_path, ferry_home):
    port = free_port()
    proc = labferry("copy", f"https://127.0.0.1:{port}/data.bin", str(tmp_path), env_home=ferry_home)
    assert_clean_failure(proc, 4, words=("refused",))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("path", "code", "status"), [("nothing-here.bin", "404", 3), ("forbidden/big.bin", "403", 3)])
def test_http_errors(nginx, big_file, tmp_path, ferry_home, path, code, status):
    proc = labferry("copy", nginx.url(path), str(tmp_path / "out.bin"), "--ca-file", nginx.ca_file,
                    env_home=ferry_home)
    assert_clean_failure(proc, status, words=(code,))
    assert list(tmp_path.iterdir()) == []


def test_tls_certificate_for_another_name_is_refused(nginx, big_file, tmp_path, ferry_home):
    url = f"https://127.0.0.1:{nginx.wrong_port}/big.bin"
    proc = labferry("copy", url, str(tmp_path), "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("certificate", "not valid for that name"))
    assert list(tmp_path.iterdir()) == []


def test_expired_certificate_is_refused_in_words(nginx, big_file, tmp_path, ferry_home):
    url = f"https://127.0.0.1:{nginx.expired_port}/big.bin"
    proc = labferry("copy", url, str(tmp_path), "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("certificate", "expired", "renew"))
    assert list(tmp_path.iterdir()) == []


def test_untrusted_certificate_is_refused_and_ca_file_is_suggested(nginx, big_file, tmp_path, ferry_home):
    proc = labferry("copy", nginx.url("big.bin"), str(tmp_path), env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("certificate", "--ca-file"))
    assert list(tmp_path.iterdir()) == []


def test_insecure_is_possible_when_asked(nginx, plain_file, tmp_path, ferry_home):
    proc = labferry("copy", nginx.url("plain.bin"), str(tmp_path), "--insecure", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr


def test_destination_folder_missing(nginx, plain_file, tmp_path, ferry_home):
    proc = labferry("copy", nginx.url("plain.bin"), str(tmp_path / "no" / "such" / "dir") + "/",
                    "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, 5, words=("does not exist",))


def test_existing_destination_is_not_overwritten_without_asking(nginx, plain_file, tmp_path, ferry_home):
    dest = tmp_path / "plain.bin"
    dest.write_bytes(b"precious")
    proc = labferry("copy", nginx.url("plain.bin"), str(dest), "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, 5, words=("already exists", "--overwrite"))
    assert dest.read_bytes() == b"precious"


def test_bad_checksum_and_streams_arguments(tmp_path, ferry_home):
    proc = labferry("copy", "https://example.org/x", str(tmp_path), "--checksum", "sha256:xyz", env_home=ferry_home)
    assert_clean_failure(proc, 2, words=("64 hexadecimal",))
    proc = labferry("copy", "https://example.org/x", str(tmp_path), "--streams", "500", env_home=ferry_home)
    assert_clean_failure(proc, 2, words=("1 to 64",))
    proc = labferry("copy", "https://example.org/x", str(tmp_path), "--limit-rate", "fast", env_home=ferry_home)
    assert_clean_failure(proc, 2, words=("not a rate",))


def test_checksum_mismatch_keeps_only_the_part_file(nginx, plain_file, tmp_path, ferry_home):
    dest = tmp_path / "plain.bin"
    proc = labferry("copy", nginx.url("plain.bin"), str(dest), "--ca-file", nginx.ca_file,
                    "--checksum", "sha256:" + "0" * 64, env_home=ferry_home)
    assert_clean_failure(proc, 6, words=("does not match", "plain.bin.part"))
    assert not dest.exists()
    assert (tmp_path / "plain.bin.part").stat().st_size == plain_file.size
    assert not (tmp_path / "plain.bin.part.ferry").exists()  # a re-run fetches again instead of trusting it


@pytest.fixture
def mount_point(tmp_path):
    """A fresh folder to mount a tmpfs on (root only); unmounted afterwards."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("mount tests need root in CI", pytrace=False)
        pytest.skip("mounting a tmpfs needs root")
    point = tmp_path / "mnt"
    point.mkdir()
    mounted: list[Path] = []

    def mount(*options: str) -> Path:
        subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(point)], check=True)
        mounted.append(point)
        return point

    yield mount
    for path in mounted:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_disk_full_is_reported_before_transfer(nginx, big_file, mount_point, ferry_home):
    small = mount_point("size=20m")
    proc = labferry("copy", nginx.url("big.bin"), str(small), "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, 5, words=("free space",))
    assert not (small / "big.bin").exists()


def test_read_only_destination(nginx, plain_file, mount_point, ferry_home):
    ro = mount_point("ro", "size=10m")
    proc = labferry("copy", nginx.url("plain.bin"), str(ro), "--ca-file", nginx.ca_file, env_home=ferry_home)
    assert_clean_failure(proc, 5, words=("read-only",))
