"""GridFTP against a real globus-gridftp-server (anonymous mode) on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from app.engine import Engine, JobState, RetryPolicy
from backends.core.base import TransferOptions

from .conftest import MiB, sha256_of, tree_digests, write_random
from .conftest import labferry as _labferry
from .conftest import popen_labferry as _popen_labferry
from .test_https_errors import assert_clean_failure


def _gridftp(args: tuple[str, ...]) -> tuple[str, ...]:
    """ftp:// belongs to the native FTP backend; this server is a GridFTP server, reached with --backend gridftp."""
    if args and args[0] == "copy" and any(a.startswith("ftp://") for a in args[1:3]):
        return (*args, "--backend", "gridftp")
    return args


def labferry(*args: str, **kw):
    return _labferry(*_gridftp(args), **kw)


def popen_labferry(*args: str, **kw):
    return _popen_labferry(*_gridftp(args), **kw)


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make_tree(root: Path, seed: int) -> dict[str, str]:
    """A folder like a sequencing run: many small files in subfolders and two large ones."""
    digests = {}
    for i in range(240):
        rel = f"lane{i % 4}/sample_{i:03d}.txt"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        digests[rel] = write_random(root / rel, 1000 + 37 * i, seed=seed + i)
    for name in ("reads_R1.fq", "reads_R2.fq"):
        digests[name] = write_random(root / name, 24 * MiB, seed=seed + len(name))
    (root / "empty_dir").mkdir()
    return digests


