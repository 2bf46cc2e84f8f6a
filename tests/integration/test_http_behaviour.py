"""HTTP as real servers behave (Apache httpd): logins, redirect loops, names the server gives, bodies without a
size, validators that change per request, web pages where a file was expected. Every case checks the bytes."""

from __future__ import annotations

import json
import os
import pty
import select
import sys
import time
from urllib.parse import quote

import pytest

from tests.servers.apache import PASSWORD, USER

from .conftest import MiB, labferry, sha256_of, tree_digests, write_random

LOGIN = f"{USER}:{quote(PASSWORD, safe='')}"


def _publish(apache, name: str, seed: int, size: int = 24 * MiB) -> str:
    path = apache.data / name
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = write_random(path, size, seed)
    os.chmod(path, 0o644)
    return digest


def _last_json(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _log_since(apache, mark: int, path: str) -> list[list[str]]:
    """The access-log lines for ``path`` after the first ``mark`` lines, split in fields."""
    return [line.split() for line in apache.requests()[mark:] if f" {path} " in line or f" {path}?" in line]


@pytest.mark.parametrize("area", ["basic", "digest"])
def test_a_login_goes_with_every_range(apache, tmp_path, ferry_home, area):
    """Credentials in the URL reached only the first requests; the later ranges got 401 and the job failed."""
    digest = _publish(apache, "login.bin", seed=41)
    mark = len(apache.requests())
    url = apache.url(f"{area}/login.bin").replace("http://", f"http://{LOGIN}@")
    proc = labferry("copy", url, str(tmp_path / "login.bin"), "--streams", "4", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "login.bin") == digest
    ranges = [f for f in _log_since(apache, mark, f"/{area}/login.bin") if f[-3] == "206"]
    assert len(ranges) >= 4 and all(f[-1] == USER for f in ranges), ranges
    assert PASSWORD not in proc.stdout + proc.stderr


def test_a_wrong_password_is_said_at_once_and_leaves_nothing(apache, tmp_path, ferry_home):
    _publish(apache, "guarded.bin", seed=42)
    mark = len(apache.requests())
    url = apache.url("basic/guarded.bin").replace("http://", f"http://{USER}:wrong@")
    proc = labferry("copy", url, str(tmp_path / "guarded.bin"), env_home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "Wrong user or password for" in proc.stderr and "Retrying" not in proc.stderr
    assert os.listdir(tmp_path) == []
    assert len(_log_since(apache, mark, "/basic/guarded.bin")) <= 2 * 8  # each speculative stream asked once

    proc = labferry("copy", apache.url("basic/guarded.bin"), str(tmp_path / "guarded.bin"), env_home=ferry_home)
    assert proc.returncode == 3
    assert "wants a login" in proc.stderr and "USER@" in proc.stderr


def test_a_site_profiles_password_is_sent_and_a_user_without_one_is_asked(apache, tmp_path, ferry_home, secret_service):
    """The keyring secret of an http site reaches the server; ``https://USER@host/…`` at a terminal asks."""
    digest = _publish(apache, "profile.bin", seed=43, size=4 * MiB)
    env = dict(os.environ, **secret_service.env)  # the password goes to a real Secret Service
    add = labferry("sites", "add", "core", "--protocol", "http", "--host", "127.0.0.1", "--port", str(apache.port),
                   "--user", USER, "--folder", "/digest", "--ask-secret", env_home=ferry_home, env=env,
                   input=PASSWORD + "\n")
    assert add.returncode == 0, add.stderr
    proc = labferry("copy", "site:core/profile.bin", str(tmp_path / "a.bin"), env_home=ferry_home, env=env)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "a.bin") == digest

    url = apache.url("basic/profile.bin").replace("http://", f"http://{USER}@")
    output, status = _at_a_terminal([sys.executable, "-m", "app", "copy", url, str(tmp_path / "b.bin")],
                                    dict(os.environ, LABFERRY_HOME=str(ferry_home)), answer=PASSWORD)
    assert status == 0, output
    assert f"Password for {USER} at 127.0.0.1" in output
    assert sha256_of(tmp_path / "b.bin") == digest


def _at_a_terminal(argv: list[str], env: dict, answer: str, timeout: float = 60) -> tuple[str, int]:
    """Run ``argv`` with a terminal of its own, typing ``answer`` at its first password prompt."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, env)
    output, answered, deadline = b"", False, time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        output += data
        if not answered and b"Password for" in output:
            os.write(fd, answer.encode() + b"\n")
            answered = True
    _, status = os.waitpid(pid, 0)
    return output.decode(errors="replace"), os.waitstatus_to_exitcode(status)


def test_a_redirect_loop_ends_at_once(apache, tmp_path, ferry_home):
    mark = len(apache.requests())
    proc = labferry("copy", apache.url("loop/a"), str(tmp_path / "x"), env_home=ferry_home)
    assert proc.returncode == 2, proc.stderr
    assert "Redirect loop at" in proc.stderr and "will retry" not in proc.stderr
    assert len([line for line in apache.requests()[mark:] if "/loop/" in line]) <= 8 * 11


def test_the_server_names_the_file(apache, tmp_path, ferry_home):
    """``download?id=1`` and ``?id=2`` both became ``download`` (the second failed); a redirect chain was named
    after its first address. Now Content-Disposition, else where the redirects end; a collision is refused."""
    one = _publish(apache, "sample1.fastq", seed=44, size=3 * MiB)
    two = _publish(apache, "sample2.fastq", seed=45, size=2 * MiB)
    for query in ("id=1", "id=2"):
        proc = labferry("copy", apache.url(f"download?{query}"), f"{tmp_path}/", "--json", env_home=ferry_home)
        assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "sample1.fastq") == one and sha256_of(tmp_path / "sample2.fastq") == two
    assert _last_json(proc)["dest"] == str(tmp_path / "sample2.fastq")

    latest = tmp_path / "latest"
    latest.mkdir()
    proc = labferry("copy", apache.url("latest"), f"{latest}/", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(latest) == ["sample2.fastq"]

    proc = labferry("copy", apache.url("download?id=1"), f"{tmp_path}/", env_home=ferry_home)
    assert proc.returncode == 5
    assert "already exists (the server names the file sample1.fastq)" in proc.stderr
    proc = labferry("copy", apache.url("download?id=1"), str(tmp_path / "mine.fastq"), env_home=ferry_home)
    assert proc.returncode == 0 and sha256_of(tmp_path / "mine.fastq") == one


@pytest.mark.parametrize("size", [0, 5 * MiB + 7])
def test_a_body_without_a_size_is_fetched_byte_exact(apache, tmp_path, ferry_home, size):
    """A CGI answer (chunked, no Content-Length, no ranges) and an empty file: 'internal error (Bad file
    descriptor)' or 'kept changing on the server' before."""
    digest = _publish(apache, f"streamed{size}.bin", seed=46, size=size)
    for path in (f"stream/streamed{size}.bin", f"streamed{size}.bin"):
        dest = tmp_path / path.replace("/", "_")
        proc = labferry("copy", apache.url(path), str(dest), "--json", env_home=ferry_home)
        assert proc.returncode == 0, proc.stderr
        assert sha256_of(dest) == digest and os.path.getsize(dest) == size
    out = _last_json(proc)
    assert out["streams"] == 1 or size > 0


