"""``labferry pack``, ``ls`` and ``unpack`` as a user runs them, against GNU tar and bsdtar in both directions.

A run folder with what real ones hold (nested folders, an empty one, modes, nanosecond times, a name over 100
bytes, a name that is not UTF-8, a symbolic and a hard link, a FIFO) goes through Ferry's workers and comes out
byte-exact from the other tools, and theirs from Ferry. Then what goes wrong: a corrupted or cut archive, a
hostile one, a file that grows while it is packed, and ``--only`` reading almost nothing of a large archive.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from .conftest import MiB, labferry

LONG = "sample_" + "x" * 120 + ".vcf.gz"


def _tree(root: Path) -> Path:
    """A small run folder with every odd case; a 5 MiB BAM so ``--piece 1M`` cuts it into pieces."""
    run = root / "run42"
    (run / "vcf" / "chr1").mkdir(parents=True)
    (run / "empty").mkdir()
    for i in range(40):
        (run / "vcf" / "chr1" / f"s{i}.vcf").write_bytes(os.urandom(100 + 37 * i))
    (run / "big.bam").write_bytes(os.urandom(5 * MiB + 123))
    (run / "vcf" / LONG).write_bytes(b"long name")
    (run / os.fsdecode(b"caf\xe9.tsv")).write_bytes(b"latin-1 name")
    os.chmod(run / "vcf" / "chr1" / "s3.vcf", 0o600)
    os.chmod(run / "big.bam", 0o755)
    os.symlink("vcf/chr1/s1.vcf", run / "latest.vcf")
    os.link(run / "vcf" / "chr1" / "s2.vcf", run / "hard.vcf")
    os.mkfifo(run / "pipe")
    os.utime(run / "vcf" / "chr1" / "s5.vcf", ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    return run


def _same(a: Path, b: Path, *, times: bool = True, skip: tuple[str, ...] = ("pipe",)) -> None:
    """Every entry below ``a`` is below ``b`` with the same kind, bytes, mode, link and time (to the ns)."""
    for path in sorted(a.rglob("*")):
        rel = path.relative_to(a)
        if rel.name in skip:
            assert not os.path.lexists(b / rel), rel
            continue
        there = b / rel
        sa, sb = os.lstat(path), os.lstat(there)
        assert stat.S_IFMT(sa.st_mode) == stat.S_IFMT(sb.st_mode), rel
        assert stat.S_IMODE(sa.st_mode) == stat.S_IMODE(sb.st_mode), rel
        if stat.S_ISLNK(sa.st_mode):
            assert os.readlink(path) == os.readlink(there), rel
        elif stat.S_ISREG(sa.st_mode):
            assert path.read_bytes() == there.read_bytes(), rel
            if times:
                assert sa.st_mtime_ns == sb.st_mtime_ns, rel
    assert os.stat(b / "hard.vcf").st_ino == os.stat(b / "vcf" / "chr1" / "s2.vcf").st_ino


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_ferrys_archive_opens_byte_exact_in_gnu_tar_and_bsdtar(tmp_path, ferry_home, workers):
    run = _tree(tmp_path / "src")
    archive = tmp_path / "run42.tar"
    proc = labferry("pack", str(run), str(archive), "--workers", str(workers), "--piece", "1M", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "pipe is a FIFO" in proc.stderr and "left out" in proc.stderr
    out = json.loads(proc.stdout)
    assert out["workers"] == workers and out["size"] == archive.stat().st_size
    assert not Path(f"{archive}.part").exists()
    for tool in (["tar", "-xf"], ["bsdtar", "-xf"]):
        into = tmp_path / tool[0]
        into.mkdir()
        done = subprocess.run([*tool, str(archive), "-C", str(into)], capture_output=True)
        assert done.returncode == 0, done.stderr
        _same(run, into / "run42", times=tool[0] == "tar")
    listed = subprocess.run(["tar", "-tf", str(archive)], capture_output=True, text=True).stdout.splitlines()
    assert listed[-1] == ".labferry-index" and f"run42/vcf/{LONG}" in listed


@pytest.mark.parametrize("tool", ["tar", "bsdtar"])
def test_an_archive_made_by_another_tool_unpacks_with_one_scan(tmp_path, ferry_home, tool):
    run = _tree(tmp_path / "src")
    archive = tmp_path / f"{tool}.tar"
    pax = ["--format=pax"] if tool == "tar" else []  # GNU tar's own format keeps whole seconds only
    made = subprocess.run([tool, *pax, "-cf", str(archive), "-C", str(run.parent), "--exclude", "pipe", "run42"],
                          capture_output=True)
    assert made.returncode == 0, made.stderr
    dest = tmp_path / "out"
    proc = labferry("unpack", str(archive), str(dest), "--workers", "2", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "has no index" in proc.stderr
    os.rename(dest / "run42" / "caf%E9.tsv", dest / "run42" / os.fsdecode(b"caf\xe9.tsv"))  # renamed, and said
    assert "caf%E9.tsv" in proc.stderr
    _same(run, dest / "run42", times=tool == "tar")


def test_ls_and_only_read_the_index_and_the_member_not_the_archive(tmp_path, ferry_home):
    """``--only`` one small file of a 96 MiB archive reads less than 1 % of it (``/proc/self/io``)."""
    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    for i in range(3):
        (src / f"lane{i}.bam").write_bytes(os.urandom(32 * MiB))
    for i in range(500):
        (src / f"qc{i:03d}.txt").write_text(f"sample {i}\n")
    archive = tmp_path / "run.tar"
    assert labferry("pack", str(src), str(archive), "-q", env_home=ferry_home).returncode == 0
    listed = labferry("ls", str(archive), "--json", env_home=ferry_home)
    assert listed.returncode == 0, listed.stderr
    names = [json.loads(line)["name"] for line in listed.stdout.splitlines()]
    assert "run/qc123.txt" in names and len(names) == 1 + 3 + 500
    read, restored = _bytes_read_by_only(archive, tmp_path / "one", "run/qc123.txt")
    assert restored == 1 and (tmp_path / "one" / "run" / "qc123.txt").read_text() == "sample 123\n"
    assert read < archive.stat().st_size / 100, f"read {read:,} of {archive.stat().st_size:,} bytes"


def test_a_small_member_costs_few_system_calls_and_never_goes_through_a_planted_link(tmp_path, ferry_home):
    """Unpacking a million small files is the kernel's work: each member is made, written, given its mode and
    time on the open file, closed, its final name checked, renamed, and the name looked at again (the file there
    must be the one written: ``write_whole``). Counted with ``strace -c`` beyond those of ``labferry ls`` of the
    same archive (start-up, index): 7.1 a member, 9.0 before.
    Then a second process's links at a member's name and at its part name: nothing is written through either."""
    src = tmp_path / "src" / "run"
    for i in range(3000):
        folder = src / f"s{i // 300}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.vcf").write_bytes(os.urandom(100 + i % 900))
    archive = tmp_path / "run.tar"
    assert labferry("pack", str(src), str(archive), "-q", env_home=ferry_home).returncode == 0

    def calls(*args: str) -> int:
        counts = tmp_path / "strace.txt"
        env = dict(os.environ, LABFERRY_HOME=str(ferry_home))
        proc = subprocess.run(["strace", "-f", "-c", "-o", str(counts), sys.executable, "-m", "app", *args],
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return int(counts.read_text().strip().splitlines()[-1].split()[3])  # % time, seconds, usecs/call, calls

    each = (calls("unpack", str(archive), str(tmp_path / "out"), "--workers", "1") - calls("ls", str(archive))) / 3000
    assert each <= 7.5, f"{each:.1f} system calls a member beyond those of ls"  # 9.0 before write_whole
    for path in src.rglob("*.vcf"):
        there = tmp_path / "out" / "run" / path.relative_to(src)
        assert there.read_bytes() == path.read_bytes() and there.stat().st_mtime_ns == path.stat().st_mtime_ns
        assert stat.S_IMODE(there.stat().st_mode) == stat.S_IMODE(path.stat().st_mode)

    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    dest = tmp_path / "planted" / "run" / "s3"
    dest.mkdir(parents=True)
    os.symlink(outside, dest / "f901.vcf")
    os.symlink(outside, dest / "f902.vcf.part")
    for planted in ("f901.vcf", "f902.vcf.part"):
        proc = labferry("unpack", str(archive), str(tmp_path / "planted"), "--workers", "2", env_home=ferry_home)
        assert proc.returncode != 0 and "link" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert planted in proc.stderr, proc.stderr
        assert outside.read_text() == "not yours" and os.path.islink(dest / planted)
        os.unlink(dest / planted)


def _bytes_read_by_only(archive: Path, dest: Path, member: str) -> tuple[int, int]:
    """``unpack --only member`` in a process of its own: the bytes it read (``rchar`` of /proc/self/io, the
    interpreter's start-up left out) and the members it restored."""
    code = (
        "from pathlib import Path; from backends.archive.download import unpack\n"
        "def io():\n"
        "    return dict(l.split(': ') for l in Path('/proc/self/io').read_text().splitlines())\n"
        "before = int(io()['rchar'])\n"
        f"done = unpack(Path({str(archive)!r}), Path({str(dest)!r}), only=[{member!r}], workers_asked=1)\n"
        "print(int(io()['rchar']) - before, done.restored)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    read, restored = map(int, proc.stdout.split())
    return read, restored


def test_a_corrupted_member_is_refused_and_the_rest_restored(tmp_path, ferry_home):
    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    for i in range(20):
        (src / f"s{i:02d}.vcf").write_bytes(os.urandom(4096))
    archive = tmp_path / "run.tar"
    assert labferry("pack", str(src), str(archive), "-q", env_home=ferry_home).returncode == 0
    listing = [json.loads(x) for x in labferry("ls", str(archive), "--json", env_home=ferry_home).stdout.split("\n")
               if x]
    victim = next(x for x in listing if x["name"] == "run/s07.vcf")
    with open(archive, "r+b") as f:
        f.seek(victim["offset"] + 100)
        f.write(b"\0garbage\0")
    proc = labferry("unpack", str(archive), str(tmp_path / "out"), env_home=ferry_home)
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr and "run/s07.vcf" in last and "19 others were restored" in last, last
    assert not (tmp_path / "out" / "run" / "s07.vcf").exists()
    assert not list((tmp_path / "out").rglob("*.part"))
    assert (tmp_path / "out" / "run" / "s08.vcf").read_bytes() == (src / "s08.vcf").read_bytes()


def test_a_cut_archive_gives_what_it_holds_and_says_the_rest_is_missing(tmp_path, ferry_home):
    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    for i in range(10):
        (src / f"s{i}.bin").write_bytes(os.urandom(1 * MiB))
    archive = tmp_path / "run.tar"
    assert labferry("pack", str(src), str(archive), "-q", env_home=ferry_home).returncode == 0
    os.truncate(archive, int(4.5 * MiB))
    proc = labferry("unpack", str(archive), str(tmp_path / "out"), env_home=ferry_home)
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "ends at byte" in last and "4 others were restored" in last, last
    kept = sorted(p.name for p in (tmp_path / "out" / "run").iterdir())
    assert len(kept) == 4 and all((src / n).read_bytes() == (tmp_path / "out" / "run" / n).read_bytes() for n in kept)
    assert not list((tmp_path / "out").rglob("*.part"))


def _hostile(path: Path) -> None:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, link in (("../escape.txt", tarfile.REGTYPE, ""), ("/abs/escape.txt", tarfile.REGTYPE, ""),
                                 ("run/etc", tarfile.SYMTYPE, "/etc"), ("run/up", tarfile.SYMTYPE, "../.."),
                                 ("run/up/through.txt", tarfile.REGTYPE, ""),
                                 ("run/hard", tarfile.LNKTYPE, "/etc/passwd"), ("run/ok.txt", tarfile.REGTYPE, "")):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = kind, link, time.time()
            data = f"from {name}\n".encode() if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_a_hostile_archive_writes_nothing_outside_dest(tmp_path, ferry_home):
    archive = tmp_path / "evil.tar"
    _hostile(archive)
    dest = tmp_path / "box" / "dest"
    dest.mkdir(parents=True)
    proc = labferry("unpack", str(archive), str(dest), env_home=ferry_home)
    assert "Traceback" not in proc.stderr
    outside = [p for p in (tmp_path / "box").rglob("*") if dest not in p.parents and p != dest]
    assert outside == [] and not (tmp_path / "escape.txt").exists() and not Path("/abs/escape.txt").exists()
    assert (dest / "run" / "ok.txt").read_text() == "from run/ok.txt\n"
    assert not os.path.lexists(dest / "run" / "etc") and not os.path.lexists(dest / "run" / "hard")
    assert "outside the destination" in proc.stderr and "not a file restored below" in proc.stderr
    for path in dest.rglob("*"):
        assert not path.is_symlink() or not os.path.isabs(os.readlink(path)), path


def forged(path: Path, lines: list[str]) -> Path:
    """A tar with one file and an index whose own checksum is right but whose lines are not what Ferry writes:
    the checksum guards against damage, not against whoever made the archive."""
    from backends.archive import index

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("run/a.txt")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"hello\n"))
        body = index.encode(lines, buf.tell() + 512)
        info = tarfile.TarInfo(index.INDEX_NAME)
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    path.write_bytes(buf.getvalue())
    return path


