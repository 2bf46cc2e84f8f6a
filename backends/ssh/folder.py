"""Folder downloads over SSH: small files as ``tar`` streams, large ones with parallel streams (uploads:
``folder_upload.py``).

``scp -r`` spends a round trip per file (≈ 0.2 s each at 50 ms); a tar stream sends
thousands of small files as fast as one file of the same size. Large files in the same
folder go through ``download.py`` (parallel streams) at the same time as the tar stream.
Every file is hashed on both ends: locally while it is written or read, and by the
server in one ``sha256sum`` pass over the list.

The folder's ``sha256`` in history is that of its manifest (one ``HEX  PATH`` line per
file, sorted), so two copies of a folder compare with one string.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat as statmod
from dataclasses import replace
from pathlib import Path

from ..core.base import NOT_COMPARED, Sink, TransferOptions
from ..core.depth import deepest, too_deep
from ..core.errors import Corrupt
from ..core.words import agrees, counted
from ..destination import Destination, WholeFile, check_folder, os_error
from ..host import portable
from ..streams.folder import FileOutcome, FileSink, Totals, choose, wire_of
from ..streams.hashing import manifest_digest
from ..streams.ratelimit import limiter_for
from .address import Entry, remote_join
from .compression import compress_tar
from .download import download_file
from .faults import dropped_is_transient
from .session import SMALL_FILE, SshSession
from .untar import EarlyTar, tar_get

TAR_STREAMS = 4


# -- downloads ---------------------------------------------------------------------------------

async def download_tree(session: SshSession, root: str, dest: Path, options: TransferOptions,
                        sink: Sink | None) -> FileOutcome:
    """The folder ``root`` into ``dest``: the listing is the server's word, so every name goes through the
    destination's claims (made safe, nothing outside DEST, no link entered) before anything is written."""
    destination = Destination(dest, named_here=options.name_from_source)
    files, folders = await _claimed(session, root, destination, options, sink)
    small = [e for e in files if e.size < SMALL_FILE]
    large = [e for e in files if e.size >= SMALL_FILE]
    totals = Totals(sum(e.size for e in files), limiter=limiter_for(options))
    hashes: dict[str, str] = {}
    methods: set[str] = set()

    outcomes: list[FileOutcome] = []

    async def large_files() -> int:
        moved = 0
        for entry in large:
            out = await download_file(session, entry, remote_join(root, entry.rel), destination.file(entry.saved),
                                      options,
                                      FileSink(totals, entry.rel, sink), f"{session.target.display}|{entry.rel}")
            outcomes.append(out)
            hashes[entry.rel] = out.sha256
            methods.add(out.verify_method)
            totals.live.pop(entry.rel, None)
            totals.done += entry.size
            moved += out.moved
            totals.report(sink)
        return moved

    # the server hashes the small files while it sends them (they are in its page cache by then)
    server_sums = asyncio.ensure_future(session.sha256_many(root, [e.rel for e in small] if options.verify else []))
    wire = [] if session.openssh is not None and await compress_tar(
        session, options, [(e.rel, e.size) for e in small], sink, root) else None
    small_task = _small_downloads(session, root, destination, small, totals, sink, wire)
    try:
        small_hashes, moved_large = await asyncio.gather(small_task, large_files())
    except BaseException:
        server_sums.cancel()
        raise
    hashes.update(small_hashes)
    _folder_times(destination, folders)
    check_folder(destination, [(e.rel, e.size) for e in files])
    verified, method = check_small(small_hashes, [e.rel for e in small], await server_sums) if options.verify \
        else (False, NOT_COMPARED)
    methods.add(method)
    all_verified = verified and all(m.startswith("sha256") for m in methods)
    summary = f"{counted(len(files), 'file')} ({len(small)} in a tar stream, {len(large)} in parallel streams); " + \
        "; ".join(sorted(methods))
    if sink:
        sink.stage("verifying")
    plain = totals.total - sum(e.size for e in large)
    return FileOutcome(totals.total, plain + moved_large, max(1, totals.streams), manifest_digest(hashes),
                       all_verified, summary,
                       on_wire=wire_of(plain, wire, outcomes))


async def _claimed(session: SshSession, root: str, destination: Destination, options: TransferOptions,
                   sink: Sink | None) -> tuple[list[Entry], list[Entry]]:
    """The server's listing of ``root`` claimed below DEST (every name made safe, numbered where two would
    collide, said when changed), its folders made: returns the files to fetch (``--sync`` leaves some out) and
    the folders."""
    walked = await session.walk(root)
    if deepest([e.rel for e in walked if e.is_dir]) > options.max_depth:
        raise too_deep(session.target.display, options.max_depth)
    destination.claim_all([e.rel for e in walked if not e.is_dir], [e.rel for e in walked if e.is_dir])
    entries = [replace(e, saved=destination.claim(e.rel, folder=e.is_dir)) for e in sorted(walked,
                                                                                            key=lambda e: e.rel)]
    files = choose([e for e in entries if statmod.S_ISREG(e.mode)], destination, options, sink)
    folders = [e for e in entries if e.is_dir]
    destination.folder("")
    for entry in folders:
        _writable_folder(destination.folder(entry.saved))
    renamed = destination.renamed_note()
    if renamed and sink:
        sink.note(renamed)
    return files, folders


