"""Web servers as researchers meet them (real Apache httpd), beyond the tuned nginx of the other tests."""

from __future__ import annotations

import json
import os

from .conftest import MiB, kill_after_progress, labferry, popen_labferry, sha256_of, write_random


def _publish(apache, name: str, seed: int, size: int = 48 * MiB) -> str:
    path = apache.data / name
    digest = write_random(path, size, seed)
    os.chmod(path, 0o644)
    return digest


def _killed_midway(apache, url: str, dest, ferry_home, *extra: str) -> None:
    proc = popen_labferry("copy", url, str(dest), "--limit-rate", "8M", "--streams", "2", *extra,
                          env_home=ferry_home)
    done = kill_after_progress(proc, dest.with_name(dest.name + ".part.ferry"), 8 * MiB)
    assert done >= 8 * MiB


def test_a_server_without_validators_never_gets_an_earlier_runs_bytes_spliced_in(apache, tmp_path, ferry_home):
    """No ETag, no Last-Modified: a file replaced (same size) between a killed run and the next one was
    completed from the old bytes, exit 0. Now the next run starts over and says why."""
    _publish(apache, "changing.bin", seed=11)
    dest = tmp_path / "changing.bin"
    url = apache.url("novalid/changing.bin")
    _killed_midway(apache, url, dest, ferry_home)
    new = _publish(apache, "changing.bin", seed=12)  # the core re-ran its pipeline: same name, same size
    proc = labferry("copy", url, str(dest), "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sha256_of(dest) == new == out["sha256"]
    assert out["resumed_from"] == 0
    assert any("sends no ETag or Last-Modified" in n and "from the beginning" in n for n in out["notes"])
    assert out["verify_method"] == ("no checksum given or published; the server sends no ETag or Last-Modified; "
                                    "size checked")


def test_without_validators_a_given_checksum_keeps_the_earlier_bytes_or_fails_loudly(apache, tmp_path, ferry_home):
    """With --checksum the kept bytes are proven at the end: resumed when the file is the same, exit 6 (never 0)
    when it changed, and the run after that fetches the whole file again."""
    old = _publish(apache, "proven.bin", seed=21)
    dest = tmp_path / "proven.bin"
    url = apache.url("novalid/proven.bin")
    _killed_midway(apache, url, dest, ferry_home, "--checksum", f"sha256:{old}")
    proc = labferry("copy", url, str(dest), "--checksum", f"sha256:{old}", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["resumed_from"] >= 8 * MiB and out["verified"] is True and sha256_of(dest) == old

    dest.unlink()
    _killed_midway(apache, url, dest, ferry_home, "--checksum", f"sha256:{old}")
    new = _publish(apache, "proven.bin", seed=22)
    proc = labferry("copy", url, str(dest), "--checksum", f"sha256:{new}", "--json", env_home=ferry_home)
    assert proc.returncode == 6, proc.stderr
    assert not dest.exists()
    proc = labferry("copy", url, str(dest), "--checksum", f"sha256:{new}", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(dest) == new


def test_a_server_with_validators_resumes_after_a_kill(apache, tmp_path, ferry_home):
    digest = _publish(apache, "steady.bin", seed=31)
    dest = tmp_path / "steady.bin"
    _killed_midway(apache, apache.url("steady.bin"), dest, ferry_home)
    proc = labferry("copy", apache.url("steady.bin"), str(dest), "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["resumed_from"] >= 8 * MiB and sha256_of(dest) == digest
    assert "ETag/Last-Modified checked on every range" in out["verify_method"]
