"""The window's folder panes, below the window: listing a remote folder (in batches) and the folder actions
(make, rename, delete) through each backend, against each real server, checked on the server's own disk."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from app.engine.folders import change_folder, list_folder
from backends.core.base import TransferOptions
from backends.core.errors import BadRequest, NotFound, TransferError
from backends.core.registry import registry


class Place:
    """A fresh folder on one server: its path on disk, the URL of a path below it, the options to reach it."""

    def __init__(self, disk: Path, url, options: TransferOptions, give, backend: str | None = None) -> None:
        self.disk, self._url, self.options, self._give, self.backend = disk, url, options, give, backend

    def url(self, rel: str = "") -> str:
        return self._url(rel)

    def give(self) -> None:
        self._give(self.disk)


def _ssh(server, tag: str) -> Place:
    disk = server.home / f"pane-{tag}-{time.monotonic_ns()}"
    disk.mkdir()
    options = TransferOptions(backend_options={"identity": str(server.key), "known_hosts": str(server.known_hosts)})
    return Place(disk, lambda rel: server.url(f"{disk}/{rel}" if rel else str(disk)), options, server.give)


def _ftp(server) -> Place:
    disk = server.user_root / f"pane-{time.monotonic_ns()}"
    disk.mkdir()
    rel_root = disk.relative_to(server.user_root).as_posix()
    return Place(disk, lambda rel: server.url(f"{rel_root}/{rel}" if rel else rel_root, user=True),
                 TransferOptions(), server.give)


def _gridftp(server, backend: str) -> Place:
    """globus-gridftp-server through GridFTP's own control connection, or as the FTP server it also is (the
    FTP backend's ``//`` for an absolute path)."""
    disk = server.data / f"pane-{time.monotonic_ns()}"
    disk.mkdir()
    root = str(disk) if backend == "gridftp" else "/" + str(disk)

    def give(top: Path) -> None:  # the anonymous user (nobody) may change everything below
        for path in (top, *top.rglob("*")):
            server.give(path)

    return Place(disk, lambda rel: server.url(f"{root}/{rel}" if rel else root), TransferOptions(), give, backend)


@pytest.fixture(params=["ssh", "sftp-only", "vsftpd", "proftpd", "gridftp", "gridftp-as-ftp"])
def place(request) -> Place:
    if request.param == "ssh":
        return _ssh(request.getfixturevalue("sshd"), "shell")
    if request.param == "sftp-only":
        return _ssh(request.getfixturevalue("sshd_sftp_only"), "sftp")
    if request.param in ("vsftpd", "proftpd"):
        server = request.getfixturevalue(request.param)
        if os.geteuid() != 0:
            pytest.fail("The FTP password user needs root to exist; run the suite as root (make test).")
        return _ftp(server)
    return _gridftp(request.getfixturevalue("gridftp"), "gridftp" if request.param == "gridftp" else "ftp")


def _run(coro):
    return asyncio.run(coro)


def _act(place: Place, action: str, rel: str, *args):
    return _run(change_folder(registry, action, place.url(rel), place.options, *args, backend_name=place.backend))


def test_list_make_rename_delete_on_each_server(place):
    (place.disk / "a.txt").write_bytes(b"0123456789")
    (place.disk / "sub").mkdir()
    (place.disk / "sub" / "deeper").mkdir()
    (place.disk / "sub" / "b.bin").write_bytes(os.urandom(4096))
    (place.disk / "sub" / "deeper" / "c.bin").write_bytes(b"c")
    place.give()

    batches: list = []
    entries = _run(list_folder(registry, place.url(), place.options, batches.append, place.backend))
    by_name = {e.name: e for e in entries}
    assert set(by_name) == {"a.txt", "sub"}
    assert sorted(e.name for batch in batches for e in batch) == sorted(by_name)
    assert by_name["a.txt"].size == 10 and not by_name["a.txt"].is_dir
    assert by_name["sub"].is_dir
    assert abs(by_name["a.txt"].mtime - (place.disk / "a.txt").stat().st_mtime) < 61  # LIST: minutes

    _act(place, "mkdir", "made")
    assert (place.disk / "made").is_dir()
    with pytest.raises(BadRequest, match="already something named"):
        _act(place, "mkdir", "made")

    _act(place, "rename", "a.txt", "renamed.txt")
    assert (place.disk / "renamed.txt").read_bytes() == b"0123456789" and not (place.disk / "a.txt").exists()
    with pytest.raises(BadRequest, match="does not replace it"):
        _act(place, "rename", "renamed.txt", "made")
    assert (place.disk / "renamed.txt").exists() and (place.disk / "made").is_dir()
    with pytest.raises(BadRequest, match="cannot be a name"):
        _act(place, "rename", "renamed.txt", "../out.txt")

    gone = _act(place, "delete", "sub")
    assert gone == 4 and not (place.disk / "sub").exists()  # sub itself, deeper, b.bin and c.bin
    assert _act(place, "delete", "renamed.txt") == 1
    with pytest.raises(NotFound):
        _act(place, "delete", "renamed.txt")
    assert sorted(os.listdir(place.disk)) == ["made"]