GOOD_LINE = '{"n": "run/a.txt", "k": "file", "o": 0, "d": 512, "s": 6, "m": 420, "t": 0}'


@pytest.mark.parametrize("lines", [["5\n"], ['{"x": 1}\n'], ['{"n": \n'], [GOOD_LINE.replace("6", '"6"') + "\n"],
                                   [GOOD_LINE + ", {}\n"]],
                         ids=["a number", "no fields", "not JSON", "a size as text", "two objects"])
def test_an_index_that_is_not_ferrys_is_one_sentence_and_scan_still_unpacks(tmp_path, ferry_home, lines):
    archive = forged(tmp_path / "forged.tar", lines)
    for args in (("ls", str(archive)), ("unpack", str(archive), str(tmp_path / "out"))):
        proc = labferry(*args, env_home=ferry_home)
        assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stderr
        assert "index line 2 is not one Ferry writes" in proc.stderr and "--scan" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.part"))
    scanned = labferry("unpack", str(archive), str(tmp_path / "scanned"), "--scan", env_home=ferry_home)
    assert scanned.returncode == 0, scanned.stderr
    assert (tmp_path / "scanned" / "run" / "a.txt").read_bytes() == b"hello\n"


def test_a_file_that_grows_while_it_is_packed_stops_the_pack_and_leaves_no_archive(tmp_path, ferry_home):
    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    growing = src / "growing.log"
    growing.write_bytes(os.urandom(64 * MiB))
    writer = subprocess.Popen([sys.executable, "-c", (
        "import time,sys\n"
        f"f = open({str(growing)!r}, 'ab', buffering=0)\n"
        "end = time.monotonic() + 60\n"
        "while time.monotonic() < end:\n"
        "    f.write(b'x' * 4096); time.sleep(0.001)\n")])
    try:
        time.sleep(0.3)
        archive = tmp_path / "run.tar"
        proc = labferry("pack", str(src), str(archive), "--piece", "8M", env_home=ferry_home)
    finally:
        writer.kill()
        writer.wait()
    assert proc.returncode == 5, proc.stderr
    assert "changed while it was packed" in proc.stderr and "Traceback" not in proc.stderr
    assert not archive.exists()


