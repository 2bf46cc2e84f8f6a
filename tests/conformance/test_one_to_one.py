""""Verified" is a promise: every file the source lists arrives at a name of its own, on every backend.

Names the safe-name rules map onto one another (``what?.txt`` → ``what%3F.txt`` beside a literal
``what%3F.txt``; ``CON`` → ``CON_`` beside ``CON_``; ``x.`` → ``x%2E`` beside ``x%2E``) overwrote each other:
13 of 16 files arrived, exit 0, "verified". Now the literal name keeps its place, the renamed one is numbered
(``what%3F~2.txt``) and said, and a folder job ends by finding every listed file on disk.
"""

from __future__ import annotations

import os

from tests.conformance.conftest import CASES, over
from tests.integration.conftest import sha256_of, write_random

from .test_cases import copy

CASES.update({
    "colliding_names": "names that become one once made safe (what?.txt beside what%3F.txt, CON beside CON_, x. "
                       "beside x%2E, in a folder and its twin): every file kept at a name of its own, and said",
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
