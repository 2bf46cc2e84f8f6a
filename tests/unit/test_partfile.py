"""The destination side: partial files are trusted only when the source is the same."""

from __future__ import annotations

import hashlib
import os
import threading

import pytest

from backends.core.errors import LocalError
from backends.core.registry import Registry, registry
from backends.destination import Identity, PartFile, check_destination
from backends.streams.hashing import FollowingHasher

ID = Identity("https://h/x", 1000, '"e1"', "Mon, 01 Jan 2026 00:00:00 GMT")


def test_progress_is_trusted_only_for_the_same_source(tmp_path):
    part = PartFile(tmp_path / "x")
    assert part.open(ID) == []
    part.write(b"a" * 100, 0)
    part.save_state([(0, 100)])
    part.close()
    again = PartFile(tmp_path / "x")
    assert again.open(ID) == [(0, 100)]
    again.close()
    for changed in (Identity(ID.source, 1001, ID.etag, ID.last_modified),
                    Identity(ID.source, ID.size, '"e2"', ID.last_modified),
                    Identity("https://h/y", ID.size, ID.etag, ID.last_modified)):
        p = PartFile(tmp_path / "x")
        assert p.open(changed) == []
        p.close()


def test_apaches_weak_etag_of_a_young_file_and_its_strong_twin_are_one_version(tmp_path):
    """Apache sends W/"tag" for a file changed within the last second and "tag" after it: a run killed in that
    second and resumed later threw its progress away (a flaky failure of test_http_servers.py). A different
    tag, or a weak tag with another date, is still another file."""
    young = Identity(ID.source, ID.size, 'W/"e1"', ID.last_modified)
    part = PartFile(tmp_path / "x")
    part.open(young)
    part.write(b"a" * 100, 0)
    part.save_state([(0, 100)])
    part.close()
    for other in (Identity(ID.source, ID.size, 'W/"e2"', ID.last_modified),
                  Identity(ID.source, ID.size, ID.etag, "Tue, 02 Jan 2026 00:00:00 GMT")):
        assert not other.matches({"source": ID.source, "size": ID.size, "etag": young.etag,
                                  "last_modified": young.last_modified})
    again = PartFile(tmp_path / "x")
    assert again.open(ID) == [(0, 100)]
    again.close()


def test_a_second_writer_is_refused(tmp_path):
    first = PartFile(tmp_path / "x")
    first.open(ID)
    with pytest.raises(LocalError, match="another Ferry process"):
        PartFile(tmp_path / "x").open(ID)
    first.close()


def test_finish_renames_atomically_and_removes_the_record(tmp_path):
    part = PartFile(tmp_path / "x")
    part.open(ID)
    part.write(b"z" * 1000, 0)
    part.save_state([(0, 1000)])
    final = part.finish(1000)
    assert final.read_bytes() == b"z" * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]


def test_check_destination(tmp_path):
    (tmp_path / "exists").write_text("x")
    with pytest.raises(LocalError, match="already exists"):
        check_destination(tmp_path / "exists", overwrite=False)
    check_destination(tmp_path / "exists", overwrite=True)
    with pytest.raises(LocalError, match="does not exist"):
        check_destination(tmp_path / "no" / "x", overwrite=False)
    with pytest.raises(LocalError, match="is a folder"):
        check_destination(tmp_path, overwrite=False)


def test_following_hasher_matches_hashlib_while_the_file_grows(tmp_path):
    path = tmp_path / "f"
    data = os.urandom(9 * 1024 * 1024 + 3)
    path.write_bytes(b"\0" * len(data))
    hasher = FollowingHasher(path, ("sha256", "md5"))
    with open(path, "r+b") as fh:
        for offset in range(0, len(data), 1 << 20):
            fh.seek(offset)
            fh.write(data[offset:offset + (1 << 20)])
            fh.flush()
            hasher.advance(min(len(data), offset + (1 << 20)))
    digests = hasher.finish(len(data))
    assert digests["sha256"] == hashlib.sha256(data).hexdigest()
    assert digests["md5"] == hashlib.md5(data).hexdigest()
    assert threading.active_count() < 50


def test_https_backend_is_found_through_its_entry_point():
    assert registry.for_url("https://h/x").name == "https"
    assert registry.for_url("HTTP://h/x").name == "https"
    fresh = Registry()
    assert "http" in fresh.get("https").schemes


def test_a_process_that_loses_the_lock_leaves_the_winners_part_file_alone(tmp_path):
    """The loser used to close through ``close()``, which removes an empty part file with no record as if
    it were its own: the winner then wrote to a name nobody saw and its rename failed."""
    dest = tmp_path / "x.bin"
    winner, loser = PartFile(dest), PartFile(dest)
    winner.lock()  # still empty and without a record: the window in which the loser arrives
    with pytest.raises(LocalError, match="already being transferred by another Ferry process"):
        loser.lock()
    assert winner.part.exists() and loser.fd is None
    winner.adopt(Identity("https://h/x.bin", 10, '"e"', None))
    winner.write(b"0123456789", 0)
    assert winner.finish(10).read_bytes() == b"0123456789"


def test_a_part_file_unlinked_between_open_and_lock_is_opened_again(tmp_path, monkeypatch):
    """The lock is on the inode: a name that no longer leads to it must not be written."""
    from backends.host import portable

    dest = tmp_path / "y.bin"
    part = PartFile(dest)
    real_lock, calls = portable.lock_exclusive, []

    def lock_after_unlink(fd):
        if not calls:
            part.part.unlink()  # another process gave the empty file up under its lock
        calls.append(fd)
        return real_lock(fd)

    monkeypatch.setattr(portable, "lock_exclusive", lock_after_unlink)
    part.lock()
    assert len(calls) == 2 and part.part.exists()
    assert os.stat(part.part).st_ino == os.fstat(part.fd).st_ino
    part.close()


def test_a_file_replaced_as_it_is_renamed_is_not_called_done(tmp_path, monkeypatch):
    """"Verified" is said of the file at its final name: a second writer that puts another file there in the
    moment of the rename (here, right after the real rename, by a real write and rename of its own) is found,
    and the job fails (exit 6) instead of saying its check holds for bytes it never read."""
    from backends.core.errors import Corrupt
    from backends.destination import partfile

    part = PartFile(tmp_path / "x")
    part.open(ID)
    part.write(b"a" * 1000, 0)
    real_replace = os.replace

    def then_another_writer(src, dst):
        real_replace(src, dst)
        if str(dst) == str(tmp_path / "x"):
            other = tmp_path / "other.tmp"
            other.write_bytes(b"b" * 1000)
            real_replace(other, dst)

    monkeypatch.setattr(partfile.os, "replace", then_another_writer)
    with pytest.raises(Corrupt, match="is not the file Ferry wrote and checked"):
        part.finish(1000)
    part.close()
    monkeypatch.setattr(partfile.os, "replace", real_replace)
    honest = PartFile(tmp_path / "y")
    honest.open(ID)
    honest.write(b"c" * 1000, 0)
    assert honest.finish(1000) == tmp_path / "y"
