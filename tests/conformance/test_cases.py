"""The cases, each run against every target that claims the capability (see conftest.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance.conftest import CASES, NOT_APPLICABLE, over
from tests.integration.conftest import (
    MiB,
    kill_after_progress,
    labferry,
    popen_labferry,
    sha256_of,
    tree_digests,
    write_random,
)
from tests.servers.nginx import free_port

CASES.update({
    "download_file": "download a file, byte-exact",
    "download_folder": "download a folder (sub-folders, small and large files)",
    "upload_file": "upload a file, byte-exact",
    "upload_folder": "upload a folder",
    "resume_after_kill": "Ferry SIGKILLed mid-transfer, the same command again: resumes, byte-exact",
    "missing_path": "a missing remote path: one sentence, exit 3",
    "refused_port": "a refused port: one sentence, exit 4",
    "unresolvable_host": "a name that does not resolve: one sentence, exit 4",
    "hostile_names": "hostile names in a folder (newline, leading -, $(…), quotes, non-UTF-8, NFC/NFD twins)",
    "server_restarted": "the server killed mid-transfer, started again 3 s later: retried, byte-exact",
    "source_replaced": "the source replaced on the server mid-transfer: fetched again, never spliced",
    "permission_denied": "no permission to read on the server: one sentence, exit 3",
    "wrong_login": "a key the server does not accept: one sentence, exit 3, no retries",
    "connections_cut": "every connection cut mid-transfer, twice (the server's session processes killed, its "
                       "listener kept): retried, byte-exact",
    "disk_full": "the local disk is too small for the file: one sentence naming the folder, exit 5",
    "cancel_upload": "Cancel of an upload removes the partial file on the server (GridFTP: the staging copy)",
    "links_in_dest": "links in DEST (a folder and a file leading outside, a planted NAME.part): refused in a "
                     "sentence naming the link, exit 5, nothing outside touched, --sync included",
})
_UPLOADS = "BitTorrent fetches; serving is seeding"
NOT_APPLICABLE.update({
    ("upload_file", "https"): "n/a: HTTPS downloads only",
    ("upload_folder", "https"): "n/a: HTTPS downloads only",
    ("upload_file", "torrent"): f"n/a: {_UPLOADS}",
    ("upload_folder", "torrent"): f"n/a: {_UPLOADS}",
    ("resume_after_kill", "torrent"): "tested apart: tests/integration/test_torrent.py (kill, resume from pieces)",
    ("missing_path", "torrent"): "n/a: a .torrent names its files; a missing .torrent is local bad input",
    ("refused_port", "torrent"): "tested apart: a peer that never answers stalls with a sentence (test_torrent.py)",
    ("unresolvable_host", "torrent"): "n/a: peers are named by address",
    ("hostile_names", "torrent"): "n/a: names come from the .torrent, checked by libtorrent",
    ("server_restarted", "torrent"): "tested apart: a seed that goes away and a second one (test_torrent.py)",
    ("source_replaced", "torrent"): "n/a: every piece is checked against the torrent's own hashes",
    ("permission_denied", "torrent"): "n/a: a seed serves what it holds",
    ("wrong_login", "gridftp"): "n/a: the suite's GridFTP server is anonymous (FTP logins: the ftp column)",
    ("wrong_login", "torrent"): "n/a: no logins; encryption is tested in test_torrent.py",
    ("connections_cut", "torrent"): "n/a: a seed's connections live in its one process; a seed that goes away "
                                    "and another one are tested in test_torrent.py",
    ("cancel_upload", "https"): "n/a: HTTPS downloads only",
    ("cancel_upload", "torrent"): f"n/a: {_UPLOADS}",
})

EVERY = ("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps", "torrent")
SERVERS = ("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
FOLDERS = ("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps", "torrent")
UPLOADS = ("sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")


def assert_clean_failure(proc, status: int | None = None, *, words: tuple[str, ...] = ()) -> str:
    """Failed with ``status``, no traceback; the last line is the sentence (notes said during the run, such as
    "Using SFTP through paramiko", may come before it)."""
    assert proc.returncode != 0, proc.stdout
    if status is not None:
        assert proc.returncode == status, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith("labferry: ") for line in lines), proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word.lower() in lines[-1].lower(), proc.stderr
    return lines[-1]


def copy(target, source: str, dest, *extra: str, home: Path, timeout: float = 180):
    return labferry("copy", source, str(dest), *target.args(), *extra, "--json", env_home=home, timeout=timeout)


def last_json(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make_tree(base: Path) -> dict[str, str]:
    (base / "lane1" / "qc").mkdir(parents=True)
    digests = {}
    for i in range(24):
        rel = f"lane1/r{i:02d}.fq" if i % 2 else f"r{i:02d}.fq"
        digests[rel] = write_random(base / rel, 20 * 1024 + i * 997, seed=300 + i)
    digests["lane1/qc/report.txt"] = write_random(base / "lane1/qc/report.txt", 3000, seed=330)
    digests["big.bam"] = write_random(base / "big.bam", 12 * MiB, seed=331)
    return digests


@over(*EVERY)
def test_download_file(target, tmp_path, ferry_home):
    digest = write_random(target.path("sample.bam"), 24 * MiB, seed=201)
    target.hand_over(target.root)
    url = target.url("sample.bam")
    proc = copy(target, url, tmp_path, home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sha256_of(tmp_path / "sample.bam") == digest == last_json(proc)["sha256"]
    assert not list(tmp_path.glob("*.part*"))


@over(*FOLDERS)
def test_download_folder(target, tmp_path, ferry_home):
    digests = make_tree(target.path("run42"))
    target.hand_over(target.root)
    url = target.url("run42", folder=True)
    proc = copy(target, url, tmp_path, home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(tmp_path / "run42") == digests


@over(*EVERY)
def test_links_in_dest(target, tmp_path, ferry_home, record_property):
    """A link below DEST, put there by a user or an earlier tool, is never followed when writing: a folder
    download with --sync into a DEST whose sub-folder leads elsewhere, a file whose name there is a link, and a
    single file whose ``NAME.part`` is a link. Each is refused naming the link; the files outside stay as they
    were."""
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / "r00.fq"
    precious.write_bytes(b"precious")
    make_tree(target.path("linked"))
    write_random(target.path("single.bam"), 3 * MiB, seed=341)
    target.hand_over(target.root)
    dest = tmp_path / "dest"
    (dest / "linked").mkdir(parents=True)
    (dest / "linked" / "lane1").symlink_to(outside)  # a sub-folder that leads out of DEST
    (dest / "linked" / "r00.fq").symlink_to(precious)  # a file there that leads out of DEST
    folder = copy(target, target.url("linked", folder=True), dest, "--sync", home=ferry_home)
    sentence = assert_clean_failure(folder, 5, words=("is a link",))
    assert "never writes through a link" in sentence, sentence
    part = dest / "single.bam.part"
    part.symlink_to(outside / "victim.bam")
    single = copy(target, target.url("single.bam"), dest, home=ferry_home)
    if target.name == "torrent":  # its pieces grow in a part folder of its own, never NAME.part: the link is left
        assert single.returncode == 0, single.stderr
    else:
        assert_clean_failure(single, 5, words=("single.bam.part is a link",))
    assert precious.read_bytes() == b"precious" and sorted(p.name for p in outside.iterdir()) == ["r00.fq"]
    assert (dest / "linked" / "lane1").is_symlink() and part.is_symlink()
    record_property("how", "refused naming the link, nothing outside touched")


@over(*UPLOADS)
def test_upload_file(target, tmp_path, ferry_home):
    local = tmp_path / "up.bam"
    digest = write_random(local, 24 * MiB, seed=202)
    proc = copy(target, str(local), target.url("up.bam"), home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert target.digest("up.bam") == digest
    assert not [p for p in target.root.iterdir() if ".part" in p.name]


@over(*UPLOADS)
def test_upload_folder(target, tmp_path, ferry_home):
    digests = make_tree(tmp_path / "run43")
    proc = copy(target, str(tmp_path / "run43"), target.url("", folder=True), home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert tree_digests(target.path("run43")) == digests


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_resume_after_kill(target, tmp_path, ferry_home):
    size = 64 * MiB if target.capped else 384 * MiB
    digest = write_random(target.path("long.bam"), size, seed=203)
    target.hand_over(target.root)
    dest = tmp_path / "long.bam"
    args = ("copy", target.url("long.bam"), str(dest), *target.args(), "--streams", "2", "--json")
    record = dest.with_name("long.bam.part.ferry")
    if target.capped:
        first = popen_labferry(*args, "--limit-rate", "16M", env_home=ferry_home)
        recorded = kill_after_progress(first, record, 16 * MiB)
    else:
        first = popen_labferry(*args, env_home=ferry_home)
        target.hold_when(dest.with_name("long.bam.part"), 48 * MiB)
        try:
            recorded = kill_after_progress(first, record, 16 * MiB)
        finally:
            target.go_on()
    assert recorded >= 16 * MiB
    proc = labferry(*args, env_home=ferry_home, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = last_json(proc)
    assert sha256_of(dest) == digest and out["resumed_from"] >= recorded
    # what the first run recorded is not fetched again (at most one lease per stream, here 2 × 16 MiB)
    assert out["bytes_fetched"] <= size - out["resumed_from"] + 2 * 16 * MiB, out
    assert not record.exists()


@dataclass
class UnderWay:
    """A copy started by ``under_way``: its process, where it lands, and the SHA-256 it must end with."""

    proc: subprocess.Popen
    dest: Path
    digest: str
    size: int

    def ends_byte_exact(self) -> None:
        out, err = self.proc.communicate(timeout=180)
        assert self.proc.returncode == 0, err
        assert sha256_of(self.dest) == self.digest == json.loads(out.strip().splitlines()[-1])["sha256"]


def under_way(target, name: str, seed: int, tmp_path: Path, home: Path) -> UnderWay:
    """``name`` on the server and Ferry copying it, mid-transfer: slowed to 8 MB/s by its own cap (36 MiB: about
    8 MiB are in when the caller acts, 3.5 s of data left), or, from a server it cannot slow (384 MiB), with that
    server frozen once 16 MiB arrived (the caller's ``target.go_on()`` thaws it)."""
    size = 36 * MiB if target.capped else 384 * MiB
    digest = write_random(target.path(name), size, seed=seed)
    target.hand_over(target.root)
    dest = tmp_path / name
    args = ("copy", target.url(name), str(dest), *target.args(), "--streams", "2", "--json")
    if target.capped:
        proc = popen_labferry(*args, "--limit-rate", "8M", env_home=home)
        # from the part file's first appearance, not from the start: a loaded machine may take seconds to start
        # Ferry, and a server killed before the first byte is a refused first connection, which is final
        _appears(dest.with_name(name + ".part"), proc)
        time.sleep(1.0)  # about 8 MiB in
    else:
        proc = popen_labferry(*args, env_home=home)
        target.hold_when(dest.with_name(name + ".part"), 16 * MiB)
    assert proc.poll() is None, proc.communicate()
    return UnderWay(proc, dest, digest, size)


def _appears(part: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not part.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{part.name} never appeared"
        time.sleep(0.01)


@over(*SERVERS)
def test_missing_path(target, tmp_path, ferry_home):
    proc = copy(target, target.url("no-such-file.bam"), tmp_path, home=ferry_home)
    assert_clean_failure(proc, 3)
    assert not list(tmp_path.iterdir())


def _elsewhere(url: str, host: str, port: int | None) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    netloc = f"{user}{host}" + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@over(*SERVERS)
def test_refused_port(target, tmp_path, ferry_home):
    url = _elsewhere(target.url("x.bam"), "127.0.0.1", free_port())
    proc = copy(target, url, tmp_path, home=ferry_home, timeout=60)
    assert_clean_failure(proc, 4, words=("refused",))


@over(*SERVERS)
def test_unresolvable_host(target, tmp_path, ferry_home):
    url = _elsewhere(target.url("x.bam"), "no-such-host.invalid", None)
    proc = copy(target, url, tmp_path, home=ferry_home, timeout=60)
    assert_clean_failure(proc, 4)


HOSTILE = ["-leading-dash.fq", "$(touch PWNED).fq", "back`tick`.fq", "quote's \"double\".fq", "new\nline.fq",
           "tab\there.fq", "star*?.fq", unicodedata.normalize("NFC", "caf\u00e9.fq"),
           unicodedata.normalize("NFD", "caf\u00e9.fq")]
HOSTILE_BYTES = [b"latin1-\xe9t\xe9.fq"]  # not UTF-8: a name from an old Latin-1 system
#: what a download saves them as: characters Windows or a FAT disk refuse, and bytes that are not UTF-8, are
#: written %XX (docs/security.md); the others are kept as they are
SAVED_AS = {"quote's \"double\".fq": "quote's %22double%22.fq", "new\nline.fq": "new%0Aline.fq",
            "tab\there.fq": "tab%09here.fq", "star*?.fq": "star%2A%3F.fq", b"latin1-\xe9t\xe9.fq": "latin1-%E9t%E9.fq"}


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_hostile_names(target, tmp_path, ferry_home, monkeypatch, record_property):
    base = target.path("odd")
    base.mkdir()
    expected = {}
    for i, name in enumerate(HOSTILE):
        expected[os.fsencode(SAVED_AS.get(name, name))] = write_random(base / name, 1000 + i, seed=400 + i)
    for i, raw in enumerate(HOSTILE_BYTES):
        path = os.path.join(os.fsencode(base), raw)
        data = os.urandom(500 + i)
        with open(path, "wb") as fh:
            fh.write(data)
        import hashlib

        expected[os.fsencode(SAVED_AS[raw])] = hashlib.sha256(data).hexdigest()
    target.hand_over(target.root)
    monkeypatch.chdir(tmp_path)
    proc = copy(target, target.url("odd", folder=True), tmp_path / "got", home=ferry_home)
    assert not (tmp_path / "PWNED").exists() and not (target.root / "PWNED").exists()
    assert not Path("PWNED").exists()
    if proc.returncode != 0:  # refused: then in one sentence that names the problem, never an internal error
        sentence = assert_clean_failure(proc)
        assert "internal error" not in sentence and "Unexpected error" not in sentence, sentence
        said = re.sub(r"(/|ftp://|sftp://)\S+", "…", sentence.removeprefix("labferry: ")).split(". ")[0]
        record_property("how", f"refused in a sentence: “{said}”")
        return
    got = {os.fsencode(p.name): sha256_of(p) for p in (tmp_path / "got").iterdir() if p.is_file()}
    assert got == expected
    assert "saved under a safe name" in proc.stderr, proc.stderr
    record_property("how", "all copied intact; names Windows refuses saved as %XX and reported")


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_server_restarted(target, tmp_path, ferry_home):
    copying = under_way(target, "outage.bam", 501, tmp_path, ferry_home)
    try:
        target.crash()
        time.sleep(3)
    finally:
        target.start_again()
    copying.ends_byte_exact()


@over(*SERVERS)
def test_connections_cut(target, tmp_path, ferry_home):
    copying = under_way(target, "cut.bam", 506, tmp_path, ferry_home)
    try:
        assert target.cut_connections() > 0
        if target.capped:  # a second later, whatever Ferry has connected again is cut too
            time.sleep(1.0)
            deadline = time.monotonic() + 30
            while target.cut_connections() == 0:
                assert copying.proc.poll() is None and time.monotonic() < deadline, copying.proc.communicate()
                time.sleep(0.02)
    finally:
        target.go_on()
    copying.ends_byte_exact()


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_source_replaced(target, tmp_path, ferry_home):
    copying = under_way(target, "moving.bam", 502, tmp_path, ferry_home)
    try:
        fresh = target.path("moving.bam.new")
        digest = write_random(fresh, copying.size, seed=503)  # the pipeline wrote a new version: same name and size
        target.hand_over(target.root)
        os.replace(fresh, target.path("moving.bam"))
    finally:
        target.go_on()
    out, err = copying.proc.communicate(timeout=180)
    if copying.proc.returncode == 0:
        assert sha256_of(copying.dest) == digest, "a file made of two versions was delivered with exit 0"
    else:  # refused rather than spliced: then in one sentence, and nothing under the final name
        assert not copying.dest.exists(), err
        assert "Traceback" not in err and "changed" in err.lower(), err


@over(*SERVERS)
def test_permission_denied(target, tmp_path, ferry_home):
    path = write_random(target.path("locked.bam"), 1 * MiB, seed=504) and target.path("locked.bam")
    target.hand_over(target.root)
    os.chmod(path, 0)
    url = target.forbidden_url("locked.bam") if target.name == "https" else target.url("locked.bam")
    proc = copy(target, url, tmp_path, home=ferry_home, timeout=60)
    assert_clean_failure(proc, 3)
    assert not (tmp_path / "locked.bam").exists()


@over("https", "sftp", "scp", "sftp-only", "ftp", "proftpd", "ftps")
def test_wrong_login(target, tmp_path, ferry_home):
    """A key (SSH) or a password (HTTP Basic, FTP) the server does not accept."""
    write_random(target.path("x.bam"), 1 * MiB, seed=505)
    target.hand_over(target.root)
    url, extra = target.wrong_login("x.bam", tmp_path)
    began = time.monotonic()
    proc = labferry("copy", url, str(tmp_path / "x.bam"), *extra, env_home=ferry_home, timeout=60)
    assert_clean_failure(proc, 3, words=("refused the login",))
    assert "not-it" not in proc.stderr
    assert not (tmp_path / "x.bam").exists() and not list(tmp_path.glob("x.bam.part*"))
    assert time.monotonic() - began < 15  # not retried as if the network had failed


@over("sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_cancel_upload(target, tmp_path, ferry_home):
    """Cancel removes partial data on the server too (an upload's NAME.part was left there)."""
    from app.engine import Engine, JobState
    from app.requests import Overrides, resolve
    from app.store import Store
    from backends.core.base import TransferRequest
    from backends.core.registry import registry

    local = tmp_path / "cancelled.bam"
    write_random(local, 48 * MiB, seed=506)
    ssh = {"identity": str(target.server.key), "known_hosts": str(target.server.known_hosts)} \
        if target.name in ("sftp", "scp", "sftp-only") else {}
    with Store() as store:
        ca = target.server.ca_file if target.name == "ftps" else None
        request = resolve(str(local), target.url("cancelled.bam"), Overrides(limit_rate=4 * MiB, streams=2,
                                                                              ca_file=ca, backend_options=ssh),
                          store=store)
    if target.name == "gridftp":
        # globus-url-copy takes no rate cap, so an upload here ends before a Cancel can land: leave the staging
        # copy a cancelled upload leaves, and cancel it the way the engine does (the backend's discard)
        target.put("cancelled.bam.part", b"half an upload")
        registry.get("gridftp").discard(TransferRequest(request.source, request.dest, request.options,
                                                        state_dir=str(ferry_home)))
    else:
        with Engine(max_jobs=1) as engine:
            job = request.submit_to(engine)
            deadline = time.monotonic() + 30
            while engine.job(job.id).bytes_done < 4 * MiB and time.monotonic() < deadline:
                time.sleep(0.1)
            assert engine.job(job.id).state == JobState.RUNNING
            assert target.path("cancelled.bam.part").exists()
            assert engine.cancel(job.id).state == JobState.CANCELLED
    assert not target.path("cancelled.bam.part").exists()
    assert not target.path("cancelled.bam").exists()


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB file system of its own (tmpfs; mounting needs root, as in CI)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.fail("The disk-full case mounts a 16 MiB tmpfs, which needs root (as in CI): run make test as root.",
                    pytrace=False)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@over(*EVERY)
def test_disk_full(target, small_disk, ferry_home):
    digest = write_random(target.path("huge.bam"), 24 * MiB, seed=507)
    target.hand_over(target.root)
    url = target.url("huge.bam")
    proc = copy(target, url, small_disk, home=ferry_home, timeout=120)
    sentence = assert_clean_failure(proc, 5)
    assert str(small_disk) in sentence, sentence
    assert not (small_disk / "huge.bam").exists() or sha256_of(small_disk / "huge.bam") == digest
