"""``labferry pack`` and ``unpack`` under Debian's Open MPI (``mpirun -np N``), as on a cluster's nodes: rank 0
walks and lays out, every rank writes its share into the one archive, and GNU tar and bsdtar read it back
byte-exact; Ferry's unpack under mpirun restores a tar made by GNU tar. Without mpi4py, a run started by
mpirun is one sentence."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import MiB
from .test_archive import _same, _tree

ROOT = Path(__file__).resolve().parents[2]


def _mpirun(ranks: int, *args: str, home: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.fail("mpirun is not installed; run tests/system-deps.sh (openmpi-bin).", pytrace=False)
    env = dict(os.environ, LABFERRY_HOME=str(home), OMPI_MCA_btl="self,vader,tcp")
    argv = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), sys.executable, "-m", "app", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_packed_by_mpi_ranks_and_read_by_gnu_tar_and_bsdtar(tmp_path, ferry_home, ranks):
    run = _tree(tmp_path / "src")
    (run / "lane1.bam").write_bytes(os.urandom(6 * MiB))
    archive = tmp_path / "run42.tar"
    proc = _mpirun(ranks, "pack", str(run), str(archive), "--piece", "1M", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith("packed ")]
    assert len(said) == 1, proc.stderr  # rank 0 alone speaks
    assert (f"{ranks} ranks" if ranks > 1 else "workers") in said[0], said
    for tool in ("tar", "bsdtar"):
        into = tmp_path / tool
        into.mkdir()
        done = subprocess.run([tool, "-xf", str(archive), "-C", str(into)], capture_output=True)
        assert done.returncode == 0, done.stderr
        _same(run, into / "run42", times=tool == "tar")


@pytest.mark.parametrize("ranks", [2, 3])
def test_unpacked_by_mpi_ranks_from_ferrys_index_and_from_a_gnu_tar(tmp_path, ferry_home, ranks):
    run = _tree(tmp_path / "src")
    (run / "lane1.bam").write_bytes(os.urandom(6 * MiB))
    ours = tmp_path / "ours.tar"
    assert _mpirun(ranks, "pack", str(run), str(ours), "--piece", "1M", home=ferry_home).returncode == 0
    gnu = tmp_path / "gnu.tar"
    subprocess.run(["tar", "--format=pax", "-cf", str(gnu), "-C", str(run.parent), "--exclude", "pipe", "run42"],
                   check=True)
    for archive in (ours, gnu):
        dest = tmp_path / f"out-{archive.stem}"
        proc = _mpirun(ranks, "unpack", str(archive), str(dest), home=ferry_home)
        assert proc.returncode == 0, proc.stderr
        os.rename(dest / "run42" / "caf%E9.tsv", dest / "run42" / os.fsdecode(b"caf\xe9.tsv"))
        _same(run, dest / "run42")


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_zstd_archive_compressed_and_written_by_mpi_ranks(tmp_path, ferry_home, ranks):
    """Every rank compresses its frames and writes them where rank 0 says: ``zstd -d | tar -x`` restores it
    byte-exact, and Ferry's unpack checks every member against the index and seeks with ``--only``."""
    run = _tree(tmp_path / "src")
    (run / "lane1.bam").write_bytes(os.urandom(6 * MiB))  # stored raw
    (run / "calls.vcf").write_bytes(b"chr1\t%d\tA\tG\n" * 300_000 % tuple(range(300_000)))  # compressed
    archive = tmp_path / "run42.tar.zst"
    proc = _mpirun(ranks, "pack", str(run), str(archive), "--piece", "1M", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert f"{ranks} ranks" in proc.stderr and archive.stat().st_size < 5 * MiB + 6 * MiB + MiB  # the VCF shrank
    into = tmp_path / "gnu"
    into.mkdir()
    piped = subprocess.run(f"zstd -dc {archive} | tar -x -C {into}", shell=True, capture_output=True)
    assert piped.returncode == 0, piped.stderr
    _same(run, into / "run42")
    done = subprocess.run([sys.executable, "-m", "app", "unpack", str(archive), str(tmp_path / "ours")],
                          capture_output=True, text=True, env=dict(os.environ, LABFERRY_HOME=str(ferry_home)),
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    os.rename(tmp_path / "ours" / "run42" / "caf%E9.tsv", tmp_path / "ours" / "run42" / os.fsdecode(b"caf\xe9.tsv"))
    _same(run, tmp_path / "ours" / "run42")


def test_started_by_mpirun_without_mpi4py_is_one_sentence(tmp_path, ferry_home):
    (tmp_path / "src").mkdir()
    code = ("import sys; sys.modules['mpi4py'] = None\n"  # as on a node where mpi4py was never installed
            "from app.cli import console; console()")
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home), OMPI_COMM_WORLD_SIZE="2")
    proc = subprocess.run([sys.executable, "-c", code, "pack", str(tmp_path / "src"), str(tmp_path / "a.tar")],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "mpi4py is not installed" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "a.tar").exists()


