"""--compress: simulated Illumina reads over a real sshd whose zstd packs and unpacks each range.

Besides the suite's sshd, two servers of this module's own: one whose sessions find no zstd (its PATH lacks
it), and one whose zstd damages its first frame each way (a wrapper ahead of the real one on its PATH), as a
flaky disk or memory would.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.genomic import simulate

from .conftest import MiB, kill_after_progress, labferry, popen_labferry, sha256_of, write_random

READS_BYTES = 48 * MiB  # above --compress auto's 32 MiB floor; ~1.5 s of art_illumina


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def copied(proc) -> dict:
    """The JSON result of a copy that must have succeeded."""
    assert proc.returncode == 0, proc.stderr
    return result_of(proc)


@pytest.fixture(scope="module")
def reads(tmp_path_factory):
    return simulate(tmp_path_factory.mktemp("reads"), READS_BYTES)


def _serve(server, local: Path, name: str | None = None) -> Path:
    """A copy of ``local`` in the server user's home."""
    there = server.home / (name or local.name)
    shutil.copyfile(local, there)
    server.give(there)
    return there


def _folder(server, name: str) -> Path:
    folder = server.home / name
    folder.mkdir(exist_ok=True)
    server.give(folder)
    return folder


def _bin_without(folder: Path, missing: str) -> Path:
    """A folder of links to every program in /usr/bin but ``missing``: a server's PATH without it."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in Path("/usr/bin").iterdir():
        if tool.name != missing and not (folder / tool.name).exists():
            (folder / tool.name).symlink_to(tool)
    os.chmod(folder, 0o755)
    return folder


FAULTY_ZSTD = """#!/bin/sh
# a zstd that damages one byte of its first frame each way: packing (a download's range) and unpacking (an upload's)
marks={marks}
flip() {{ python3 -c 'import sys; d = bytearray(sys.stdin.buffer.read()); d[len(d) // 2] ^= 0x5a
sys.stdout.buffer.write(d)'; }}
case " $* " in
  *" -d"*) if mkdir "$marks/unpack" 2>/dev/null; then flip | /usr/bin/zstd "$@"; exit $?; fi ;;
  *) if mkdir "$marks/pack" 2>/dev/null; then /usr/bin/zstd "$@" | flip; exit $?; fi ;;
