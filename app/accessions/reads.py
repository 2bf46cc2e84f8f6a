"""Which file of a run holds which read, told by the archive's names and the reads themselves.

ENA names a run's FASTQ files by the read they hold: ``RUN_1``, ``RUN_2`` … in the order of the run's reads, and
``RUN`` alone for a single-end run or for the reads whose mate was lost. A single-cell run has three or four
(an index read, the barcode read, the cDNA read): taking the first two as read 1 and read 2, as fetchngs does
(its issues #326 and #260), puts the index where the barcode belongs. So when a run has more than two numbered
files, the first reads of each are looked at: a file whose reads are at most ``INDEX_LENGTH`` bases is an index
(technical) read, and read 1 and read 2 are the first two of the others, in the archive's order.

The same look tells when ENA serves fewer reads than the run has: the report's ``base_count / read_count`` is
the bases of one spot, all its reads together; when the files' reads add up to several bases fewer, a read (an
index, most often: fetchngs #144) was not put in a file.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

#: the longest read that counts as an index (i7/i5 indexes are 6 to 12 bases; a 10x barcode read is 26 or 28)
INDEX_LENGTH = 12
#: the first records looked at in each file, and the most decompressed bytes read for them
RECORDS = 200
PEEK_BYTES = 1 << 20
PEEK_STEP = 64 * 1024
#: fewer bases than this short of the spot's length is trimming or rounding, not a missing read
MISSING_BASES = 6


@dataclass
class ReadFiles:
    """A run's files by role: read 1 and read 2 (or its one file), index reads, reads whose mate was lost."""

    read_1: object = None
    read_2: object = None
    index: list = field(default_factory=list)
    unpaired: object = None
    others: list = field(default_factory=list)  # more biological reads than two (kept, not in the sheet's reads)


_NAMED = re.compile(r"(?P<stem>.+?)(?:_(?P<read>\d+))?\.f(?:ast)?q(?:\.gz)?")


def number_of(name: str, run: str) -> int | None:
    """ENA's read number in a file name: ``RUN_2.fastq.gz`` → 2, ``RUN.fastq.gz`` → 0, else None. (One compiled
    pattern for every run: a pattern per run filled ``re``'s cache and recompiled for each of a thousand runs.)"""
    found = _NAMED.fullmatch(name.rsplit("/", 1)[-1])
    if not found or found["stem"] != run:
        return None
    return int(found["read"]) if found["read"] else 0


def longest_read(path: Path) -> int | None:
    """The longest of the first ``RECORDS`` reads of a FASTQ file (gzipped or not); None when it is not FASTQ."""
    data = bytearray()
    try:
        with open(path, "rb") as raw:
            head = raw.read(2)
            raw.seek(0)
            stream = gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw
            # only as much as the first records need: a study's thousand files are each looked at once it is in
            while len(data) < PEEK_BYTES and data.count(b"\n") <= 4 * RECORDS:
                chunk = stream.read(PEEK_STEP)
                if not chunk:
                    break
                data += chunk
    except (OSError, EOFError, zlib.error):
        return None
    lines = bytes(data[:PEEK_BYTES]).split(b"\n")
    lengths = []
    for i in range(RECORDS):
        if 4 * i + 2 >= len(lines):  # the sequence line is whole only if a line follows it
            break
        if not lines[4 * i].startswith(b"@") or not lines[4 * i + 2].startswith(b"+"):
            return None
        lengths.append(len(lines[4 * i + 1].strip()))
    return max(lengths) if lengths else None


def assign(files: list, run: str, path_of) -> ReadFiles:
    """The roles of ``files`` (objects with ``.name``) of ``run``; ``path_of(file)`` is where one is on disk."""
    numbered = sorted((f for f in files if (number_of(f.name, run) or 0) >= 1), key=lambda f: number_of(f.name, run))
    alone = [f for f in files if number_of(f.name, run) in (0, None)]
    if not numbered:
        return ReadFiles(read_1=alone[0] if alone else None, others=alone[1:])
    roles = ReadFiles(unpaired=alone[0] if alone else None, others=alone[1:])
    biological = numbered
    if len(numbered) > 2:
        lengths = {id(f): longest_read(path_of(f)) for f in numbered}
        roles.index = [f for f in numbered if (lengths[id(f)] or INDEX_LENGTH + 1) <= INDEX_LENGTH]
        biological = [f for f in numbered if f not in roles.index]
    roles.read_1 = biological[0] if biological else None
    roles.read_2 = biological[1] if len(biological) > 1 else None
    roles.others += biological[2:]
    return roles


def missing_bases(meta: dict, paths: list[Path]) -> tuple[int, int] | None:
    """(the spot's bases in the report, the bases the files' reads add up to) when the files hold several bases
    fewer than the run's spots: a read ENA did not put in a file. None when they agree or cannot be told."""
    try:
        spot = int(meta.get("base_count") or 0) / int(meta.get("read_count") or 0)
    except (ValueError, ZeroDivisionError):
        return None
    lengths = [longest_read(p) for p in paths]
    if not lengths or None in lengths:
        return None
    held = sum(lengths)
    return (round(spot), held) if spot - held >= MISSING_BASES else None
