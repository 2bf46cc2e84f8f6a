"""Folders over GridFTP: ``-r -fast -cc N`` (recursion, reused data channels, N files at once).

A folder goes to a staging copy next to its destination (``NAME.part``) and takes its
final name when globus-url-copy finished and every file checked out, so a failed run
never leaves a half-filled folder under the final name. A retry re-runs into the staging
copy with ``-sync -sync-level 1``, which skips the files already there. A re-run onto an
existing destination (``--sync``) copies into it directly with ``-sync``, which is what
sync means.

Checksums: globus-url-copy 10.x's ``-verify-checksum`` cannot be used with ``-r`` (it asks
the server to checksum the folders themselves and fails with "Is a directory"), so Ferry
asks for every file's ``CKSM SHA256`` itself, over several control connections, on the
source *while* the copy runs and on the destination after it; local files are hashed by
Ferry. A file whose digests differ is deleted from the copy before the error, so the
retry (which skips files of the right size) fetches it again.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..core.base import NOT_COMPARED, Result, Sink, TransferOptions
from ..core.depth import deepest, too_deep
from ..core.errors import Corrupt, LocalError, TransferError
from ..core.options import read_options
from ..core.words import agrees, counted
from ..destination import Destination, check_folder, move_into_place, os_error
from ..destination.names import portable_path
from ..destination.place import link_refused
from ..host import portable
from ..streams.hashing import hash_file, manifest_digest
from . import guc
from .address import GridUrl, local_url
from .control import Control, Entry, checksums
from .copy import Copy
from .options import GridftpOptions
from .tuning import Plan

SYNC_LEVELS = {"size": 1, "size-mtime": 2, "checksum": 3}


def folder_options(plan: Plan, options: TransferOptions, files: int, sync_level: int | None) -> guc.Options:
    """Split the plan's streams between files at once (-cc) and streams per file (-p)."""
    concurrency = max(1, min(8, files))
    per_file = max(1, plan.streams // concurrency)
    own = read_options(GridftpOptions, options.backend_options)
    return guc.Options(streams=per_file, tcp_bs=plan.tcp_bs, recursive=True, concurrency=concurrency,
                       sync_level=sync_level, restart_retries=own.restart_retries, udt=own.transport == "udt")


def _sync_level(options: TransferOptions) -> int | None:
    return SYNC_LEVELS.get(options.sync or "", None) if options.sync else None


def hash_tree(root: Path, rels: list[str]) -> dict[str, str]:
    return {rel: hash_file(root / rel)["sha256"] for rel in rels}


def _check_sizes(root: Path, files: list[Entry]) -> None:
    for entry in files:
        try:
            size = (root / entry.rel).stat().st_size
        except OSError:
            raise Corrupt(f"{entry.rel} is missing from the copy. Run the transfer again.") from None
        if size != entry.size:
            raise Corrupt(f"{entry.rel} has {size} bytes in the copy but {entry.size} on the server. "
                          "Run the transfer again.")


def _apply_times(root: Path, entries: list[Entry]) -> None:
    """Keep the server's modes and modification times (globus-url-copy does not)."""
    for entry in sorted(entries, key=lambda e: -e.rel.count("/")):
        path = root / entry.rel
        try:
            if entry.mode is not None:
                portable.set_mode(path, entry.mode | (0o700 if entry.is_dir else 0o600))
            if entry.mtime:
                os.utime(path, (entry.mtime, entry.mtime))
        except OSError:
            pass


def _move_into(staging: Path, dest: Path, listing: list[Entry]) -> Destination:
    """The finished staging copy's files moved into ``dest`` one by one through the destination (names made safe,
    no link entered or replaced), its folders given the server's modes and times; the staging folder then goes.
    Returns the destination (its renames)."""
    destination = Destination(dest)
    listing = [e for e in listing if e.rel]  # not the folder itself
    destination.claim_all([e.rel for e in listing if not e.is_dir], [e.rel for e in listing if e.is_dir])
    for entry in sorted(listing, key=lambda e: e.rel):
        saved = destination.claim(entry.rel, folder=entry.is_dir)
        if entry.is_dir:
            destination.folder(saved)
        else:
            mode = entry.mode | 0o600 if entry.mode is not None else None
            move_into_place(staging / entry.rel, destination.file(saved), entry.mtime or None, mode)
    _apply_times(dest, [replace(e, rel=destination.claim(e.rel, folder=True)) for e in listing if e.is_dir])
    shutil.rmtree(staging, ignore_errors=True)
    check_folder(destination, [(e.rel, e.size) for e in listing if not e.is_dir])
    return destination


def _links_below(dest: Path, limit: int = 100_000) -> Path | None:
    """The first link below ``dest`` (globus-url-copy, writing there itself with --sync, would follow it)."""
    seen = 0
    for folder, dirs, names in os.walk(dest):
        for name in dirs + names:
            path = Path(folder) / name
            if os.path.islink(path):
                return path
            seen += 1
            if seen > limit:
                return None
    return None


async def download(remote: GridUrl, listing: list[Entry], dest: Path, plan: Plan, options: TransferOptions,
                   sink: Sink) -> Result:
    began = time.monotonic()
    if deepest([e.rel for e in listing if e.is_dir]) > options.max_depth:
        raise too_deep(remote.text(folder=True), options.max_depth)
    files = [e for e in listing if not e.is_dir]
    total = sum(e.size for e in files)
    sync = _sync_level(options)
    # with --sync, globus-url-copy writes into DEST itself: only where no link is there to follow and every name
    # is one every OS accepts; otherwise the files come into the staging copy and move in through the destination
    direct = sync is not None and dest.is_dir() and all(not e.rel or not portable_path(e.rel)[1] for e in listing)
    if direct and (link := _links_below(dest)) is not None:
        raise link_refused(link)
    if dest.exists() and not dest.is_dir():
        raise LocalError(f"{dest} is a file, but the source is a folder. Choose another destination.")
    if dest.is_dir() and not direct and any(dest.iterdir()) and not options.overwrite:
        raise LocalError(f"{dest} already exists and is not empty. Pass --sync to update it, --overwrite to "
                         "replace files in it, or choose another destination.")
    target = dest if direct else dest.with_name(dest.name + ".part")
    if not direct and target.is_dir():
        sync = 1  # a retry: keep what the last attempt finished
    Destination(target.parent).folder(target.name)  # made, entering no link (a sentence naming one)
    rels = [e.rel for e in files]
    source_sums = _server_sums(remote, rels, options)
    opts = folder_options(plan, options, len(files), sync)
    copy = Copy(remote.text(folder=True), local_url(target, folder=True), opts, sink, total,
                sizes={e.rel: e.size for e in files}, source_root=remote.path)
    await _copy_alongside(copy, source_sums, sink)
    await asyncio.to_thread(_check_sizes, target, files)
    hashes = await asyncio.to_thread(hash_tree, target, rels)
    verified, method = _judge(await _settled(source_sums), hashes, "server", lambda rel: (target / rel).unlink())
    await asyncio.to_thread(_apply_times, target, listing)
    if not direct:
        try:
            moved = await asyncio.to_thread(_move_into, target, dest, listing)
        except OSError as exc:
            raise os_error(exc, dest, "move the finished folder to") from exc
        if moved.renamed_note():
            sink.note(moved.renamed_note())
    if not options.verify:
        verified, method = False, NOT_COMPARED
    return Result(total, time.monotonic() - began, opts.streams * opts.concurrency, manifest_digest(hashes),
                  verified, method, peer_host=remote.host, bytes_fetched=total, notes=[_shape(opts, files)])


def _server_sums(url: GridUrl, rels: list[str], options: TransferOptions) -> asyncio.Future:
    """The source server hashes every file (over several connections) while the copy runs."""
    return asyncio.ensure_future(asyncio.to_thread(checksums, url, url.path, rels if options.verify else []))


async def _copy_alongside(copy: Copy, background: asyncio.Future, sink: Sink) -> None:
    """Run the copy while ``background`` (checksums or hashes) works; stop it too if the copy fails."""
    try:
        await copy.run()
    except BaseException:
        background.cancel()
        raise
    sink.stage("verifying")


async def _settled(future: asyncio.Future) -> dict[str, str | None]:
    """The checksums a background task got, or none when its connections failed (then sizes decide)."""
    try:
        return await future
    except TransferError:
        return {}


def _shape(opts: guc.Options, files: list[Entry]) -> str:
    return f"{counted(len(files), 'file')}, {opts.concurrency} at a time with {counted(opts.streams, 'stream')} each."


def _judge(theirs: dict[str, str | None], ours: dict[str, str], who: str,
           drop: Callable[[str], None]) -> tuple[bool, str]:
    """Compare per-file digests; a damaged file is dropped from the copy before the error."""
    bad = [rel for rel, digest in ours.items() if theirs.get(rel) and theirs[rel] != digest]
    if bad:
        for rel in bad:
            try:
                drop(rel)
            except (OSError, TransferError):
                pass
        raise Corrupt(f"{counted(len(bad), 'file')} {agrees(len(bad), 'differs', 'differ')} from the {who}'s copy "
                      f"(first: {bad[0]}); Ferry removed them. Run the transfer again to fetch them anew.")
    if ours and all(theirs.get(rel) for rel in ours):
        return True, f"sha256 of every file computed by the {who} matched"
    return False, f"sizes of every file checked (the {who} could not compute sha256 for all of them)"


def local_tree(source: Path) -> list[Entry]:
    entries = []
    for folder, dirs, names in os.walk(source):
        for name in dirs + names:
            path = Path(folder) / name
            st = path.lstat()
            entries.append(Entry(str(path.relative_to(source)), path.is_dir(), st.st_size, st.st_mtime,
                                 st.st_mode & 0o7777))
    return entries


async def upload(source: Path, remote: GridUrl, plan: Plan, options: TransferOptions, sink: Sink,
                 control: Control | None, exists: bool) -> Result:
    """A local folder to ``remote`` (the folder's path on the server)."""
    began = time.monotonic()
    listing = await asyncio.to_thread(local_tree, source)
    files = [e for e in listing if not e.is_dir]
    total = sum(e.size for e in files)
    sync = _sync_level(options)
    direct = control is None or exists
    target = remote if direct else remote.sibling(remote.name + ".part")
    if not direct and await asyncio.to_thread(control.stat, target.path) is not None:
        sync = 1  # a retry: keep what the last attempt finished
    opts = folder_options(plan, options, len(files), sync)
    rels = [e.rel for e in files]
    hashes = asyncio.ensure_future(asyncio.to_thread(hash_tree, source, rels))
    copy = Copy(local_url(source, folder=True), target.text(folder=True), opts, sink, total,
                sizes={e.rel: e.size for e in files}, source_root=str(source.absolute()))
    await _copy_alongside(copy, hashes, sink)
    ours = await hashes
    verified, method = False, "sizes not checked (this server offers no listing to Ferry)"
    if control is not None:
        await _check_remote_sizes(control, target, files)
        theirs = await asyncio.to_thread(checksums, remote, target.path, rels if options.verify else [])
        verified, method = _judge(theirs, ours, "server", lambda rel: control.remove(f"{target.path}/{rel}"))
        if not direct:
            await asyncio.to_thread(control.rename, target.path, remote.path)
    if not options.verify:
        verified, method = False, NOT_COMPARED
    return Result(total, time.monotonic() - began, opts.streams * opts.concurrency, manifest_digest(ours),
                  verified, method, peer_host=remote.host, bytes_fetched=total, notes=[_shape(opts, files)])


async def _check_remote_sizes(control: Control, target: GridUrl, files: list[Entry]) -> None:
    remote_files = {e.rel: e.size for e in await asyncio.to_thread(control.walk, target.path) if not e.is_dir}
    missing = [e.rel for e in files if remote_files.get(e.rel) != e.size]
    if missing:
        raise Corrupt(f"{counted(len(missing), 'file')} did not arrive whole on {target.where} (first: {missing[0]}). "
                      "Run the transfer again; the finished files are kept.")


async def third_party(source: GridUrl, listing: list[Entry], dest: GridUrl, plan: Plan, options: TransferOptions,
                      sink: Sink, control: Control | None, exists: bool) -> Result:
    began = time.monotonic()
    if deepest([e.rel for e in listing if e.is_dir]) > options.max_depth:
        raise too_deep(source.text(folder=True), options.max_depth)
    files = [e for e in listing if not e.is_dir]
    total = sum(e.size for e in files)
    direct = control is None or exists
    target = dest if direct else dest.sibling(dest.name + ".part")
    sync = _sync_level(options)
    if not direct and await asyncio.to_thread(control.stat, target.path) is not None:
        sync = 1
    opts = folder_options(plan, options, len(files), sync)
    rels = [e.rel for e in files]
    source_sums = _server_sums(source, rels, options)
    copy = Copy(source.text(folder=True), target.text(folder=True), opts, sink, total,
                sizes={e.rel: e.size for e in files}, source_root=source.path)
    await _copy_alongside(copy, source_sums, sink)
    theirs = await _settled(source_sums)
    verified, method, digest = False, "sizes not checked (the servers offer no listing to Ferry)", None
    if control is not None:
        await _check_remote_sizes(control, target, files)
        arrived = await asyncio.to_thread(checksums, dest, target.path, rels if options.verify else [])
        if all(arrived.get(rel) for rel in rels):
            verified, method = _judge(theirs, {rel: arrived[rel] for rel in rels}, "source server",
                                      lambda rel: control.remove(f"{target.path}/{rel}"))
            digest = manifest_digest(arrived)
        else:
            method = "sizes of every file checked (the destination could not compute sha256)"
        if not direct:
            await asyncio.to_thread(control.rename, target.path, dest.path)
    if not options.verify:
        verified, method = False, NOT_COMPARED
    return Result(total, time.monotonic() - began, opts.streams * opts.concurrency, digest, verified, method,
                  peer_host=source.host, bytes_fetched=total, notes=[_shape(opts, files)])
