"""Ferry's own tar headers are byte for byte what Python's ``tarfile`` writes in pax format (made six times
faster), for every odd case an archive of a run folder meets: long, non-ASCII and non-UTF-8 names and links,
nanosecond and out-of-range times, sizes from 8 GiB, folders."""

from __future__ import annotations

import os
import tarfile

import pytest

from backends.archive.headers import header, length

CASES = [
    ("run42/s1.vcf", "file", 1234, 0o644, 1_700_000_000_000_000_000, ""),
    ("run42/s1.vcf", "file", 1234, 0o600, 1_700_000_000_123_456_789, ""),
    ("run42", "dir", 0, 0o755, 1_700_000_000_500_000_000, ""),
    ("run42/" + "x" * 150 + ".vcf.gz", "file", 1, 0o644, 1_700_000_000_000_000_000, ""),
    ("run42/" + "y" * 94, "file", 1, 0o644, 1_700_000_000_000_000_000, ""),  # exactly 100 bytes
    ("run42/café.tsv", "file", 7, 0o644, 1_700_000_000_000_000_001, ""),
    ("run42/" + os.fsdecode(b"caf\xe9.tsv"), "file", 7, 0o644, 1_700_000_000_000_000_000, ""),
    ("run42/latest", "symlink", 0, 0o777, 1_700_000_000_000_000_000, "vcf/chr1/s1.vcf"),
    ("run42/far", "symlink", 0, 0o777, 1_700_000_000_000_000_000, "../" * 40 + "target"),
    ("run42/hard", "hardlink", 0, 0o644, 1_700_000_000_000_000_000, "run42/" + os.fsdecode(b"\xff.vcf")),
    ("run42/huge.bam", "file", 300 << 30, 0o644, 1_700_000_000_000_000_000, ""),
    ("run42/old", "file", 0, 0o644, -86_400_000_000_000, ""),
    ("run42/future", "file", 0, 0o644, (8 ** 11 + 5) * 1_000_000_000, ""),
    ("run42/mode", "file", 0, 0o104755, 1_700_000_000_000_000_000, ""),
]


def _tarfile(name, kind, size, mode, mtime_ns, link) -> bytes:
    info = tarfile.TarInfo(name)
    info.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
                 "hardlink": tarfile.LNKTYPE}[kind]
    info.size, info.mode, info.linkname = size, mode, link
    seconds, nanos = divmod(mtime_ns, 1_000_000_000)
    info.mtime = seconds
    if nanos:
        info.pax_headers = {"mtime": f"{seconds}.{nanos:09d}".rstrip("0")}
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_the_same_bytes_as_tarfile(case):
    assert header(*case) == _tarfile(*case)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_the_layout_knows_each_headers_length_without_making_it(case):
    name, kind, size, _mode, mtime_ns, link = case
    assert length(name, kind, size, mtime_ns, link) == len(header(*case))
