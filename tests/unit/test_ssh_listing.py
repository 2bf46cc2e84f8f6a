"""A folder's listing as the stat channel sends it (``scripts.STAT_EACH``): plain, or one gzip member."""

from __future__ import annotations

import asyncio
import gzip

from backends.ssh.address import Target
from backends.ssh.lead import Metadata

RECORDS = (b"f 10 1600000000.0000000000 644 a b.txt\0d 4096 1600000000.0000000000 755 sub\0"
           b"f 5 1600000001.5000000000 600 sub/new\nline\0")


class _Channel:
    """What ``_read_listing`` reads: the channel's stdout, as the server wrote it."""

    def __init__(self, data: bytes) -> None:
        self.stdout = asyncio.StreamReader()
        self.stdout.feed_data(data)
        self.stdout.feed_eof()
        self.returncode = None


class _Ssh:
    def __init__(self) -> None:
        self.discarded: list[_Channel] = []

    def discard(self, proc: _Channel) -> None:
        self.discarded.append(proc)


class _Master:
    def __init__(self) -> None:
        self.ssh = _Ssh()


def read(data: bytes) -> tuple[list | None, _Master, bytes]:
    async def go():
        master = _Master()
        meta = Metadata(master, Target(scheme="sftp", alias="h", host="h", port=22, user="u", path="/data"))
        meta.proc = _Channel(data)
        await meta._read_listing("/data")
        rest = b"" if meta.proc is None else await meta.proc.stdout.read()
        return meta.listing("/data"), master, rest

    return asyncio.run(go())


def names(entries) -> list[tuple[str, int, int]]:
    return [(e.rel, e.size, e.mode & 0o777) for e in entries]


EXPECTED = [("a b.txt", 10, 0o644), ("sub", 4096, 0o755), ("sub/new\nline", 5, 0o600)]


def test_a_plain_listing_is_read_up_to_its_end_record_and_no_further():
    entries, master, rest = read(RECORDS + b"END 0\0" + b"FERRY-STAT next answer\n")
    assert names(entries) == EXPECTED and not master.ssh.discarded
    assert rest == b"FERRY-STAT next answer\n"  # the channel answers the job's next stat


def test_a_gzipped_listing_gives_the_same_entries():
    entries, master, _ = read(b"GZ\0" + gzip.compress(RECORDS + b"END 0\0", compresslevel=1))
    assert names(entries) == EXPECTED and not master.ssh.discarded


def test_a_failed_find_means_no_listing_and_the_walk_asks_again():
    entries, master, _ = read(b"GZ\0" + gzip.compress(RECORDS + b"END 1\0"))
    assert entries is None and not master.ssh.discarded


def test_a_cut_or_corrupt_gzip_listing_drops_the_channel():
    packed = gzip.compress(RECORDS + b"END 0\0")
    for data in (b"GZ\0" + packed[:-8], b"GZ\0" + packed[:10] + b"\xff" * 20 + packed[30:],
                 b"GZ\0" + gzip.compress(RECORDS)):  # no END record at all
        entries, master, _ = read(data)
        assert entries is None and len(master.ssh.discarded) == 1
