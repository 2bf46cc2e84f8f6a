"""Fetching a torrent: named peers first, a web seed alongside, resume across restarts, sha256 at the end.

libtorrent writes pieces wherever they belong, as they come, so its files are never in DEST itself: they
grow in a part folder below it (``.ferry-torrent-HASH.part``), and only when every piece has passed its hash
check and the sha256 of the result is computed are they moved to their final names, each name made safe
(``destination``). A seed that dies at 40 % leaves the part folder, which the same command resumes, never a
full-size file under its final name holding 40 % of the data.

The session keeps libtorrent's resume data in Ferry's data folder (``torrents/HASH.fastresume``,
saved every few seconds and replaced atomically), so a fetcher killed mid-way starts again
from the pieces it had. Pieces are checked against the torrent's hashes as they arrive
(SHA-256 Merkle trees for v2 and hybrid torrents); a piece that fails is fetched again,
from another peer when there is one, and the job's notes say so. At the end Ferry computes
the sha256 of what arrived, like every backend, for the history and the report.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import libtorrent as lt

from ..core.base import Result, Sink
from ..core.errors import LocalError
from ..destination import Destination
from ..streams.hashing import manifest_digest
from .address import Peer, info_hash
from .browse import links, marked_executable
from .digest import TorrentDigest
from .faults import raise_stalled
from .folder import links_note, marks_note, move_finished, part_folder, refuse_existing, room_for_torrent
from .swarm import Swarm, write_atomically

TICK = 0.2
END_TICK = 0.02
RESUME_EVERY = 3.0
REDIAL_EVERY = 5.0
#: with no peer and no progress for this long, the job fails (and the engine retries it)
STALL_SECONDS = 60.0


async def fetch(params: lt.add_torrent_params, dest: Path, swarm: Swarm, peers: list[Peer], per_peer: int,
                resume_dir: Path, sink: Sink, stall_seconds: float = STALL_SECONDS, sequential: bool = False,
                replace_existing: bool = False) -> Result:
    """Fetch into ``dest``; ``sequential``: pieces front to back (every peer is one seed host, so order costs
    nothing, and the sha256 can follow the download); ``replace_existing``: files already under the torrent's
    names may be replaced (--overwrite, --sync), else they stop the fetch before it starts."""
    began = time.monotonic()
    key = info_hash(params)
    destination = Destination(dest)
    work = part_folder(dest, key)
    resume_file = resume_dir / f"{key}.fastresume"
    if resume_file.exists():
        try:
            saved = lt.read_resume_data(resume_file.read_bytes())
            if params.ti is not None:
                saved.ti = params.ti
            params = saved
        except RuntimeError:
            resume_file.unlink(missing_ok=True)  # unreadable: start from the files' own contents
    destination.folder(work.name)  # DEST and the part folder in it, made entering no link
    if params.ti is not None:
        refuse_existing(params.ti, destination, replace_existing)
        room_for_torrent(params.ti, work)
    if sequential:
        params.flags |= lt.torrent_flags.sequential_download
    swarm.add(params, work)
    swarm.dial(peers, per_peer)
    result = await _run(swarm.handles[0], swarm, peers, per_peer, resume_file, sink, stall_seconds, work, began)
    info = swarm.handles[0].torrent_file()
    if params.ti is None:  # a magnet: the names are known only now
        refuse_existing(info, destination, replace_existing)
    move_finished(info, work, destination)
    for note in (links_note(links(info)), marks_note(marked_executable(info)), destination.renamed_note()):
        if note:
            result.notes.append(note)
            sink.note(note)
    return result


async def _run(handle, swarm: Swarm, peers: list[Peer], per_peer: int, resume_file: Path, sink: Sink,
               stall_seconds: float, dest: Path, began: float) -> Result:
    notes: list[str] = []
    failed_pieces = 0
    last_progress, last_done = time.monotonic(), -1
    saved_at = redialed = time.monotonic()
    first, peak = True, 0
    digest: TorrentDigest | None = None
    tick = TICK
    try:
        while True:
            await asyncio.sleep(tick)
            failed_pieces += _read_alerts(swarm, resume_file, notes, sink, digest)
            st = handle.status()
            if first and st.total_wanted_done and not st.total_payload_download:
                first = False  # pieces from an earlier run, before any arrived in this one
                sink.note(f"Resuming: {st.total_wanted_done} bytes were already here and match the torrent.")
            sink.progress(st.total_wanted_done, st.total_wanted or None, st.num_peers)
            peak = max(peak, st.num_peers)
            if st.has_metadata and st.total_wanted and st.total_wanted_done >= st.total_wanted and st.is_finished:
                break
            if digest is None and st.has_metadata:
                digest = TorrentDigest(handle.torrent_file(), dest)
            if digest is not None and digest.wants_flush(st.pieces):
                handle.flush_cache()
            # near the end, look more often: the job is done when the last piece is, not up to a tick later
            left = st.total_wanted - st.total_wanted_done
            tick = END_TICK if st.download_payload_rate and left < st.download_payload_rate * 2 * TICK else TICK
            now = time.monotonic()
            if st.total_wanted_done != last_done:
                last_done, last_progress = st.total_wanted_done, now
            if now - saved_at >= RESUME_EVERY and st.has_metadata:
                # written out first: libtorrent 2.1 holds verified pieces in memory (up to max_queued_disk_bytes),
                # and resume data must never claim a piece a crash would lose
                handle.save_resume_data(lt.torrent_handle.flush_disk_cache | lt.torrent_handle.save_info_dict)
                saved_at = now
            if now - redialed >= REDIAL_EVERY and st.num_peers < len(peers) * per_peer:
                swarm.dial(peers, per_peer)  # peers that were not up yet, or dropped
                redialed = now
            if now - last_progress > stall_seconds:
                raise_stalled(st, swarm.refused, peers, stall_seconds)
        sink.stage("verifying")
        digest = digest or TorrentDigest(handle.torrent_file(), dest)
        await _flushed(swarm, handle, digest)
        digests = await asyncio.to_thread(digest.finish)
    finally:
        if digest is not None:
            digest.stop()
    return _outcome(handle, digest, digests, resume_file, (peers, peak, failed_pieces, began), notes)


def _outcome(handle, digest: TorrentDigest, digests: dict, resume_file: Path, run: tuple, notes: list[str]) -> Result:
    """The finished torrent as a result: its SHA-256 (a single file's, or the manifest's), how it was checked,
    what was damaged, shared and already here. ``run``: the peers, the most connected, the pieces that failed,
    and when it began."""
    peers, peak, failed_pieces, began = run
    info = handle.torrent_file()
    names = [f.path for f in digest.files]
    resume_file.unlink(missing_ok=True)
    single = len(names) == 1 and "/" not in names[0].replace("\\", "/")
    result_digest = digests[names[0]] if single else manifest_digest(
        {n.split("/", 1)[1] if "/" in n else n: d for n, d in digests.items()})
    method = (f"every piece checked against the torrent's {'SHA-256 (v2)' if info.info_hashes().has_v2() else 'SHA-1'}"
              " piece hashes; sha256 of the result computed here")
    if failed_pieces:
        notes.append(f"{failed_pieces} piece(s) arrived damaged and were fetched again.")
    final = handle.status()
    if final.all_time_upload:
        notes.append(f"Shared {final.all_time_upload} bytes with other peers while fetching.")
    total = digest.total_data
    resumed = max(0, total - final.total_payload_download)  # what this run did not have to fetch
    spent = time.monotonic() - began
    return Result(total, spent, peak or 1, result_digest, True, method,
                  peer_host=peers[0].host if peers else None, bytes_fetched=total - resumed, resumed_from=resumed,
                  notes=notes)


async def _flushed(swarm: Swarm, handle, digest: TorrentDigest, timeout: float = 30.0) -> None:
    """Wait until libtorrent has written every verified piece to the files (it may buffer them).

    A flush the digest asked for may still be outstanding; libtorrent answers flushes in order, so
    this one's answer is the last of them.
    """
    handle.flush_cache()
    awaited = 1 + digest.flush_pending
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        awaited -= sum(isinstance(a, lt.cache_flushed_alert) for a in swarm.alerts())
        if awaited <= 0:
            return
        await asyncio.sleep(0.02)
    raise LocalError("libtorrent did not finish writing the files within 30 s; check the destination's disk.")


def _read_alerts(swarm: Swarm, resume_file: Path, notes: list[str], sink: Sink,
                 digest: TorrentDigest | None) -> int:
    failed = 0
    for alert in swarm.alerts():
        if isinstance(alert, lt.cache_flushed_alert):
            if digest is not None:
                digest.flushed()
        elif isinstance(alert, lt.save_resume_data_alert):
            resume_file.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(resume_file, lt.write_resume_data_buf(alert.params))
        elif isinstance(alert, lt.fastresume_rejected_alert):
            sink.note(f"The saved progress could not be used ({alert.message()}); the files are checked instead.")
        elif isinstance(alert, lt.hash_failed_alert):
            failed += 1
            sink.note(f"Piece {alert.piece_index} failed its hash check; fetching it again from another peer.")
        elif isinstance(alert, (lt.file_error_alert, lt.torrent_error_alert)):
            raise LocalError(f"Writing the torrent's files failed: {alert.message()}. Check the destination's "
                             "space and permissions.")
        elif (refused := swarm.tls_refusal(alert)) is not None:
            notes.append(refused)
            sink.note(refused)
    return failed
