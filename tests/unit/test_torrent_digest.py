"""The sha256 that follows a torrent download only reads what a flush has put on disk."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import libtorrent as lt

from backends.torrent.create import create
from backends.torrent.digest import STEP, TorrentDigest

MiB = 1024 * 1024


def _torrent(path: Path, piece_size: int) -> lt.torrent_info:
    return lt.torrent_info(lt.bdecode(create(path, piece_size=piece_size)))


def test_hashes_behind_the_flushed_prefix_and_never_past_it(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    data = os.urandom(3 * STEP + 123_457)
    (src / "reads.fastq").write_bytes(data)
    info = _torrent(src / "reads.fastq", MiB)
    dest = tmp_path / "dest"
    dest.mkdir()
    # what a downloader's file looks like mid-way: the first two STEPs are in, the rest is not written yet
    done = 2 * STEP
    (dest / "reads.fastq").write_bytes(data[:done] + b"\0" * (len(data) - done))
    digest = TorrentDigest(info, dest)
    pieces = [i * MiB < done for i in range(info.num_pieces())]

    assert digest.wants_flush(pieces)  # two STEPs of complete pieces: ask libtorrent to write them out
    assert not digest.wants_flush(pieces)  # one flush at a time
    digest.flushed()
    assert not digest.flush_pending
    hasher = digest._hashers["reads.fastq"]
    deadline = time.monotonic() + 10
    while hasher.position < done and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    assert hasher.position == done  # up to the flushed prefix, not a byte further
    # the zeros after the safe point must not have been hashed: the real bytes land there now
    with open(dest / "reads.fastq", "r+b") as fh:
        fh.seek(done)
        fh.write(data[done:])
    all_pieces = [True] * info.num_pieces()
    assert digest.wants_flush(all_pieces)  # pieces complete but no answer yet: nothing past 2 STEPs is read
    digests = digest.finish()
    digest.stop()
    assert digests == {"reads.fastq": hashlib.sha256(data).hexdigest()}
    assert digest.total_data == len(data)


def test_a_gap_in_the_pieces_stops_the_prefix(tmp_path):
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(2 * STEP))
    digest = TorrentDigest(_torrent(src, MiB), tmp_path)
    pieces = [True] * (2 * STEP // MiB)
    pieces[3] = False  # rarest-first order: piece 3 is still missing
    assert not digest.wants_flush(pieces)
    pieces[3] = True
    assert digest.wants_flush(pieces)


def test_folder_torrents_hash_each_file_without_pad_files(tmp_path):
    src = tmp_path / "cohort"
    (src / "meta").mkdir(parents=True)
    files = {"a.bam": os.urandom(STEP + 5000), "meta/samples.tsv": os.urandom(3000), "z.bam": os.urandom(STEP)}
    for rel, blob in files.items():
        (src / rel).write_bytes(blob)
    info = _torrent(src, 256 * 1024)
    digest = TorrentDigest(info, tmp_path)  # the files are already complete where the torrent puts them
    assert digest.wants_flush([True] * info.num_pieces())
    digest.flushed()
    digests = digest.finish()
    digest.stop()
    assert digests == {f"cohort/{rel}": hashlib.sha256(blob).hexdigest() for rel, blob in files.items()}
    assert digest.total_data == sum(len(b) for b in files.values())