esac
exec /usr/bin/zstd "$@"
"""


@pytest.fixture(scope="module")
def odd_servers(tmp_path_factory, sshd):
    """(a server without zstd, a server whose zstd damages its first frames, the folder of its marks)."""
    from tests.servers.sshd import Sshd

    root = tmp_path_factory.mktemp("zstd-servers")
    os.chmod(root, 0o755)
    plain = _bin_without(root / "no-zstd-bin", "zstd")
    faulty_bin = root / "faulty-bin"
    faulty_bin.mkdir()
    marks = root / "marks"
    marks.mkdir()
    os.chmod(marks, 0o777)
    (faulty_bin / "zstd").write_text(FAULTY_ZSTD.format(marks=marks))
    os.chmod(faulty_bin / "zstd", 0o755)
    os.chmod(faulty_bin, 0o755)
    without = Sshd(root / "without", user=sshd.user, client_key=sshd.key, env_path=str(plain)).start()
    faulty = Sshd(root / "faulty", user=sshd.user, client_key=sshd.key,
                  env_path=f"{faulty_bin}:/usr/local/bin:/usr/bin:/bin").start()
    for server in (without, faulty):
        server.give(server.home)
    yield without, faulty, marks
    without.stop()
    faulty.stop()


@pytest.mark.parametrize("kind", ["fastq", "sam"])
def test_reads_travel_compressed_both_ways_and_arrive_exact(sshd, reads, tmp_path, ferry_home, kind):
    """The default (auto) samples the file, finds it shrinks ~3×, and sends every range as a zstd frame."""
    local = reads.fastq if kind == "fastq" else reads.sam
    remote = _serve(sshd, local, f"c-{local.name}")
    down = labferry("copy", sshd.url(str(remote)), str(tmp_path / local.name), *sshd.args(), "--streams", "4",
                    "--json", env_home=ferry_home)
    out = copied(down)
    assert sha256_of(tmp_path / local.name) == sha256_of(local) == out["sha256"] and out["verified"] is True
    assert out["bytes_on_wire"] < out["bytes"] / 2, out
    assert "travelled compressed" in down.stderr and any(n.startswith("Compressed on the wire") for n in out["notes"])

    folder = _folder(sshd, f"up-{kind}")
    up = labferry("copy", str(local), sshd.url(str(folder)) + "/", *sshd.args(), "--streams", "4", "--json",
                  env_home=ferry_home)
    out = copied(up)
    assert sha256_of(folder / local.name) == sha256_of(local) and out["verified"] is True
    assert "every range" in out["verify_method"]  # each frame unpacked, read back and hashed by the server
    assert out["bytes_on_wire"] < out["bytes"] / 2, out


def test_gzipped_reads_are_sent_as_they_are_unless_asked(sshd, reads, tmp_path, ferry_home):
    gz = _serve(sshd, reads.gzipped())
    auto = labferry("copy", sshd.url(str(gz)), str(tmp_path / "auto.fq.gz"), *sshd.args(), "--json",
                    env_home=ferry_home)
    assert auto.returncode == 0, auto.stderr
    assert result_of(auto)["bytes_on_wire"] is None
    if gz.stat().st_size >= 32 * MiB:
        assert "its type is compressed already" in auto.stderr
    forced = labferry("copy", sshd.url(str(gz)), str(tmp_path / "forced.fq.gz"), *sshd.args(), "--compress", "zstd",
                      "--json", env_home=ferry_home)
    out = copied(forced)
    assert out["bytes_on_wire"] is not None and out["bytes_on_wire"] > out["bytes"] * 0.95  # gzip does not shrink
    assert sha256_of(tmp_path / "forced.fq.gz") == sha256_of(reads.gzipped())


def test_data_that_does_not_shrink_is_sampled_and_sent_plain(sshd, tmp_path, ferry_home):
    local = tmp_path / "noise.bin"
    write_random(local, 40 * MiB, seed=71)
    folder = _folder(sshd, "noise")
    up = labferry("copy", str(local), sshd.url(str(folder)) + "/", *sshd.args(), "--json", env_home=ferry_home)
    assert up.returncode == 0, up.stderr
    assert result_of(up)["bytes_on_wire"] is None
    assert "shrank only 1.00×" in up.stderr
    off = labferry("copy", str(local), sshd.url(str(folder)) + "/", *sshd.args(), "--compress", "off",
                   "--overwrite", "--json", env_home=ferry_home)
    assert off.returncode == 0 and "zstd" not in off.stderr


def test_a_server_without_zstd_says_so_and_the_copy_goes_on(odd_servers, reads, tmp_path, ferry_home):
    without, _, _ = odd_servers
    remote = _serve(without, reads.fastq)
    proc = labferry("copy", without.url(str(remote)), str(tmp_path / "reads.fq"), *without.args(), "--compress",
                    "zstd", "--json", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "went uncompressed: the server has no zstd command and no Ferry (labferry)" in proc.stderr
    assert result_of(proc)["bytes_on_wire"] is None
    assert sha256_of(tmp_path / "reads.fq") == sha256_of(reads.fastq)
    folder = _folder(without, "up")
    up = labferry("copy", str(reads.fastq), without.url(str(folder)) + "/", *without.args(), "--json",
                  env_home=ferry_home)
    assert up.returncode == 0, up.stderr
    assert "the server has no zstd command" in up.stderr and sha256_of(folder / "reads.fq") == sha256_of(reads.fastq)


@pytest.fixture(scope="module")
def ferry_server(tmp_path_factory):
    """A server with Ferry (``labferry`` on its PATH, as on a DTN with the agent installed) and no zstd command."""
    import getpass

    from tests.servers.agent import ferry_command
    from tests.servers.sshd import Sshd

    root = tmp_path_factory.mktemp("ferry-no-zstd")
    os.chmod(root, 0o755)
    folder = _bin_without(root / "bin", "zstd")
    ferry_command(folder / "labferry", root / "ferry-home")
    server = Sshd(root / "sshd", user=getpass.getuser(), env_path=str(folder)).start()
    yield server
    server.stop()


def test_a_server_with_ferry_and_no_zstd_compresses_with_ferry(ferry_server, reads, tmp_path, ferry_home):
    """Ranges, and a folder's small files in a tar stream, packed and unpacked there by ``labferry zstd``."""
    remote = _serve(ferry_server, reads.fastq)
    proc = labferry("copy", ferry_server.url(str(remote)), str(tmp_path / "reads.fq"), *ferry_server.args(),
                    "--streams", "2", "--json", env_home=ferry_home)
    down = copied(proc)
    assert "its Ferry (labferry zstd, the zstandard package) did the work there" in proc.stderr
    # frames came from the server's Ferry; how many depends on how soon its Python answered the sample (a
    # loaded machine can take longer than compression.DECIDE_WAIT, and the first ranges then go plain)
    assert down["bytes_on_wire"] < down["bytes"] and sha256_of(tmp_path / "reads.fq") == sha256_of(reads.fastq)
    chunks = tmp_path / "chunks"
    chunks.mkdir()
    for index in range(12):  # 12 small files: one compressed tar stream
        shutil.copyfile(reads.fastq, chunks / f"c{index}.fq")
        with open(chunks / f"c{index}.fq", "r+b") as fh:
            fh.truncate(3 * MiB)
    target = _folder(ferry_server, "up")
    up = copied(labferry("copy", str(chunks), ferry_server.url(str(target)) + "/", *ferry_server.args(),
                         "--compress", "zstd", "--json", env_home=ferry_home))
    assert up["bytes_on_wire"] < up["bytes"] / 2, up
    for index in range(12):
        assert sha256_of(target / "chunks" / f"c{index}.fq") == sha256_of(chunks / f"c{index}.fq")


