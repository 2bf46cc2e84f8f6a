"""Folder uploads over SSH: small files as parallel ``tar`` streams into the server's ``tar -x``, large ones
through ``upload.py``'s parallel streams at the same time, then the folders' own modes and times.

Every file is hashed on both ends: here while it is read, and by the server in one ``sha256sum`` pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat as statmod
import subprocess
import tarfile
import time
from pathlib import Path

from ..core.base import NOT_COMPARED, Sink, TransferOptions
from ..core.errors import LocalError
from ..core.words import agrees, counted
from ..host.procs import child_argv, child_kwargs
from ..streams.folder import FileOutcome, FileSink, Totals, wire_of
from ..streams.hashing import manifest_digest
from ..streams.ratelimit import limiter_for
from . import scripts, squeeze
from .address import Entry, remote_join
from .compression import compress_tar
from .faults import dropped_is_transient
from .folder import check_small, over_masters, split_groups, tar_stream_count
from .openssh import ssh_error
from .session import SMALL_FILE, SshSession
from .upload import upload_file


def _walk_local(root: Path) -> tuple[list[tuple[str, os.stat_result]], list[str], list[str]]:
    """Files (symlinks followed: their content goes, as ``scp -r`` and the downloads' ``find -L`` do), folders,
    and the links that lead nowhere (left out; the job says so)."""
    files, folders, broken = [], [], []
    for folder, dirnames, filenames in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        for name in sorted(dirnames):
            folders.append(name if rel_folder == "." else f"{rel_folder}/{name}")
        for name in sorted(filenames):
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            try:
                st = os.stat(os.path.join(folder, name))
            except FileNotFoundError:
                broken.append(rel)
                continue
            if statmod.S_ISREG(st.st_mode):
                files.append((rel, st))
    return files, folders, broken


async def upload_tree(session: SshSession, root: Path, remote_root: str, options: TransferOptions,
                      sink: Sink | None, records: Path, there: Entry | None = None) -> FileOutcome:
    """``root`` into ``remote_root``; ``there`` is ``remote_root``'s entry when it exists already."""
    control = session.control
    files, folders, broken = await asyncio.to_thread(_walk_local, root)
    if broken and sink:
        sink.note(f"Left out {len(broken)} symbolic link(s) in {root} that lead nowhere (for example {broken[0]}).")
    existing = {e.rel: e for e in await asyncio.to_thread(control.walk_fast, remote_root)} if there else {}
    files = _wanted(files, existing, options, sink, (remote_root, session.target.host))
    locked = ([(remote_root, there.mode)] if there and there.mode & 0o700 != 0o700 else []) + [
        (remote_join(remote_root, rel), existing[rel].mode) for rel in folders
        if rel in existing and existing[rel].mode & 0o700 != 0o700]
    if locked:  # read-only folders of an earlier copy: writable until _set_folders
        await asyncio.to_thread(_open_folders, session, locked)
    await asyncio.to_thread(control.mkdirs, remote_root)
    small = [(rel, st) for rel, st in files if st.st_size < SMALL_FILE]
    large = [(rel, st) for rel, st in files if st.st_size >= SMALL_FILE]
    for parent in sorted({rel.rsplit("/", 1)[0] for rel, _ in large if "/" in rel}):
        await asyncio.to_thread(control.mkdirs, remote_join(remote_root, parent))
    totals = Totals(sum(st.st_size for _, st in files), limiter=limiter_for(options))
    hashes: dict[str, str] = {}
    methods: set[str] = set()

    outcomes: list[FileOutcome] = []

    async def large_files() -> int:
        moved = 0
        for rel, st in large:
            out = await upload_file(session, root / rel, remote_join(remote_root, rel), options,
                                    FileSink(totals, rel, sink), records)
            outcomes.append(out)
            hashes[rel] = out.sha256
            methods.add(out.verify_method)
            totals.live.pop(rel, None)
            totals.done += st.st_size
            moved += out.moved
        return moved

    wire = [] if session.openssh is not None and await compress_tar(
        session, options, [(rel, st.st_size) for rel, st in small], sink, remote_root, root) else None
    small_hashes, moved_large = await asyncio.gather(
        _small_uploads(session, root, remote_root, small, folders, totals, sink, wire), large_files())
    hashes.update(small_hashes)
    await asyncio.to_thread(_set_folders, session, root, remote_root, folders, {rel for rel, _ in files}, sink)
    rels = [rel for rel, _ in small]
    if options.verify:
        server = await asyncio.to_thread(control.sha256_many, remote_root, rels)
        verified, method = check_small(small_hashes, rels, server)
    else:
        verified, method = False, NOT_COMPARED
    methods.add(method)
    summary = f"{counted(len(files), 'file')} ({len(small)} in a tar stream, {len(large)} in parallel streams); " + \
        "; ".join(sorted(methods))
    all_verified = verified and all(m.startswith("sha256") for m in methods)
    plain = totals.total - sum(st.st_size for _, st in large)
    return FileOutcome(totals.total, plain + moved_large, max(1, totals.streams), manifest_digest(hashes),
                       all_verified, summary,
                       on_wire=wire_of(plain, wire, outcomes))


def _wanted(files: list, existing: dict, options: TransferOptions, sink: Sink | None, where: tuple[str, str]) -> list:
    """The local files to send: with ``--sync``, those not already on the server unchanged (said); otherwise
    all, and a file already there is refused unless ``--overwrite``. ``where``: the remote folder and host."""
    remote_root, host = where
    if options.sync:
        keep = []
        for rel, st in files:
            old = existing.get(rel)
            if old is None or old.size != st.st_size or old.mtime != int(st.st_mtime):
                keep.append((rel, st))
        if sink and len(keep) < len(files):
            same = len(files) - len(keep)
            sink.note(f"Sync: {counted(same, 'file')} {agrees(same, 'is', 'are')} already on the server, unchanged; "
                      "skipped.")
        files = keep
    elif not options.overwrite:
        clashes = [rel for rel, _ in files if rel in existing]
        if clashes:
            raise LocalError(f"{len(clashes)} of the files already exist in {remote_root} on {host} "
                             f"(for example {clashes[0]}). Use --sync (in the app: Skip unchanged files) to keep those "
                             "that are unchanged, or --overwrite (Replace them) to replace them.")
    return files


def _open_folders(session: SshSession, locked: list[tuple[str, int]]) -> None:
    """Give the existing read-only folders an upload writes into owner rwx (one command, or SFTP per folder)."""
    control = session.control
    if control.can_exec():
        status, _, err = control.run(scripts.OPEN_FOLDERS, b"".join(scripts.encode_path(path) for path, _ in locked))
        if status != 0:
            raise ssh_error(err.decode("utf-8", "replace"), session.target)
        return
    for path, mode in locked:
        control.finish_file(path, mode | 0o700, None)


def _set_folders(session: SshSession, root: Path, remote_root: str, folders: list[str], sent: set[str],
                 sink: Sink | None) -> None:
    """Give the server's folders the local ones' mode and time, deepest first, once all files are in.

    One command where the account runs commands; over SFTP (an account without), the folders no file went into
    are made first, then each gets its mode and time (two round trips a folder)."""
    control = session.control
    deepest_first = [*sorted(folders, key=lambda r: r.count("/"), reverse=True), "."]
    stamps = [(remote_root if rel == "." else remote_join(remote_root, rel), os.stat(root / rel))
              for rel in deepest_first]
    if session.openssh is not None and control.can_exec():
        lines = [f"{st.st_mode & 0o777:o} {time.strftime('%Y%m%d%H%M.%S', time.gmtime(st.st_mtime))} ".encode()
                 + scripts.encode_path(path) for path, st in stamps]
        status, _, err = control.run(scripts.SET_FOLDERS, b"".join(lines))
        if status != 0 and sink:
            message = err.decode("utf-8", "replace").strip().splitlines()
            sink.note(f"The files arrived, but the server would not take the folders' permissions and times "
                      f"({message[0] if message else f'status {status}'}).")
        return
    holding = {parent for rel in sent for parent in _parents(rel)}
    for rel in sorted(set(folders) - holding, key=lambda r: r.count("/")):  # empty folders, parents first
        control.mkdirs(remote_join(remote_root, rel))
    for path, st in stamps:
        control.finish_file(path, st.st_mode & 0o777, int(st.st_mtime))


def _parents(rel: str) -> list[str]:
    """The folders ``rel`` is in: "a/b/c" → ["a", "a/b"]."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


async def _small_uploads(session: SshSession, root: Path, remote_root: str, small, folders: list[str],
                         totals: Totals, sink: Sink | None, wire: list[int] | None = None) -> dict[str, str]:
    """``wire``: each tar stream goes as one zstd frame; what crossed is added to it."""
    if not small and not folders:
        return {}
    if session.openssh is None:
        return await asyncio.to_thread(_sftp_small_put, session, root, remote_root, small, totals, sink)
    groups = split_groups(small, lambda item: item[1].st_size, tar_stream_count(small, lambda item: item[1].st_size))
    groups = groups or [[]]
    results = await over_masters(session, groups, lambda group, master: asyncio.to_thread(
        _tar_put, session, root, remote_root, group, folders, totals, sink, master.socket, wire))
    return {rel: digest for result in results for rel, digest in result.items()}


def _tar_put(session: SshSession, root: Path, remote_root: str, small, folders: list[str], totals: Totals,
             sink: Sink | None, socket, wire: list[int] | None = None) -> dict[str, str]:
    """One tar stream to the server's ``tar -x``: every folder first (parents before children), then ``small``.

    Every stream carries every folder. The streams unpack side by side, and GNU tar gives up on a file whose
    folder is missing when another process creates that folder between its failed open and its own
    ``mkdir`` (``maybe_recoverable``: ENOENT is retried only when this tar made the folder itself): a file
    fails with "Cannot open: No such file or directory" (1,600 files in 400 new folders: 2 of 3 test runs
    while only the first stream carried the folders). A folder that exists already is fine for tar. Folders
    go owner-writable (each stream applies that at its end); ``_set_folders`` gives them their own mode last.
    """
    argv = session.openssh.channel_argv(socket, scripts.command(
        scripts.TAR_EXTRACT_Z if wire is not None else scripts.TAR_EXTRACT))
    proc = subprocess.Popen(child_argv(argv), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, **child_kwargs())
    hashes: dict[str, str] = {}
    out = squeeze.StreamPacker(proc.stdin) if wire is not None else proc.stdin
    try:
        proc.stdin.write(scripts.encode_path(remote_root))
        # dereference: a symlinked file goes as the file it names (a link header with data broke the stream)
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT, dereference=True) as tar:
            for rel in folders:
                info = tar.gettarinfo(str(root / rel), arcname=rel)
                info.mode |= 0o700  # writable while the streams fill it: its own mode is set at the end
                tar.addfile(info)
            for rel, _ in small:
                info = tar.gettarinfo(str(root / rel), arcname=rel)
                with open(root / rel, "rb") as fh:
                    data = fh.read()
                hashes[rel] = hashlib.sha256(data).hexdigest()
                info.size = len(data)
                totals.pay(len(data))
                tar.addfile(info, _Bytes(data))
                totals.add(len(data), sink)
        if out is not proc.stdin:
            out.end()
            wire.append(out.wire)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the remote side failed; its stderr says why
    status = proc.wait()
    if status != 0:
        raise ssh_error(proc.stderr.read().decode("utf-8", "replace"), session.target)
    return hashes


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def read(self, n: int = -1) -> bytes:
        chunk = self.data[self.pos:] if n < 0 else self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk


def _sftp_small_put(session: SshSession, root: Path, remote_root: str, small, totals: Totals,
                    sink: Sink | None) -> dict[str, str]:
    hashes = {}
    control = session.control
    sftp = control.own_sftp()  # this thread's data channel; the shared one is for the control's own calls
    try:
        with dropped_is_transient(session.target.host):
            for rel, st in small:
                if "/" in rel:
                    control.mkdirs(remote_join(remote_root, rel.rsplit("/", 1)[0]))
                data = (root / rel).read_bytes()
                target = remote_join(remote_root, rel)
                with sftp.open(target + ".part", "wb") as fh:
                    fh.set_pipelined(True)
                    fh.write(data)
                control.rename(target + ".part", target)
                control.finish_file(target, st.st_mode, int(st.st_mtime))
                hashes[rel] = hashlib.sha256(data).hexdigest()
                totals.pay(len(data))
                totals.add(len(data), sink)
    finally:
        sftp.close()
    return hashes