def test_deleting_a_folder_removes_a_link_in_it_never_what_it_leads_to(sshd):
    place = _ssh(sshd, "link")
    outside = sshd.home / f"keep-{time.monotonic_ns()}"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    (place.disk / "doomed").mkdir()
    (place.disk / "doomed" / "to-outside").symlink_to(outside)
    place.give()
    sshd.give(outside)

    listed = _run(list_folder(registry, place.url("doomed"), place.options, backend_name=place.backend))
    assert [(e.name, e.is_dir, e.link) for e in listed] == [("to-outside", True, True)]
    assert _act(place, "delete", "doomed") == 2
    assert (outside / "precious.txt").read_text() == "keep me"


def test_ten_thousand_entries_arrive_in_batches(sshd):
    place = _ssh(sshd, "many")
    for i in range(10_000):
        (place.disk / f"r{i:05d}.fastq").write_bytes(b"")
    place.give()
    batches: list = []
    entries = _run(list_folder(registry, place.url(), place.options, batches.append))
    assert len(entries) == 10_000 and len({e.name for e in entries}) == 10_000
    assert len(batches) >= 10 and all(len(b) <= 500 for b in batches)
    assert sum(len(b) for b in batches) == 10_000


def test_web_folders_list_with_their_dates_and_are_read_only(nginx, apache, lighttpd):
    for server in (nginx, apache, lighttpd):
        folder = server.data / f"pane-{time.monotonic_ns()}"
        (folder / "sub").mkdir(parents=True)
        (folder / "reads_1.fastq").write_bytes(b"x" * 12345)
        options = TransferOptions(ca_file=getattr(server, "ca_file", None))
        url = server.url(f"/{folder.name}/")
        entries = {e.name: e for e in _run(list_folder(registry, url, options))}
        assert set(entries) == {"reads_1.fastq", "sub"}, server
        assert entries["sub"].is_dir and not entries["reads_1.fastq"].is_dir
        listed = entries["reads_1.fastq"]
        if server is apache:  # Apache without FancyIndexing lists names only: nothing else is made up
            assert (listed.mtime, listed.size) == (None, None), _page(url, options)
        else:
            assert listed.mtime is not None, (server, _page(url, options))
            assert abs(listed.mtime - (folder / "reads_1.fastq").stat().st_mtime) < 120, server
        if server is nginx:  # autoindex_exact_size on: bytes; lighttpd rounds (12.1K), so the size stays blank
            assert listed.size == 12345
        elif server is lighttpd:
            assert listed.size is None
        with pytest.raises(TransferError, match="read-only"):
            _run(change_folder(registry, "mkdir", server.url(f"/{folder.name}/new/"), options))


def _page(url: str, options: TransferOptions) -> str:
    """The listing page itself, for a failure's message."""
    import ssl
    import urllib.request

    context = ssl.create_default_context(cafile=options.ca_file) if url.startswith("https") else None
    with urllib.request.urlopen(url, context=context) as answer:
        return answer.read().decode()[:3000]


def test_globus_url_copy_lists_what_ferry_cannot_reach_itself(gridftp):
    """gsiftp:// and sshftp:// folders are listed by ``globus-url-copy -list`` (the same code as for an ftp://
    GridFTP server here): names with spaces, folders told apart, a missing folder in a sentence."""
    from backends.gridftp.browse import list_with_tool

    folder = gridftp.data / f"tool-{time.monotonic_ns()}"
    (folder / "sub dir").mkdir(parents=True)
    (folder / "a b.txt").write_text("ten bytes!")
    (folder / "c.bin").write_bytes(b"c")
    for path in (folder, *folder.rglob("*")):
        gridftp.give(path)
    batches: list = []
    entries = _run(list_with_tool(gridftp.url(folder, folder=True), batches.append))
    assert sorted((e.name, e.is_dir) for e in entries) == [("a b.txt", False), ("c.bin", False), ("sub dir", True)]
    assert [e for batch in batches for e in batch] == entries
    with pytest.raises(NotFound):
        _run(list_with_tool(gridftp.url(folder / "nope", folder=True)))