def test_a_damaged_frame_is_caught_and_its_range_moved_again(odd_servers, reads, tmp_path, ferry_home):
    """The server's zstd damages the first frame it packs (a download) and the first it unpacks (an upload)."""
    _, faulty, marks = odd_servers
    remote, folder = _serve(faulty, reads.fastq), _folder(faulty, "up")
    cases = [  # (source, destination, the mark the fault leaves, where the file lands)
        (faulty.url(str(remote)), str(tmp_path / "reads.fq"), marks / "pack", tmp_path / "reads.fq"),
        (str(reads.fastq), faulty.url(str(folder)) + "/", marks / "unpack", folder / "reads.fq"),
    ]
    for source, dest, mark, landed in cases:
        out = copied(labferry("copy", source, dest, *faulty.args(), "--compress", "zstd", "--streams", "2", "--json",
                              env_home=ferry_home))
        assert mark.is_dir(), f"the server's zstd did not damage a frame ({mark.name})"
        assert sha256_of(landed) == sha256_of(reads.fastq) and out["verified"] is True
        assert out["bytes_fetched"] > out["bytes"], f"the damaged range was not moved again ({mark.name})"


def test_a_compressed_download_resumes_after_sigkill(sshd, reads, tmp_path, ferry_home):
    remote = _serve(sshd, reads.fastq, "resume.fq")
    dest = tmp_path / "resume.fq"
    args = ("copy", sshd.url(str(remote)), str(dest), *sshd.args(), "--streams", "2", "--compress", "zstd", "--json")
    proc = popen_labferry(*args, "--limit-rate", "4M", env_home=ferry_home)  # wire bytes: ~12 MB/s delivered
    done = kill_after_progress(proc, tmp_path / "resume.fq.part.ferry", 16 * MiB)
    assert done >= 16 * MiB and not dest.exists()
    second = labferry(*args, env_home=ferry_home, timeout=180)
    out = copied(second)
    assert out["resumed_from"] >= 16 * MiB and out["bytes_on_wire"] < (out["bytes"] - out["resumed_from"]) / 2
    assert sha256_of(dest) == sha256_of(reads.fastq)


def test_a_folders_big_reads_travel_compressed_both_ways(sshd, reads, tmp_path, ferry_home):
    """A run folder: the FASTQ by ranges as zstd frames, the small files in a tar stream as they are."""
    run = tmp_path / "run1"
    (run / "logs").mkdir(parents=True)
    shutil.copyfile(reads.fastq, run / "sample_R1.fastq")
    for i in range(20):
        (run / "logs" / f"lane{i}.txt").write_text(f"lane {i}\n" * 50)
    folder = _folder(sshd, "runs")
    up = labferry("copy", str(run), sshd.url(str(folder)) + "/", *sshd.args(), "--json", env_home=ferry_home)
    out = copied(up)
    assert out["verified"] is True and out["bytes_on_wire"] < out["bytes"] / 2, out
    assert sha256_of(folder / "run1" / "sample_R1.fastq") == sha256_of(reads.fastq)
    assert (folder / "run1" / "logs" / "lane7.txt").read_text() == "lane 7\n" * 50
    down = labferry("copy", sshd.url(str(folder / "run1")), str(tmp_path / "back"), *sshd.args(), "--json",
                    env_home=ferry_home)
    out = copied(down)
    assert out["verified"] is True and out["bytes_on_wire"] < out["bytes"] / 2, out
    assert sha256_of(tmp_path / "back" / "sample_R1.fastq") == sha256_of(reads.fastq)
    assert len(list((tmp_path / "back" / "logs").iterdir())) == 20


def test_a_folder_of_small_reads_goes_in_compressed_tar_streams_both_ways(sshd, reads, tmp_path, ferry_home):
    """24 chunks of 2 MiB (each below the 4 MiB that goes by ranges): tar streams as zstd frames, auto."""
    run = tmp_path / "amplicons"
    run.mkdir()
    data = reads.fastq.read_bytes()
    chunk = 2 * MiB
    for i in range(24):
        (run / f"amp{i:02d}.fastq").write_bytes(data[i * chunk:(i + 1) * chunk])
    folder = _folder(sshd, "small-up")
    up = labferry("copy", str(run), sshd.url(str(folder)) + "/", *sshd.args(), "--json", env_home=ferry_home)
    out = copied(up)
    assert "small files travelled compressed" in up.stderr and out["verified"] is True
    assert out["bytes_on_wire"] < out["bytes"] / 2, out
    assert all(sha256_of(folder / "amplicons" / p.name) == sha256_of(p) for p in run.iterdir())
    down = labferry("copy", sshd.url(str(folder / "amplicons")), str(tmp_path / "back"), *sshd.args(), "--json",
                    env_home=ferry_home)
    out = copied(down)
    assert "small files travelled compressed" in down.stderr and out["verified"] is True
    assert out["bytes_on_wire"] < out["bytes"] / 2, out
    assert all(sha256_of(tmp_path / "back" / p.name) == sha256_of(p) for p in run.iterdir())
