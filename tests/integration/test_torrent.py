"""BitTorrent between real libtorrent sessions on 127.0.0.1 (seeds and fetchers are labferry processes)."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.servers.nginx import free_port, wait_for_port

from .conftest import MiB, labferry, popen_labferry, sha256_of, write_random
from .test_https_errors import assert_clean_failure


def consecutive_free_ports(count: int) -> int:
    """The first of ``count`` free consecutive ports: a seed's sessions take PORT … PORT+count-1, and one taken
    port makes the seed exit (a fetcher then waits out its stall timeout with no peer)."""
    import socket

    for _ in range(50):
        base = free_port()
        try:
            with contextlib.ExitStack() as held:
                for port in range(base, base + count):
                    held.enter_context(socket.socket()).bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports found")


def distinct_ports(count: int) -> list[int]:
    """Free ports, all different (asking one at a time may get the same port back)."""
    import socket

    held = [socket.socket() for _ in range(count)]
    try:
        for s in held:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A 96 MiB file and a folder of 40 files, with their torrents."""
    root = tmp_path_factory.mktemp("bt")
    home = root / "home"
    home.mkdir()
    data = root / "seed"
    data.mkdir()
    big = data / "reads.fastq"
    digest = write_random(big, 96 * MiB, seed=81)
    folder = data / "cohort"
    folder.mkdir()
    for i in range(40):
        write_random(folder / f"s{i:02d}.bam", (i % 7 + 1) * 64 * 1024, seed=100 + i)
    (folder / "meta").mkdir()
    write_random(folder / "meta" / "samples.tsv", 3000, seed=99)
    for path in (big, folder):
        proc = labferry("torrent", "create", str(path), "-o", str(root / f"{path.name}.torrent"), env_home=home)
        assert proc.returncode == 0, proc.stderr
        assert ", v2)" in proc.stdout and "private" in proc.stdout and "magnet:?" not in proc.stdout
        assert "cannot be fetched from a magnet link" in proc.stdout
    yield {"root": root, "data": data, "big": big, "digest": digest, "folder": folder, "home": home}
    shutil.rmtree(root, ignore_errors=True)


class Seed:
    def __init__(self, port: int) -> None:
        self.port, self.log = port, ""


@contextlib.contextmanager
def seeding(torrent: Path, data: Path, home: Path, *extra: str, connections: int = 2):
    """A ``labferry seed`` process; after the block, ``.log`` holds what it said."""
    seed = Seed(consecutive_free_ports(connections))
    proc = popen_labferry("seed", str(torrent), "--data", str(data), "--listen", f"127.0.0.1:{seed.port}",
                          "--connections", str(connections), *extra, env_home=home)
    try:
        for port in range(seed.port, seed.port + connections):
            wait_for_port(port, timeout=30)
    except RuntimeError:
        proc.kill()
        raise AssertionError(f"the seed never listened on all its ports: {proc.communicate()[1]}") from None
    assert proc.poll() is None, proc.stderr.read()
    try:
        yield seed
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            seed.log = proc.communicate(timeout=15)[1]
        except subprocess.TimeoutExpired:
            proc.kill()