def test_bad_input_is_one_sentence_with_its_status(tmp_path, ferry_home):
    for args, status, words in ((["pack", str(tmp_path / "missing"), str(tmp_path / "a.tar")], 2, "does not exist"),
                                (["pack", str(tmp_path), str(tmp_path / "a.tar"), "--workers", "0"], 2, "--workers"),
                                (["unpack", str(tmp_path / "none.tar"), str(tmp_path / "d")], 2, "cannot open")):
        proc = labferry(*args, env_home=ferry_home)
        assert proc.returncode == status, (args, proc.stderr)
        assert words in proc.stderr and "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    (tmp_path / "not.tar").write_bytes(os.urandom(10_000))
    proc = labferry("unpack", str(tmp_path / "not.tar"), str(tmp_path / "d"), env_home=ferry_home)
    assert proc.returncode == 6 and "not a tar archive" in proc.stderr, proc.stderr


def test_ctrl_c_keeps_the_part_and_the_same_command_goes_on(tmp_path, ferry_home):
    """Ctrl-C mid-pack: exit 130, ``NAME.tar.part`` and its record kept, one sentence saying so; the same
    command then writes only what was missing, and GNU tar reads the result byte-exact."""
    import signal

    src = tmp_path / "src" / "run"
    src.mkdir(parents=True)
    for i in range(4):
        with open(src / f"lane{i}.bam", "wb") as f:
            for _ in range(24):
                f.write(os.urandom(16 * MiB))
    for i in range(200):
        (src / f"qc{i}.txt").write_text(f"{i}\n" * 50)
    archive = tmp_path / "run.tar"
    env = dict(os.environ, LABFERRY_HOME=str(ferry_home))
    proc = subprocess.Popen([sys.executable, "-m", "app", "pack", str(src), str(archive), "--workers", "2",
                             "--piece", "16M"], stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "run the same command to go on" in err, err
    assert Path(f"{archive}.part").exists() and Path(f"{archive}.part.ferry").exists() and not archive.exists()
    again = labferry("pack", str(src), str(archive), "--workers", "2", "--piece", "16M", env_home=ferry_home)
    assert again.returncode == 0, again.stderr
    assert "went on from" in again.stderr, again.stderr
    assert not Path(f"{archive}.part").exists() and not Path(f"{archive}.part.ferry").exists()
    out = tmp_path / "x"
    out.mkdir()
    assert subprocess.run(["tar", "-xf", str(archive), "-C", str(out)]).returncode == 0
    for path in src.iterdir():
        assert path.read_bytes() == (out / "run" / path.name).read_bytes(), path.name


def test_a_zstd_archive_is_seekable_parallel_and_opens_with_zstd_and_tar(tmp_path, ferry_home):
    """``--compress zstd`` (or a name ending .zst): zstd's seekable format. ``zstd -d | tar -x`` restores it
    byte-exact; Ferry unpacks it with workers; ``--only`` decodes a frame or two, not the archive; a BAM (already
    compressed) is stored as it is, while text shrinks."""
    run = _tree(tmp_path / "src")
    for i in range(300):
        (run / "vcf" / f"calls{i:03d}.vcf").write_text(f"chr1\t{i}\t.\tA\tG\t50\tPASS\tDP=30\n" * 400)
    (run / "lane1.bam").write_bytes(os.urandom(12 * MiB))  # compressed already: raw frames, none read for one VCF
    archive = tmp_path / "run42.tar.zst"
    proc = labferry("pack", str(run), str(archive), "--workers", "2", "--piece", "1M", "--json",
                    env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    text = sum(p.stat().st_size for p in run.rglob("calls*.vcf"))
    rest = sum(p.stat().st_size for p in run.rglob("*") if p.is_file() and not p.is_symlink()) - text
    assert archive.stat().st_size < rest + 0.2 * text  # the text shrank; the random BAMs could not
    out = tmp_path / "zstd"
    out.mkdir()
    piped = subprocess.run(f"zstd -dq < '{archive}' | tar -xf - -C '{out}'", shell=True, capture_output=True)
    assert piped.returncode == 0, piped.stderr
    _same(run, out / "run42")
    dest = tmp_path / "ferry"
    proc = labferry("unpack", str(archive), str(dest), "--workers", "3", env_home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    os.rename(dest / "run42" / "caf%E9.tsv", dest / "run42" / os.fsdecode(b"caf\xe9.tsv"))
    _same(run, dest / "run42")
    read, restored = _bytes_read_by_only(archive, tmp_path / "one", "run42/vcf/calls123.vcf")
    assert restored == 1 and read < archive.stat().st_size / 20, (read, archive.stat().st_size)
    frames = subprocess.run(["zstd", "-lv", str(archive)], capture_output=True, text=True).stdout
    assert "Skippable" in frames or "skippable" in frames.lower(), frames