def test_validators_that_change_on_every_request_fall_back_to_one_request(apache, tmp_path, ferry_home):
    digest = _publish(apache, "dynamic.bin", seed=47)
    proc = labferry("copy", apache.url("dynamic/dynamic.bin"), str(tmp_path / "d.bin"), "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    assert sha256_of(tmp_path / "d.bin") == digest == out["sha256"]
    assert out["streams"] == 1
    assert any("new ETag or date on every request" in note for note in out["notes"])
    assert "changes on every request, so the file came in one request" in out["verify_method"]


def _publish_tree(apache, top: str) -> dict[str, str]:
    """A run folder as a core publishes it: small files, a sub-folder, a large file, a published checksum."""
    digests = {}
    for i in range(12):
        rel = f"lane{i % 2}/r{i:02d}.fq"
        digests[rel] = _publish(apache, f"{top}/{rel}", seed=600 + i, size=7000 + i * 1013)
    digests["big.bam"] = _publish(apache, f"{top}/big.bam", seed=620, size=20 * MiB)
    digests["notes/read me.txt"] = _publish(apache, f"{top}/notes/read me.txt", seed=621, size=500)
    sidecar = apache.data / top / "lane0/r00.fq.sha256"
    sidecar.write_text(f"{digests['lane0/r00.fq']}  r00.fq\n")
    digests["lane0/r00.fq.sha256"] = sha256_of(sidecar)
    _publish(apache, "outside.fq", seed=622, size=100)  # beside the folder: must not be fetched
    for folder in [apache.data / top] + [p for p in (apache.data / top).rglob("*") if p.is_dir()]:
        os.chmod(folder, 0o755)
    os.chmod(sidecar, 0o644)
    return digests


def test_a_web_folder_comes_as_a_folder_staying_below_it(apache, tmp_path, ferry_home):
    """An autoindex URL was saved as its HTML listing, exit 0."""
    digests = _publish_tree(apache, "run7")
    mark = len(apache.requests())
    proc = labferry("copy", apache.url("run7/"), f"{tmp_path}/", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "run7") == digests
    assert not list(tmp_path.rglob("*.part"))
    out = _last_json(proc)
    assert "15 files" in out["verify_method"], proc.stderr
    # written a moment ago: Apache's weak ETag (and a date in the current second) is no reason to start again
    assert out["retries"] == 0 and out["restarts"] == 0 and "changed" not in proc.stderr, proc.stderr
    assert "sha256 published beside it matched (1 file)" in out["verify_method"]
    paths = [line.split()[1] for line in apache.requests()[mark:]]
    assert paths and all(p.startswith("/run7/") for p in paths), paths  # never above the start (wget -np)
    assert not any("?" in p for p in paths)  # Apache's sort links are not files
    when = os.path.getmtime(apache.data / "run7/lane1/r01.fq")
    assert int(os.path.getmtime(tmp_path / "run7/lane1/r01.fq")) == int(when)

    # the same command again: refused in a sentence; with --sync, nothing is fetched again
    again = labferry("copy", apache.url("run7/"), f"{tmp_path}/", env_home=ferry_home)
    assert again.returncode == 5 and "already exist" in again.stderr, again.stderr
    mark = len(apache.requests())
    again = labferry("copy", apache.url("run7"), f"{tmp_path}/", "--sync", "--json", env_home=ferry_home)
    assert again.returncode == 0, again.stderr
    assert not [line for line in apache.requests()[mark:] if line.startswith("GET") and ".fq " in line]
    assert tree_digests(tmp_path / "run7") == digests


def test_a_web_page_is_not_saved_as_data(apache, tmp_path, ferry_home):
    _publish(apache, "run8/reads_1.fastq", seed=48, size=MiB)
    (apache.data / "run8/index.html").write_text("<html><head><title>Run 8 portal</title></head>"
                                                 "<body><a href='reads_1.fastq'>reads</a></body></html>")
    os.chmod(apache.data / "run8", 0o755)
    os.chmod(apache.data / "run8/index.html", 0o644)
    proc = labferry("copy", apache.url("run8/"), f"{tmp_path}/", env_home=ferry_home)
    assert proc.returncode == 2, proc.stderr
    assert "is a web page" in proc.stderr
    assert os.listdir(tmp_path) == []
    proc = labferry("copy", apache.url("run8/"), str(tmp_path / "portal.html"), "--web-page", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "Run 8 portal" in (tmp_path / "portal.html").read_text()


def test_a_body_the_server_compressed_is_saved_as_the_file_the_url_names(apache, tmp_path, ferry_home):
    """``Content-Encoding: gzip`` although identity was asked: decoded; a ``.gz`` the server labels gzip: kept."""
    import gzip

    digest = _publish(apache, "plain.fq", seed=49, size=3 * MiB)
    packed = apache.data / "packed.fq.gz"
    packed.write_bytes(gzip.compress((apache.data / "plain.fq").read_bytes()))
    os.chmod(packed, 0o644)
    proc = labferry("copy", apache.url("gzip/plain.fq"), str(tmp_path / "plain.fq"), "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "plain.fq") == digest == _last_json(proc)["sha256"]
    assert "gzip-compressed by the server and decoded here" in _last_json(proc)["verify_method"]
    proc = labferry("copy", apache.url("gzfile/packed.fq.gz"), f"{tmp_path}/", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "packed.fq.gz") == sha256_of(packed)
    # the same in a folder: its small files are fetched with one request each
    os.makedirs(apache.data / "zipped", mode=0o755)
    os.link(apache.data / "plain.fq", apache.data / "zipped/plain.fq")
    proc = labferry("copy", apache.url("gzip/zipped/"), f"{tmp_path}/", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "zipped/plain.fq") == digest


def test_a_lighttpd_listing_is_a_folder_too(lighttpd, tmp_path, ferry_home):
    digests = {}
    for rel, size, seed in (("a b.fq", 3000, 70), ("sub/c.fq", 5000, 71), ("sub/deep/d.fq", 100, 72),
                            ("large.bam", 18 * MiB, 73)):
        path = lighttpd.data / "core" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        digests[rel] = write_random(path, size, seed)
    for path in [lighttpd.data / "core", *(lighttpd.data / "core").rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    proc = labferry("copy", lighttpd.url("core/"), f"{tmp_path}/", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "core") == digests
    assert "4 files (3 one request each, 1 in parallel streams)" in _last_json(proc)["verify_method"]
