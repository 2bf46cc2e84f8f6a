"""The tar stream of a folder download is not trusted: crafted archives, unpacked by the system's tar.

The stream comes from a real process (``cat`` of an archive made here), as it would from ssh. Every test runs
with GNU tar (Linux's) and with bsdtar (the tar of macOS and of Windows 10 and later): the flags Ferry gives
must mean the same to both, and both must refuse what a hostile server sends.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from backends.core.errors import Corrupt, TransferError
from backends.destination import Destination
from backends.ssh.address import Entry
from backends.ssh.untar import _unpack_native, native_tar


def archive(path: Path, members: list[tuple[str, bytes | str]]) -> None:
    """bytes: a regular file; str: a symlink to that target."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, body in members:
            info = tarfile.TarInfo(name)
            if isinstance(body, str):
                info.type, info.linkname = tarfile.SYMTYPE, body
                tar.addfile(info)
            else:
                info.size, info.mode = len(body), 0o644
                tar.addfile(info, io.BytesIO(body))


TARS = {"gnu": "tar", "bsd": "bsdtar"}


@pytest.fixture(autouse=True, params=sorted(TARS))
def tar_in_path(request, tmp_path_factory, monkeypatch) -> str:
    """PATH whose ``tar`` is GNU tar or bsdtar, as ``native_tar`` finds it on Linux or on macOS and Windows."""
    real = shutil.which(TARS[request.param])
    assert real, f"{TARS[request.param]} is needed (tests/system-deps.sh installs it)"
    shim = tmp_path_factory.mktemp(f"tar-{request.param}")
    (shim / "tar").symlink_to(real)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    native_tar.cache_clear()
    yield request.param
    native_tar.cache_clear()


def test_the_tar_found_is_the_one_in_path(tar_in_path):
    out = subprocess.run([native_tar(), "--version"], capture_output=True, text=True).stdout
    assert ("bsdtar" in out) == (tar_in_path == "bsd") and ("GNU tar" in out) == (tar_in_path == "gnu")


def unpack(work: Path, members, wanted: list[Entry], folders: tuple[str, ...] = ()) -> tuple[Path, dict[str, str]]:
    """Stream ``members`` through ``cat`` into a destination holding ``folders`` (download_tree makes them)."""
    tar = native_tar()
    assert tar, "GNU tar or bsdtar is needed (Debian and macOS have one)"
    source = work / "stream.tar"
    archive(source, members)
    dest = work / "dest"
    for folder in ("", *folders):
        (dest / folder).mkdir(exist_ok=True)
    proc = subprocess.Popen(["cat", str(source)], stdout=subprocess.PIPE)
    destination = Destination(dest)
    wanted = [replace(e, saved=destination.claim(e.rel)) for e in wanted]
    try:
        hashes = _unpack_native(tar, proc, destination, wanted, lambda moved: None, "server")
    finally:
        proc.stdout.close()
        proc.wait()
        assert not [p for p in dest.iterdir() if p.name.startswith(".ferry-tar-")], "the private folder is removed"
    return dest, hashes


def entry(rel: str, size: int, mode: int = 0o100640, mtime: int = 1_600_000_000) -> Entry:
    return Entry(rel, size, mtime, mode)


def test_requested_files_arrive_with_the_servers_mode_and_time(tmp_path):
    body = os.urandom(5000)
    wanted = [entry("a b;$(x).txt", len(body)), entry("sub/c.txt", 3, mode=0o100600)]
    dest, hashes = unpack(tmp_path, [("./a b;$(x).txt", body), ("./sub/c.txt", b"abc")], wanted, ("sub",))
    assert hashes == {"a b;$(x).txt": hashlib.sha256(body).hexdigest(),
                      "sub/c.txt": hashlib.sha256(b"abc").hexdigest()}
    st = (dest / "a b;$(x).txt").stat()
    assert (st.st_mode & 0o777, int(st.st_mtime)) == (0o640, 1_600_000_000)
    assert (dest / "sub" / "c.txt").stat().st_mode & 0o777 == 0o600


def test_a_symlink_sent_for_a_requested_file_stops_the_job(tmp_path):
    outside = tmp_path / "precious"
    outside.write_bytes(b"keep me")
    with pytest.raises(Corrupt, match="plain file"):
        unpack(tmp_path, [("./a.txt", str(outside))], [entry("a.txt", 7)])
    assert outside.read_bytes() == b"keep me"
    assert not os.path.lexists(tmp_path / "dest" / "a.txt")


def test_names_not_asked_for_are_never_moved_into_place(tmp_path):
    dest, hashes = unpack(tmp_path, [("./a.txt", b"one"), ("./extra.txt", b"two")], [entry("a.txt", 3)])
    assert hashes == {"a.txt": hashlib.sha256(b"one").hexdigest()}
    assert [p.name for p in dest.iterdir()] == ["a.txt"]


@pytest.mark.parametrize("member", ["../evil.txt", "./../evil.txt", "sub/../../evil.txt"])
def test_a_name_that_climbs_out_fails_the_job_and_writes_nothing_outside(tmp_path, member):
    with pytest.raises(TransferError):
        unpack(tmp_path, [("./a.txt", b"one"), (member, b"three")], [entry("a.txt", 3)])
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "dest" / "a.txt").exists()


def test_a_file_sent_through_an_archive_symlink_never_lands_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    members = [("./link", str(outside)), ("./link/planted.txt", b"gotcha")]
    with pytest.raises(TransferError):  # tar refuses to write through a symlink the archive made
        unpack(tmp_path, members, [entry("link/planted.txt", 6)], ("link",))
    assert list(outside.iterdir()) == []


def test_a_member_larger_than_its_listing_is_refused_and_not_moved_into_place(tmp_path):
    with pytest.raises(Corrupt, match="where its listing said 3"):
        unpack(tmp_path, [("./a.txt", b"one more than three")], [entry("a.txt", 3)])
    assert not os.path.lexists(tmp_path / "dest" / "a.txt")


def test_a_stream_that_holds_more_than_was_asked_for_is_stopped_before_tar_writes_it(tmp_path):
    """A server that answers a request for one 3-byte file with 40 MiB: the pump stops at the bound."""
    from backends.core.errors import BadAnswer

    with pytest.raises(BadAnswer, match="held more than the files Ferry asked for"):
        unpack(tmp_path, [("./a.txt", b"one"), ("./flood.bin", bytes(40 << 20))], [entry("a.txt", 3)])
    assert not os.path.lexists(tmp_path / "dest" / "a.txt")
    assert not os.path.lexists(tmp_path / "dest" / "flood.bin")


def test_a_server_name_with_characters_windows_refuses_is_saved_under_its_safe_name(tmp_path):
    dest, hashes = unpack(tmp_path, [("./what?.txt", b"one")], [entry("what?.txt", 3)])
    assert hashes == {"what?.txt": hashlib.sha256(b"one").hexdigest()}
    assert [p.name for p in dest.iterdir()] == ["what%3F.txt"]
