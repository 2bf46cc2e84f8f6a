""""Verified" is a promise: every file the source lists arrives at a name of its own, on every backend.

Names the safe-name rules map onto one another (``what?.txt`` → ``what%3F.txt`` beside a literal
``what%3F.txt``; ``CON`` → ``CON_`` beside ``CON_``; ``x.`` → ``x%2E`` beside ``x%2E``) overwrote each other:
13 of 16 files arrived, exit 0, "verified". Now the literal name keeps its place, the renamed one is numbered
(``what%3F~2.txt``) and said, and a folder job ends by finding every listed file on disk.
"""

from __future__ import annotations

import os

from tests.conformance.conftest import CASES, NOT_APPLICABLE, over
from tests.integration.conftest import sha256_of, write_random

from .test_cases import copy

CASES.update({
    "colliding_names": "names that become one once made safe (what?.txt beside what%3F.txt, CON beside CON_, x. "
                       "beside x%2E, in a folder and its twin): every file kept at a name of its own, and said",
})

NOT_APPLICABLE.update({
    ("colliding_names", "torrent"): "tested apart: names from a .torrent, test_torrent.py (what?.txt, CON, x:y.txt)",
    ("repeated_names", "torrent"): "n/a: a .torrent lists its files; no folder is listed",
    ("max_depth", "torrent"): "n/a: a .torrent lists its files; no folder is walked",
})

#: source name → the name it is saved as: literal names keep theirs, the ones the rules change are numbered
TWINS = {
    "what?.txt": "what%3F~2.txt", "what%3F.txt": "what%3F.txt",
    "CON": "CON_~2", "CON_": "CON_",
    "x.": "x%2E~2", "x%2E": "x%2E",
    "sub?/r.fq": "sub%3F/r~2.fq", "sub%3F/r.fq": "sub%3F/r.fq",
    "plain.fq": "plain.fq",
}


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_colliding_names(target, tmp_path, ferry_home, record_property):
    base = target.path("twins")
    for folder in ("sub?", "sub%3F"):
        (base / folder).mkdir(parents=True)
    expected = {saved: write_random(base / given, 700 + i * 31, seed=600 + i)
                for i, (given, saved) in enumerate(TWINS.items())}
    target.hand_over(target.root)
    proc = copy(target, target.url("twins", folder=True), tmp_path / "got", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    got = {str(p.relative_to(tmp_path / "got")): sha256_of(p) for p in (tmp_path / "got").rglob("*") if p.is_file()}
    assert got == expected, sorted(got)
    assert len(set(got.values())) == len(TWINS)  # nine sources, nine distinct files: none lost, none twice
    for given, saved in TWINS.items():
        if saved.endswith(("~2.txt", "~2", "~2.fq")):
            assert f"{given!r} → {saved!r}" in proc.stderr, (given, proc.stderr)
    assert not [p for p in (tmp_path / "got").rglob("*") if ".part" in p.name or p.name.startswith(".")]
    record_property("how", "all nine kept; the renamed twins numbered and said")


def test_listed_names_are_each_found_once(tmp_path):
    """The accounting at a folder's end: a file the listing names but the disk lacks, or two names that are one
    file on disk, is found (``destination.tally``)."""
    from backends.destination import Destination, unaccounted

    dest = Destination(tmp_path)
    for name in ("a.fq", "b.fq"):
        (tmp_path / name).write_bytes(b"12345")
    os.link(tmp_path / "a.fq", tmp_path / "c.fq")
    wrong = unaccounted(dest, [("a.fq", 5), ("b.fq", 6), ("c.fq", 5), ("d.fq", None)])
    assert wrong == {"b.fq": "5 bytes there, 6 listed", "c.fq": "the same file there as 'a.fq'",
                     "d.fq": "not in the destination"}


CASES.update({
    "repeated_names": "a folder that repeats its parent's name (run/run/run/, same names and sizes, other dates): "
                      "copied whole, not taken for a loop",
})


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_repeated_names(target, tmp_path, ferry_home):
    top = target.path("run")
    expected = {}
    for depth, when in enumerate((1_704_067_200, 1_717_200_000, 1_730_000_000)):  # 2024-01, 2024-06, 2024-10
        folder = top.joinpath(*["run"] * depth)
        folder.mkdir(parents=True, exist_ok=True)
        rel = "/".join(["run"] * depth + ["reads.txt"])
        expected[rel] = write_random(folder / "reads.txt", 4096, seed=700 + depth)
        os.utime(folder / "reads.txt", (when, when))
    for depth in (2, 1, 0):
        os.utime(top.joinpath(*["run"] * depth), (1_700_000_000 + depth * 86400 * 40,) * 2)
    target.hand_over(target.root)
    proc = copy(target, target.url("run", folder=True), tmp_path, home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    got = {str(p.relative_to(tmp_path / "run")): sha256_of(p) for p in (tmp_path / "run").rglob("*") if p.is_file()}
    assert got == expected, proc.stderr
    assert "loop" not in proc.stderr.lower(), proc.stderr


CASES.update({
    "max_depth": "a tree 40 folders deep: refused in one sentence before anything is copied (exit 2), copied whole "
                 "with --max-depth 64",
})


@over("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps")
def test_max_depth(target, tmp_path, ferry_home):
    levels = ["d"] * 40
    deepest = target.path("deep").joinpath(*levels)
    deepest.mkdir(parents=True)
    expected = {"top.txt": write_random(target.path("deep/top.txt"), 300, seed=801),
                "/".join([*levels, "bottom.txt"]): write_random(deepest / "bottom.txt", 300, seed=802)}
    for level in range(len(levels), -1, -1):  # each listing its own dates: none is the same as one above it
        os.utime(target.path("deep").joinpath(*levels[:level]), (1_700_000_000 + level * 86400,) * 2)
    target.hand_over(target.root)
    refused = copy(target, target.url("deep", folder=True), tmp_path / "a", home=ferry_home)
    assert refused.returncode == 2, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert "more than 32 levels deep (--max-depth 32)" in last and "--max-depth N" in last, last
    assert not (tmp_path / "a").exists() or not [p for p in (tmp_path / "a").rglob("*") if p.is_file()]
    whole = copy(target, target.url("deep", folder=True), tmp_path / "b", "--max-depth", "64", home=ferry_home)
    assert whole.returncode == 0, whole.stderr
    got = {str(p.relative_to(tmp_path / "b")): sha256_of(p) for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert got == expected