def fetch(torrent: Path, dest: Path, home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return labferry("copy", str(torrent), str(dest), *args, "--json", "--stall-timeout", "20", env_home=home,
                    timeout=timeout)


def test_one_seed_to_one_fetcher_over_several_connections(dataset, tmp_path):
    torrent = dataset["root"] / "reads.fastq.torrent"
    with seeding(torrent, dataset["data"], dataset["home"], connections=3) as seed:
        proc = fetch(torrent, tmp_path, tmp_path, "--peer", f"127.0.0.1:{seed.port}", "--connections", "3")
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["backend"] == "torrent" and out["verified"] and "SHA-256 (v2)" in out["verify_method"]
    assert out["sha256"] == dataset["digest"] == sha256_of(tmp_path / "reads.fastq")
    assert out["streams"] == 3  # one connection to each of the seed's sessions
    history = json.loads(labferry("history", "--json", env_home=tmp_path).stdout.strip().splitlines()[-1])
    assert history[0]["sha256"] == dataset["digest"]


def test_limit_rate_caps_a_fetch(dataset, tmp_path):
    # the GUI's bandwidth cap and --limit-rate reach libtorrent's session (they were ignored before)
    torrent = dataset["root"] / "reads.fastq.torrent"
    with seeding(torrent, dataset["data"], dataset["home"], connections=2) as seed:
        began = time.monotonic()
        proc = fetch(torrent, tmp_path, tmp_path, "--peer", f"127.0.0.1:{seed.port}", "--connections", "2",
                     "--limit-rate", "32M")
        spent = time.monotonic() - began
    assert proc.returncode == 0, proc.stderr
    assert result_of(proc)["sha256"] == dataset["digest"]
    # 96 MiB at 32 MiB/s cannot take less than ~3 s; unlimited over the loopback it takes well under one
    assert spent >= 2.5, spent


def test_a_folder_torrent_arrives_whole(dataset, tmp_path):
    torrent = dataset["root"] / "cohort.torrent"
    with seeding(torrent, dataset["folder"], dataset["home"]) as seed:
        proc = fetch(torrent, tmp_path, tmp_path, "--peer", f"127.0.0.1:{seed.port}")
    assert proc.returncode == 0, proc.stderr
    for src in dataset["folder"].rglob("*"):
        if src.is_file():
            assert sha256_of(tmp_path / "cohort" / src.relative_to(dataset["folder"])) == sha256_of(src)
    assert not [p for p in (tmp_path / "cohort").rglob("*") if p.name.startswith(".pad")]


def test_one_seed_to_three_fetchers_that_share_pieces(dataset, tmp_path):
    torrent = dataset["root"] / "reads.fastq.torrent"
    ports = distinct_ports(3)
    with seeding(torrent, dataset["data"], dataset["home"], "--upload-limit", "40M", connections=1) as seed:
        procs = []
        for i, port in enumerate(ports):
            others = [a for p in ports if p != port for a in ("--peer", f"127.0.0.1:{p}")]
            procs.append(popen_labferry("copy", str(torrent), str(tmp_path / f"f{i}"), "--peer",
                                        f"127.0.0.1:{seed.port}", "--connections", "1", *others, "--listen",
                                        f"127.0.0.1:{port}", "--json", "--stall-timeout", "30",
                                        env_home=tmp_path / f"h{i}"))
        outs = []
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=180)
            assert proc.returncode == 0, stderr
            outs.append(json.loads(stdout.strip().splitlines()[-1]))
    for i, out in enumerate(outs):
        assert out["sha256"] == dataset["digest"] == sha256_of(tmp_path / f"f{i}" / "reads.fastq")
    shared = [int(n.split()[1]) for out in outs for n in out["notes"] if n.startswith("Shared ")]
    # the seed may send at most 40 MiB/s; the fetchers passed pieces among themselves
    assert sum(shared) > 32 * MiB