@pytest.mark.parametrize("streams", ["1", "4"])
def test_download_is_exact_and_checked_by_the_server(gridftp, grid_big, tmp_path, ferry_home, streams):
    proc = labferry("copy", gridftp.url(grid_big.path), str(tmp_path), "--streams", streams, "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert sha256_of(tmp_path / "big.bin") == grid_big.sha256 == out["sha256"]
    assert out["backend"] == "gridftp" and out["streams"] == int(streams)
    assert out["verified"] is True and "computed by the server matched" in out["verify_method"]
    assert not (tmp_path / "big.bin.part").exists()
    assert int((tmp_path / "big.bin").stat().st_mtime) == int(grid_big.path.stat().st_mtime)


def test_upload_lands_under_its_name_only_when_verified(gridftp, tmp_path, ferry_home):
    local = tmp_path / "upload.bin"
    digest = write_random(local, 60 * MiB, seed=71)
    target = gridftp.data / "incoming"
    target.mkdir(exist_ok=True)
    gridftp.give(target)
    proc = labferry("copy", str(local), gridftp.url(target, folder=True), "--streams", "4", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert sha256_of(target / "upload.bin") == digest == out["sha256"]
    assert out["verified"] is True and "at its final name, computed by the destination server" in out["verify_method"]
    assert sorted(os.listdir(target)) == ["upload.bin"]
    assert int((target / "upload.bin").stat().st_mtime) == int(local.stat().st_mtime)
    again = labferry("copy", str(local), gridftp.url(target / "upload.bin"), env_home=ferry_home)
    assert_clean_failure(again, 2, words=("already exists", "--overwrite"))


def test_folder_of_many_files_both_ways(gridftp, tmp_path, ferry_home):
    source = gridftp.data / "run42"
    source.mkdir()
    digests = make_tree(source, seed=100)
    for path in [source, *source.rglob("*")]:
        gridftp.give(path)
    down = labferry("copy", gridftp.url(source), str(tmp_path), "--json", env_home=ferry_home, timeout=300)
    assert down.returncode == 0, down.stderr
    out = result_of(down)
    assert tree_digests(tmp_path / "run42") == digests
    assert (tmp_path / "run42" / "empty_dir").is_dir()
    assert out["verified"] is True and "every file computed by the server matched" in out["verify_method"]
    assert not (tmp_path / "run42.part").exists()

    target = gridftp.data / "uploads"
    target.mkdir()
    gridftp.give(target)
    up = labferry("copy", str(tmp_path / "run42"), gridftp.url(target, folder=True), "--json", env_home=ferry_home,
                  timeout=300)
    assert up.returncode == 0, up.stderr
    assert tree_digests(target / "run42") == digests
    assert result_of(up)["sha256"] == out["sha256"]  # the same manifest on both sides
    assert sorted(os.listdir(target)) == ["run42"]


def test_third_party_transfer_between_two_servers(gridftp, gridftp_peer, grid_big, ferry_home, tmp_path):
    target = gridftp_peer.data / "mirror"
    target.mkdir()
    gridftp_peer.give(target)
    proc = labferry("copy", gridftp.url(grid_big.path), gridftp_peer.url(target, folder=True), "--streams", "4",
                    "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert sha256_of(target / "big.bin") == grid_big.sha256 == out["sha256"]
    assert out["verified"] is True and "at its final name, computed by the destination server" in out["verify_method"]
    assert os.listdir(target) == ["big.bin"]
    assert not any(tmp_path.iterdir())  # nothing passed through this machine's disk

    folder = gridftp.data / "tp-tree"
    folder.mkdir()
    digests = make_tree(folder, seed=300)
    for path in [folder, *folder.rglob("*")]:
        gridftp.give(path)
    tree = labferry("copy", gridftp.url(folder), gridftp_peer.url(target, folder=True), "--json",
                    env_home=ferry_home, timeout=300)
    assert tree.returncode == 0, tree.stderr
    assert tree_digests(target / "tp-tree") == digests


def test_restart_after_the_server_is_killed_mid_transfer(tmp_path_factory, tmp_path, ferry_home):
    from tests.servers.gridftp import GridftpServer

    root = tmp_path_factory.mktemp("gridftp-crash")
    server = GridftpServer(root).start()
    try:
        source = server.data / "large.bin"
        digest = write_random(source, 768 * MiB, seed=72)
        server.give(server.data)
        server.give(source)
        dest = tmp_path / "large.bin"
        proc = popen_labferry("copy", server.url(source), str(dest), "--streams", "2", "--json", env_home=ferry_home)
        part = tmp_path / "large.bin.part"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if part.exists() and part.stat().st_size >= 48 * MiB:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the transfer finished before the server could be killed"
        server.kill()
        assert not dest.exists()
        time.sleep(1.0)
        server.start()
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
        assert sha256_of(dest) == digest == json.loads(out.strip().splitlines()[-1])["sha256"]
        assert not part.exists()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_a_resume_record_holds_only_for_the_same_server_file(gridftp, tmp_path, ferry_home):
    """Stopped mid-way, then the server's file replaced by a new version of the same size: the next run
    must not keep the earlier bytes (the record names the old file's time), and delivers the new one."""
    import signal

    from tests.conformance.servers import signal_tree
    from tests.integration.conftest import kill_after_progress

    source = gridftp.data / "versioned.bin"
    write_random(source, 384 * MiB, seed=73)
    gridftp.give(source)
    dest = tmp_path / "versioned.bin"
    first = popen_labferry("copy", gridftp.url(source), str(dest), "--streams", "2", "--json", env_home=ferry_home)
    part, record = tmp_path / "versioned.bin.part", tmp_path / "versioned.bin.part.ferry"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (part.exists() and part.stat().st_size >= 48 * MiB):
        time.sleep(0.001)
    signal_tree(gridftp.proc.pid, signal.SIGSTOP)  # hold the data still while Ferry records what it hashed
    try:
        recorded = kill_after_progress(first, record, 16 * MiB)
    finally:
        signal_tree(gridftp.proc.pid, signal.SIGCONT)
    assert recorded >= 16 * MiB and json.loads(record.read_text())["done"] == [[0, recorded]]
    digest = write_random(source, 384 * MiB, seed=74)
    os.utime(source, (time.time() + 5, time.time() + 5))
    gridftp.give(source)
    proc = labferry("copy", gridftp.url(source), str(dest), "--streams", "2", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["resumed_from"] == 0 and sha256_of(dest) == digest == out["sha256"]
    assert not part.exists() and not record.exists()


def test_bad_addresses_are_refused_in_words(tmp_path, ferry_home):
    for url, words in (("ftp:///no/host", ("names no server",)),
                       ("ftp://127.0.0.1:99999/x", ("not a valid address",)),
                       ("ftp://me:secret@127.0.0.1/x", ("passwords",))):
        proc = labferry("copy", url, str(tmp_path / "x"), env_home=ferry_home)
        err = assert_clean_failure(proc, 2, words=words)
        assert "secret" not in err


def test_missing_file_and_refused_connection(gridftp, tmp_path, ferry_home):
    missing = labferry("copy", gridftp.url(gridftp.data / "nope.bin"), str(tmp_path), env_home=ferry_home)
    assert_clean_failure(missing, 3, words=("no file or folder", "check the path"))
    from tests.servers.nginx import free_port

    refused = labferry("copy", f"ftp://127.0.0.1:{free_port()}/x.bin", str(tmp_path), env_home=ferry_home)
    assert_clean_failure(refused, 4, words=("refused the connection",))
    assert list(tmp_path.iterdir()) == []


def test_server_without_write_permission(gridftp, tmp_path, ferry_home):
    locked = gridftp.data / "readonly"
    locked.mkdir()
    os.chmod(locked, 0o555)
    local = tmp_path / "a.bin"
    write_random(local, 2 * MiB, seed=73)
    proc = labferry("copy", str(local), gridftp.url(locked, folder=True), env_home=ferry_home)
    assert_clean_failure(proc, 3, words=("permission denied", "readonly"))
    assert os.listdir(locked) == []


def test_unavailable_tool_is_reported_with_the_install_command(gridftp, grid_big, tmp_path, ferry_home):
    env_path = str(tmp_path / "empty-bin")
    os.mkdir(env_path)
    proc = labferry("copy", gridftp.url(grid_big.path), str(tmp_path), env_home=ferry_home,
                    env=dict(os.environ, PATH=env_path, LABFERRY_HOME=str(ferry_home)))
    assert_clean_failure(proc, 2, words=("globus-url-copy", "not installed", "apt install globus-gass-copy-progs"))
    assert not (tmp_path / "big.bin").exists()


def test_no_verify_still_records_the_sha256(gridftp, grid_big, tmp_path, ferry_home):
    proc = labferry("copy", gridftp.url(grid_big.path), str(tmp_path), "--no-verify", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["sha256"] == grid_big.sha256 == sha256_of(tmp_path / "big.bin")
    assert out["verified"] is False and "turned off" in out["verify_method"]


def test_servers_ferry_cannot_talk_to_directly_still_work(gridftp, grid_big, tmp_path, monkeypatch):
    """gsiftp:// and sshftp:// control channels need GSI or SSH, which only the Globus tools speak: Ferry then
    cannot stat, list or hash, and relies on globus-url-copy alone. Shown here on the real server by taking
    Ferry's own control channel away."""
    import asyncio

    import backends.gridftp.backend as gridftp_backend
    from backends.core.base import TransferOptions, TransferRequest

    monkeypatch.setattr(gridftp_backend, "open_control", lambda url: None)
    monkeypatch.setattr(gridftp_backend, "_speaks_control", lambda url: False)
    folder = gridftp.data / "blind"
    folder.mkdir()
    digests = make_tree(folder, seed=500)
    for path in [folder, *folder.rglob("*")]:
        gridftp.give(path)

    class Sink:
        def progress(self, *args): pass
        def note(self, message): pass
        def stage(self, stage): pass

    backend = gridftp_backend.GridftpBackend()
    one = asyncio.run(backend._download(TransferRequest(gridftp.url(grid_big.path), str(tmp_path / "big.bin"),
                                                        TransferOptions(streams=2)), Sink()))
    assert sha256_of(tmp_path / "big.bin") == grid_big.sha256 == one.sha256 and one.verified
    assert "-verify-checksum" in one.verify_method
    tree = asyncio.run(backend._download(TransferRequest(gridftp.url(folder, folder=True), str(tmp_path / "blind"),
                                                         TransferOptions(streams=4)), Sink()))
    assert tree_digests(tmp_path / "blind") == digests and tree.bytes == sum(
        (folder / rel).stat().st_size for rel in digests)
    assert not (tmp_path / "blind.part").exists()


def test_auto_streams_come_from_the_benchmark_log(gridftp, grid_big, tmp_path, ferry_home):
    first = labferry("copy", gridftp.url(grid_big.path), str(tmp_path / "a.bin"), "--streams", "3", "--json",
                     env_home=ferry_home)
    assert first.returncode == 0, first.stderr
    again = labferry("copy", gridftp.url(grid_big.path), str(tmp_path / "b.bin"), "--streams", "auto", "--json",
                     env_home=ferry_home)
    assert again.returncode == 0, again.stderr
    out = result_of(again)
    assert out["streams"] == 3 and any("best recent result" in note for note in out["notes"])


def test_jobs_side_by_side_each_finish_exact(gridftp, tmp_path):
    # the GUI runs three jobs at once, often from one server: each globus-url-copy keeps to its own file
    names = {f"side{i}.bin": write_random(gridftp.data / f"side{i}.bin", 24 * MiB, seed=80 + i) for i in range(3)}
    for name in names:
        gridftp.give(gridftp.data / name)
    with Engine(max_jobs=3, retry=RetryPolicy(max_retries=0)) as engine:
        jobs = [engine.submit(gridftp.url(gridftp.data / name), str(tmp_path / name),
                              TransferOptions(streams=2, limit_rate=8 * MiB), "gridftp") for name in names]
        finals = [engine.wait(job.id, timeout=120) for job in jobs]
    assert [f.state for f in finals] == [JobState.DONE] * 3, [f.error for f in finals]
    assert all(sha256_of(tmp_path / name) == digest for name, digest in names.items())
    # the GUI's bandwidth cap reaches every job; globus-url-copy cannot keep it, and the job says so
    assert all(any("cannot be capped" in note and "8.0 MiB/s" in note for note in f.notes) for f in finals)