def test_a_pack_under_mpirun_stopped_by_sigterm_goes_on_under_other_ranks(tmp_path, ferry_home):
    """As a Slurm time limit does: SIGTERM to every rank once rank 0's record holds some pieces; the part file
    and its record stay, and the same command under 3 ranks instead of 2 writes only the rest, byte-exact."""
    import json
    import signal
    import time

    run = tmp_path / "src" / "run42"
    for i in range(100_000):  # small files: read and written by the ranks themselves, not copied by the kernel
        folder = run / f"s{i % 1000:03d}"
        if i < 1000:
            folder.mkdir(parents=True)
        (folder / f"f{i:05d}.vcf").write_bytes(b"%d\n" % i * 200)
    archive = tmp_path / "run42.tar"
    record = Path(f"{archive}.part.ferry")
    mpirun = shutil.which("mpirun")
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home), OMPI_MCA_btl="self,vader,tcp")
    args = ["pack", str(run), str(archive)]
    proc = subprocess.Popen([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable, "-m",
                             "app", *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if len(json.loads(record.read_text())["done"]) >= 2000:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    ranks = _ranks_of(str(archive))
    for pid in ranks:  # held still, so the SIGTERM finds them mid-way however fast this machine packs
        os.kill(pid, signal.SIGSTOP)
    for pid in ranks:  # as slurmd ends a step at its time limit: every task gets SIGTERM itself
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and not archive.exists(), err
    assert err.count("stopped (SIGTERM)") <= 1 and "Traceback" not in err, err  # rank 0 alone speaks
    kept = len(json.loads(record.read_text())["done"])
    assert 2000 <= kept < 100_000 + 1000, kept
    again = _mpirun(3, *args, home=ferry_home)
    assert again.returncode == 0, again.stderr
    assert "went on from" in again.stderr, again.stderr
    compared = subprocess.run(["tar", "-df", str(archive), "-C", str(run.parent), "--exclude", ".labferry-index"],
                              capture_output=True, text=True)
    assert compared.returncode == 0 and not compared.stdout, compared  # GNU tar compares bytes, modes and times


def _ranks_of(archive: str) -> list[int]:
    """The pids of the ranks packing ``archive`` (mpirun's children running ``-m app``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"app" in argv and archive.encode() in argv and b"mpirun" not in argv[0]:
            found.append(int(entry.name))
    assert len(found) == 2, found
    return found


def test_a_stopped_mpirun_takes_its_ranks_with_it(tmp_path, ferry_home):
    """A suspended job cancelled (Slurm's ``scontrol suspend`` stops the ranks, ``scancel`` sends SIGTERM, the
    ranks go on): mpirun and every rank end within seconds. A rank blocked in a collective is in MPI's C code,
    where Python's handler never runs: before, such ranks ran on at full CPU under an mpirun that waited for them
    (seen here for an hour)."""
    import signal
    import time

    run = tmp_path / "src" / "run42"
    for i in range(60_000):
        folder = run / f"s{i % 600:03d}"
        if i < 600:
            folder.mkdir(parents=True)
        (folder / f"f{i:05d}.vcf").write_bytes(b"%d\n" % i * 100)
    archive = tmp_path / "run42.tar"
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home), OMPI_MCA_btl="self,vader,tcp")
    proc = subprocess.Popen([shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe", "-np", "2",
                             sys.executable, "-m", "app", "pack", str(run), str(archive)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not Path(f"{archive}.part").exists():
        time.sleep(0.05)
    ranks = _ranks_of(str(archive))
    for pid in ranks:
        os.kill(pid, signal.SIGSTOP)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    for pid in ranks:
        with contextlib.suppress(ProcessLookupError):  # a rank the SIGTERM ended already
            os.kill(pid, signal.SIGCONT)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (proc.poll() is None or any(Path(f"/proc/{p}").exists() for p in ranks)):
        time.sleep(0.1)
    alive = [pid for pid in ranks if Path(f"/proc/{pid}").exists()]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    ended = proc.poll() is not None
    if not ended:
        proc.kill()
    proc.wait(timeout=30)
    assert ended and not alive, f"mpirun ended: {ended}; ranks {alive} still ran 10 s after SIGTERM"