def test_web_seed_alone_serves_the_torrent(dataset, nginx, tmp_path):
    shutil.copy(dataset["big"], nginx.data / "reads.fastq")
    torrent = tmp_path / "web.torrent"
    made = labferry("torrent", "create", str(dataset["big"]), "-o", str(torrent), "--web-seed",
                    nginx.url("reads.fastq", scheme="http"), env_home=tmp_path)
    assert made.returncode == 0, made.stderr
    served = nginx.body_bytes("/reads.fastq")
    proc = fetch(torrent, tmp_path / "out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert result_of(proc)["sha256"] == dataset["digest"]
    assert nginx.body_bytes("/reads.fastq") - served >= 96 * MiB  # every byte came from the web server


def _mtime(path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:  # replaced this instant, or the fetch finished and removed it
        return -1


def test_fetcher_killed_midway_resumes_from_its_pieces(dataset, tmp_path):
    torrent = dataset["root"] / "reads.fastq.torrent"
    # 8 MiB/s: 12 s for the 96 MiB, so the kill lands after a second save and well before the end (at 16 MiB/s
    # a loaded machine once saw the fetch finish, and its resume file go, before the kill)
    with seeding(torrent, dataset["data"], dataset["home"], "--upload-limit", "8M") as seed:
        first = popen_labferry("copy", str(torrent), str(tmp_path), "--peer", f"127.0.0.1:{seed.port}", "--json",
                               env_home=tmp_path / "home")
        state = tmp_path / "home" / "torrents"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(state.glob("*.fastresume")):
            time.sleep(0.2)
        saved = list(state.glob("*.fastresume"))
        stamp = _mtime(saved[0]) if saved else 0
        while time.monotonic() < deadline and saved and _mtime(saved[0]) == stamp:
            time.sleep(0.1)  # a later save, with more pieces written out
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert list(state.glob("*.fastresume")), "no resume data was saved"
        proc = fetch(torrent, tmp_path, tmp_path / "home", "--peer", f"127.0.0.1:{seed.port}")
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["resumed_from"] >= 4 * MiB and out["sha256"] == dataset["digest"]
    assert out["bytes_fetched"] <= 96 * MiB - out["resumed_from"]  # what it had was not fetched again
    assert not list(state.glob("*.fastresume"))  # a finished fetch leaves no state behind


def test_plaintext_is_refused_when_encryption_is_required(dataset, tmp_path):
    torrent = dataset["root"] / "reads.fastq.torrent"
    with seeding(torrent, dataset["data"], dataset["home"]) as seed:
        proc = labferry("copy", str(torrent), str(tmp_path), "--peer", f"127.0.0.1:{seed.port}", "--encryption", "off",
                        "--stall-timeout", "6", env_home=tmp_path)
        assert_clean_failure(proc, words=("no data arrived", "encryption"))
        assert not (tmp_path / "reads.fastq").exists() or (tmp_path / "reads.fastq").stat().st_blocks == 0
        ok = fetch(torrent, tmp_path / "enc", tmp_path, "--peer", f"127.0.0.1:{seed.port}")  # required, as the seed
    assert ok.returncode == 0, ok.stderr


def test_a_damaged_piece_on_one_seed_is_fetched_from_another(dataset, tmp_path):
    """The fetcher starts with only the damaged seed; the good one comes up later and supplies that piece."""
    torrent = dataset["root"] / "reads.fastq.torrent"
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(dataset["big"], bad / "reads.fastq")
    with open(bad / "reads.fastq", "r+b") as fh:  # flip bytes inside one piece
        fh.seek(40 * MiB + 12345)
        fh.write(b"\xff" * 64)
    good_port = free_port()
    with seeding(torrent, bad, tmp_path / "bad-home", connections=1) as damaged:
        fetcher = popen_labferry("copy", str(torrent), str(tmp_path / "out"), "--peer", f"127.0.0.1:{damaged.port}",
                                 "--peer", f"127.0.0.1:{good_port}", "--connections", "1", "--json",
                                 "--stall-timeout", "30", env_home=tmp_path)
        time.sleep(5)  # everything but the damaged piece has come from the damaged seed by now
        assert fetcher.poll() is None, "the fetch finished without the piece only the damaged seed had"
        proc = popen_labferry("seed", str(torrent), "--data", str(dataset["data"]), "--listen",
                              f"127.0.0.1:{good_port}", "--connections", "1", env_home=tmp_path / "good-home")
        try:
            stdout, stderr = fetcher.communicate(timeout=60)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(15)
    assert fetcher.returncode == 0, stderr
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["sha256"] == dataset["digest"] == sha256_of(tmp_path / "out" / "reads.fastq")
    # found on the seed (never sent) or on arrival (fetched again): either way, named
    assert "does not match the torrent" in damaged.log or any("damaged" in n for n in out["notes"]), \
        (damaged.log, out["notes"])


@pytest.mark.parametrize("source, words", [
    ("garbage", ("not a valid .torrent",)),
    ("magnet:?xt=urn:btih:nothex", ("magnet link",)),
    ("magnet:?dn=nothing", ("magnet link",)),
])
def test_bad_torrents_and_magnets_fail_in_one_sentence(tmp_path, source, words):
    if source == "garbage":
        path = tmp_path / "bad.torrent"
        path.write_bytes(b"d4:infod6:lengthi-5eee")
        source = str(path)
    proc = labferry("copy", source, str(tmp_path / "out"), "--peer", "127.0.0.1:9", env_home=tmp_path)
    assert_clean_failure(proc, 2, words=words)


def test_a_seed_whose_port_is_taken_says_so(dataset, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = labferry("seed", str(dataset["root"] / "reads.fastq.torrent"), "--data", str(dataset["data"]),
                        "--listen", f"127.0.0.1:{port}", "--connections", "1", env_home=tmp_path, timeout=60)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"Could not listen on port {port}" in proc.stderr


def test_a_private_torrents_magnet_says_to_ask_for_the_file(dataset, tmp_path):
    """libtorrent hands a private torrent's metadata to no one: its magnet link ends in a sentence, not a hang."""
    import libtorrent as lt

    torrent = dataset["root"] / "reads.fastq.torrent"
    magnet = lt.make_magnet_uri(lt.torrent_info(str(torrent)))
    with seeding(torrent, dataset["data"], dataset["home"], connections=1) as seed:
        proc = labferry("copy", magnet, f"{tmp_path / 'out'}/", "--peer", f"127.0.0.1:{seed.port}",
                        "--stall-timeout", "5", env_home=tmp_path / "home", timeout=120)
    assert proc.returncode != 0
    assert "Ask for the .torrent file" in proc.stderr and "Traceback" not in proc.stderr


def test_a_seed_that_dies_midway_leaves_no_file_under_its_final_name(dataset, tmp_path):
    """The only seed dies at about 40 %: the pieces stay in the part folder below DEST, which the same command
    resumes; nothing is under the final name (it once was, at full size, with 40 % of the data)."""
    torrent = dataset["root"] / "reads.fastq.torrent"
    with seeding(torrent, dataset["data"], dataset["home"], "--upload-limit", "8M") as seed:
        proc = popen_labferry("copy", str(torrent), str(tmp_path), "--peer", f"127.0.0.1:{seed.port}",
                              "--stall-timeout", "3", "--retries", "0", env_home=tmp_path / "home")
        deadline = time.monotonic() + 60
        part = None
        while time.monotonic() < deadline:
            parts = list(tmp_path.glob(".ferry-torrent-*.part/reads.fastq"))
            if parts and parts[0].stat().st_blocks * 512 >= 38 * MiB:
                part = parts[0]
                break
            time.sleep(0.2)
        assert part is not None, "the pieces never reached 40 %"
        assert not (tmp_path / "reads.fastq").exists()
    _, err = proc.communicate(timeout=60)  # the seed is gone: a stall, in a sentence
    assert proc.returncode == 4, err
    assert not (tmp_path / "reads.fastq").exists() and part.exists()
    with seeding(torrent, dataset["data"], dataset["home"]) as seed:
        again = fetch(torrent, tmp_path, tmp_path / "home", "--peer", f"127.0.0.1:{seed.port}")
    assert again.returncode == 0, again.stderr
    assert result_of(again)["resumed_from"] >= 16 * MiB
    assert sha256_of(tmp_path / "reads.fastq") == dataset["digest"]
    assert not list(tmp_path.glob(".ferry-torrent-*"))


def test_names_in_a_torrent_that_windows_refuses_are_saved_safely_and_said(tmp_path):
    """A torrent made on Linux may name files what?.txt, CON or x:y.txt: saved under names every OS takes, inside
    DEST, each change in a note; the pieces' checks and the sha256 still hold."""
    home, data = tmp_path / "home", tmp_path / "seed"
    home.mkdir()
    (data / "odd").mkdir(parents=True)
    bodies = {"what?.txt": b"q" * 70000, "CON": b"c" * 50000, "x:y.txt": b"x" * 90000, "plain.fq": b"p" * 60000}
    for name, body in bodies.items():
        (data / "odd" / name).write_bytes(body)
    torrent = tmp_path / "odd.torrent"
    made = labferry("torrent", "create", str(data / "odd"), "-o", str(torrent), env_home=home)
    assert made.returncode == 0, made.stderr
    dest = tmp_path / "got"
    dest.mkdir()
    with seeding(torrent, data / "odd", home) as seed:
        proc = fetch(torrent, dest, tmp_path / "fetcher", "--peer", f"127.0.0.1:{seed.port}")
    assert proc.returncode == 0, proc.stderr
    saved = {"what%3F.txt": "what?.txt", "CON_": "CON", "x%3Ay.txt": "x:y.txt", "plain.fq": "plain.fq"}
    assert {p.name: p.read_bytes() for p in (dest / "odd").iterdir()} == {s: bodies[g] for s, g in saved.items()}
    assert "saved under a safe name" in proc.stderr and "'odd/what?.txt' → 'odd/what%3F.txt'" in proc.stderr
    assert not list(dest.glob(".ferry-torrent-*"))


def _made_and_fetched(ct, data: Path, home: Path, tmp_path: Path, name: str):
    """The torrent ``ct`` describes (hashed from ``data``), seeded from ``data/run`` and fetched into ``got``:
    (the fetch's process, the folder); it must end in exit 0 without an internal error."""
    import libtorrent as lt

    lt.set_piece_hashes(ct, str(data))
    torrent = tmp_path / f"{name}.torrent"
    torrent.write_bytes(lt.bencode(ct.generate()))
    dest = tmp_path / "got"
    dest.mkdir()
    with seeding(torrent, data / "run", home) as seed:
        proc = fetch(torrent, dest, tmp_path / "fetcher", "--peer", f"127.0.0.1:{seed.port}")
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    return proc, dest


def test_a_torrent_holding_links_creates_none_and_says_so(tmp_path):
    """A torrent made with libtorrent's ``symlinks`` flag (as a careless or hostile creator may) names a link:
    ``run/latest -> run/sub``. libtorrent would make it inside the part folder; Ferry creates no link below DEST
    and follows none: the files arrive, the link is named in a note, and no part folder is left."""
    import libtorrent as lt

    home, data = tmp_path / "home", tmp_path / "seed"
    home.mkdir()
    (data / "run" / "sub").mkdir(parents=True)
    (data / "run" / "reads.fq").write_bytes(b"r" * 300000)
    (data / "run" / "sub" / "qc.txt").write_bytes(b"q" * 70000)
    (data / "run" / "latest").symlink_to("sub")
    fs = lt.file_storage()
    lt.add_files(fs, str(data / "run"), flags=lt.create_torrent.symlinks)
    ct = lt.create_torrent(fs, 0, lt.create_torrent.v2_only | lt.create_torrent.symlinks)
    ct.set_priv(True)
    proc, dest = _made_and_fetched(ct, data, home, tmp_path, "links")
    got = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file() or p.is_symlink()}
    assert got == {"run/reads.fq": b"r" * 300000, "run/sub/qc.txt": b"q" * 70000}, sorted(got)
    assert "1 link in the torrent was not created" in proc.stderr and "run/latest" in proc.stderr, proc.stderr
    assert not list(dest.glob(".ferry-torrent-*"))


def test_a_torrent_with_pad_files_and_odd_attributes_saves_plain_data_files(tmp_path):
    """A hybrid torrent (v1 and v2, so pad files align each file to a piece) whose creator marked one file
    executable and one hidden (libtorrent's ``x`` and ``h`` attributes): the files arrive byte-exact as plain
    data, nothing runnable is made from a stranger's mark (as browsers and curl do), no pad file or ``.pad``
    folder appears below DEST, and a note says which marks were not applied."""
    import libtorrent as lt

    home, data = tmp_path / "home", tmp_path / "seed"
    home.mkdir()
    (data / "run").mkdir(parents=True)
    bodies = {"run/reads.fq": b"r" * 300000, "run/fix.sh": b"#!/bin/sh\necho owned\n" * 500,
              "run/.hidden.txt": b"h" * 70000}
    for name, body in bodies.items():
        (data / name).write_bytes(body)
    fs = lt.file_storage()
    marks = {"run/fix.sh": lt.file_storage.flag_executable, "run/.hidden.txt": lt.file_storage.flag_hidden}
    for name, body in bodies.items():
        fs.add_file(name, len(body), marks.get(name, 0))
    ct = lt.create_torrent(fs, 16384, 0)  # hybrid: v1 and v2 metadata, with pad files between files
    ct.set_priv(True)
    proc, dest = _made_and_fetched(ct, data, home, tmp_path, "odd")
    info = lt.torrent_info(str(tmp_path / "odd.torrent"))
    layout = info.layout() if hasattr(info, "layout") else info.files()
    assert any(layout.file_flags(i) & lt.file_storage.flag_pad_file for i in range(layout.num_files()))
    got = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if not p.is_dir()}
    assert got == bodies, sorted(got)
    assert not [p for p in dest.rglob("*") if p.is_dir() and p.name != "run"], sorted(dest.rglob("*"))
    assert not (dest / "run" / "fix.sh").stat().st_mode & 0o111
    assert "marked executable" in proc.stderr and "run/fix.sh" in proc.stderr, proc.stderr
