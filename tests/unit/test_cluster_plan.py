"""A cluster job's plan, Slurm's words and the final look at DEST, without a cluster (tests/integration/
test_cluster.py runs them against a real one)."""

from __future__ import annotations

import os
import random

import pytest

from app.cluster.plan import deal
from app.cluster.slurm import _slurm_said, limit_seconds, script
from app.cluster.sources import claimed
from app.cluster.verify import _why_not
from backends.core.base import Checksum, ListedFile


@pytest.mark.parametrize("tasks", [1, 2, 3, 7])
def test_every_file_is_dealt_once_and_the_shares_weigh_alike(tasks):
    rng = random.Random(tasks)
    sizes = [rng.choice([rng.randint(1, 4096), rng.randint(1 << 20, 1 << 30)]) for _ in range(500)]
    shares = deal(sizes, tasks)
    assert sorted(i for share in shares for i in share) == list(range(len(sizes)))  # once each, none lost
    loads = [sum(sizes[i] for i in share) for share in shares]
    best = max(sum(sizes) / tasks, max(sizes))
    assert max(loads) <= 4 / 3 * best  # Graham's bound for largest-first


def test_more_tasks_than_files_leaves_no_empty_task():
    assert deal([5, 3], 3) == [[0], [1]]
    assert deal([], 3) == []


@pytest.mark.parametrize(("given", "seconds"), [("1", 60), ("90", 5400), ("1:30", 90), ("2:00:00", 7200),
                                                ("1-0", 86400), ("1-2:3", 93780), ("1-2:3:4", 93784),
                                                ("UNLIMITED", None), ("x:1", None), ("1:2:3:4", None)])
def test_sbatch_time_limits_are_read_as_slurm_reads_them(given, seconds):
    assert limit_seconds(given) == seconds


def test_slurms_own_reason_is_kept_and_its_prefixes_dropped():
    said = ("sbatch: error: invalid partition specified: nosuch\n"
            "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
    assert _slurm_said(said) == "Invalid partition name specified"
    assert _slurm_said("") == ""


def test_the_batch_script_runs_ferry_itself_so_slurms_signal_reaches_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LABFERRY_CLUSTER_COMMAND", "/opt/ferry/bin/labferry --x")
    text = script(tmp_path / "it's here", 2)
    assert text.splitlines()[-1] == ("exec /opt/ferry/bin/labferry --x cluster-task "
                                     f"'{tmp_path}/it'\"'\"'s here' 2 ${{SLURM_ARRAY_TASK_ID}}")


def test_names_that_would_meet_at_one_path_are_told_apart_before_they_are_dealt(tmp_path):
    """Two nodes must never write one path: ``what?.txt`` is saved as ``what%3F.txt``, which the server also
    has; the plan numbers one of them before either is dealt."""
    files = [ListedFile("https://h/what%3F.txt", "what?.txt", 1), ListedFile("https://h/what%253F.txt",
                                                                             "what%3F.txt", 2)]
    names = [f.name for f in claimed(files, tmp_path)]
    assert len(set(names)) == 2 and "what%3F.txt" in names


def test_the_final_look_refuses_a_link_a_short_file_and_a_wrong_checksum(tmp_path):
    data = b"reads\n" * 100
    good = ListedFile("https://h/a", "a", len(data), Checksum("md5", "0" * 32))
    (tmp_path / "real").write_bytes(data)
    os.symlink(tmp_path / "real", tmp_path / "a")
    assert _why_not(good, tmp_path / "a", {}) == "not a regular file"
    (tmp_path / "a").unlink()
    (tmp_path / "a").write_bytes(data[:-1])
    assert "bytes where" in _why_not(good, tmp_path / "a", {})
    (tmp_path / "a").write_bytes(data)
    assert "differs from the published one" in _why_not(good, tmp_path / "a", {})
    import hashlib

    right = ListedFile("https://h/a", "a", len(data), Checksum("md5", hashlib.md5(data).hexdigest()))
    assert _why_not(right, tmp_path / "a", {}) == ""
    assert _why_not(ListedFile("https://h/b", "b", 3), tmp_path / "b", {}) == "not there"


def test_the_work_folder_is_the_users_alone_and_a_link_in_its_place_is_refused(tmp_path):
    from app.cluster.plan import make_work
    from backends.core.errors import LocalError

    work = make_work(tmp_path / "dest")
    assert work.name == ".dest.ferry-cluster" and work.stat().st_mode & 0o777 == 0o700
    elsewhere = tmp_path / "someone-elses"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / ".other.ferry-cluster")
    with pytest.raises(LocalError, match="not a folder of Ferry's"):
        make_work(tmp_path / "other")


def test_a_file_read_whole_once_is_looked_at_again_by_stat_unless_it_changed(tmp_path, monkeypatch):
    """The end of a cluster job looks at every file again; one this run already read and found right is not read
    a second time (a resumed 2 TB study would be read twice), but one changed since is."""
    import hashlib

    from app.cluster import verify
    from app.cluster.plan import Plan

    data = b"ACGT" * 1000
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "r1.fastq.gz").write_bytes(data)
    file = ListedFile("https://h/r1", "r1.fastq.gz", len(data), Checksum("md5", hashlib.md5(data).hexdigest()))
    plan = Plan("ena:PRJEB1", str(dest), (file,), {}, 8)
    seen: dict = {}
    assert [f.name for f in verify.check(plan, tmp_path, seen=seen).verified] == ["r1.fastq.gz"]
    monkeypatch.setattr(verify, "verified_here", lambda *a: pytest.fail("read again though unchanged"))
    assert [f.name for f in verify.check(plan, tmp_path, seen=seen).verified] == ["r1.fastq.gz"]
    monkeypatch.undo()
    (dest / "r1.fastq.gz").write_bytes(b"TGCA" * 1000)  # another writer, same size, a later time
    os.utime(dest / "r1.fastq.gz", ns=(1, 2))
    assert "differs from the published one" in verify.check(plan, tmp_path, seen=seen).missing[0][1]


def test_a_server_that_lists_endless_empty_folders_ends_the_walk_in_one_sentence(monkeypatch):
    """A hostile listing: ten thousand empty folders (no file counts against the file bound, no level against
    --max-depth); each is one more request to the server."""
    import asyncio

    from app.cluster import sources
    from backends.core.abilities import FolderEntry
    from backends.core.base import TransferOptions
    from backends.core.errors import BadRequest

    class Endless:
        calls = 0

        async def listdir(self, url, options):
            Endless.calls += 1
            return [FolderEntry(f"d{k}", True) for k in range(10_000)] if url.endswith("/top/") else []

    monkeypatch.setattr(sources, "MOST_FOLDERS", 500)
    with pytest.raises(BadRequest, match="more than 500 folders"):
        asyncio.run(sources._walk(Endless(), "https://h/top/", TransferOptions(max_depth=32)))
    assert Endless.calls == 500