def _folder_times(destination: Destination, folders: list[Entry]) -> None:
    """Every file is in: the folders get their own modes and times, deepest first."""
    for entry in sorted(folders, key=lambda e: e.rel.count("/"), reverse=True):
        folder = destination.path(entry.saved)
        try:
            portable.set_mode(folder, entry.mode & 0o777)
            os.utime(folder, (entry.mtime, entry.mtime))
        except OSError as exc:
            raise os_error(exc, folder, "write") from None


def _writable_folder(path: Path) -> None:
    """``path`` (made by ``Destination.folder``) as a folder this job can write into: a read-only folder of an
    earlier copy (with --sync or --overwrite) is given owner rwx until the end, when it gets the server's mode
    again."""
    mode = os.stat(path).st_mode
    if mode & 0o700 != 0o700:
        portable.set_mode(path, mode | 0o700)


def split_groups(items: list, size_of, count: int) -> list[list]:
    """Split ``items`` into ``count`` groups of about equal bytes (largest first, into the lightest group)."""
    groups: list[list] = [[] for _ in range(max(1, count))]
    loads = [0] * len(groups)
    for item in sorted(items, key=size_of, reverse=True):
        i = loads.index(min(loads))
        groups[i].append(item)
        loads[i] += size_of(item) + 512  # a tar header per file
    return [g for g in groups if g]


def tar_stream_count(items: list, size_of) -> int:
    """Parallel tar streams: more TCP windows ramp up faster, but each costs a login."""
    total = sum(size_of(i) for i in items)
    return max(1, min(TAR_STREAMS, len(items) // 200 + 1, total // (2 * 1024 * 1024) + 1))


async def over_masters(session: SshSession, groups: list[list], work) -> list:
    """Run ``await work(group, master)`` for each group, each over its own multiplexed OpenSSH connection."""
    masters = await asyncio.gather(*(session.openssh.open_master() for _ in groups))
    try:
        return await asyncio.gather(*(work(g, m) for g, m in zip(groups, masters, strict=True)))
    finally:  # the lead connection still answers the folder's hashes
        await asyncio.gather(*(m.stop() for m in masters if not session.openssh.owns(m)))


async def _small_downloads(session: SshSession, root: str, dest: Destination, small: list[Entry], totals: Totals,
                           sink: Sink | None, wire: list[int] | None = None) -> dict[str, str]:
    """``wire``: the tar streams come as zstd frames; what crossed is added to it."""
    if not small:
        return {}
    if session.openssh is None:
        return await asyncio.to_thread(_sftp_small_get, session, root, dest, small, totals, sink)
    groups = split_groups(small, lambda e: e.size, tar_stream_count(small, lambda e: e.size))

    def fetch(group: list[Entry], socket, early: EarlyTar | None) -> dict[str, str]:
        key = f"tar:{id(group)}"

        def progress(nbytes: int) -> None:
            totals.pay(nbytes - totals.live.get(key, 0))
            totals.live[key] = nbytes
            totals.report(sink)

        hashes = tar_get(session, root, dest, group, progress, socket, early, wire)
        totals.live.pop(key, None)
        totals.add(sum(e.size for e in group), sink)
        return hashes

    async def over(group: list[Entry], master) -> dict[str, str]:
        # the channel this connection opened at login on the folder's path saves a new channel's round trips
        early = master.take_early()
        if early is not None and early[1] is None:  # a direct login's (``direct.py``): no pipe a thread can read
            session.openssh.discard(early[0])
            early = None
        if early is None:
            return await asyncio.to_thread(fetch, group, master.socket, None)
        proc, sent = await EarlyTar.ask(early, [e.rel for e in group], wire is not None)
        try:
            return await asyncio.to_thread(fetch, group, master.socket, proc)
        finally:
            sent.cancel()  # done by now, unless the stream failed before reading every name
            await asyncio.gather(sent, return_exceptions=True)

    results = await over_masters(session, groups, over)
    return {rel: digest for result in results for rel, digest in result.items()}


def _sftp_small_get(session: SshSession, root: str, dest: Destination, small: list[Entry], totals: Totals,
                    sink: Sink | None) -> dict[str, str]:
    hashes = {}
    sftp = session.control.own_sftp()  # this thread's data channel (prefetch answers stay on it)
    try:
        with dropped_is_transient(session.target.host):
            for entry in small:
                remote = remote_join(root, entry.rel)
                with sftp.open(remote, "rb") as fh, WholeFile(dest.file(entry.saved), entry.size,
                                                              f"{session.target.display}:{remote}") as out:
                    fh.prefetch(entry.size)
                    data = fh.read(entry.size + 1)
                    out.write(data)
                    out.commit(entry.mtime, entry.mode)
                hashes[entry.rel] = hashlib.sha256(data).hexdigest()
                totals.pay(entry.size)
                totals.add(entry.size, sink)
    finally:
        sftp.close()
    return hashes


def check_small(hashes: dict[str, str], rels: list[str], server: list[str | None]) -> tuple[bool, str]:
    """Compare the small files' hashes here with the server's (same order as ``rels``)."""
    if not rels:
        return True, "sha256 computed by the server matched"
    if any(s is None for s in server):
        return False, "small files: the server could not hash them (no sha256 tool or no shell); sizes checked"
    bad = [r for r, s in zip(rels, server, strict=True) if s != hashes.get(r)]
    if bad:
        raise Corrupt(f"{counted(len(bad), 'file')} {agrees(len(bad), 'differs', 'differ')} from the server's "
                      f"SHA-256 (for example {bad[0]}). Run the transfer again with --sync.")
    return True, "sha256 computed by the server matched for every small file"
