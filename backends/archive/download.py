"""Members out of an archive (``labferry unpack``, the window's Unpack): what ``browse.py`` lists of it, restored
below DEST by several workers (or MPI ranks) at once.

Names become paths only through ``backends.destination.Destination`` (``../``, absolute paths and names a disk
cannot hold are made safe and said); a file is a part file until its bytes match the index's SHA-256; a link is
made only when it stays inside DEST; a hard link only to a file restored here. A member that fails does not stop
the others: the sentence at the end says what was restored and what was not.
"""

from __future__ import annotations

import time
from pathlib import Path

from ..core.errors import BadRequest
from ..destination import Destination
from ..destination.shared import SharedPart
from . import seekable, workers
from .browse import Catalogue, catalogue, chosen
from .faults import say_cut
from .folder import Unpacked, folder_times, make_links
from .layout import OPEN_COST, Member
from .workers import BATCH_PIECES, worker_count


def unpack(archive: Path, dest: Path, *, only: list[str] | None = None, workers_asked: int | None = None,
           scan: bool = False, progress=None, runner=None) -> Unpacked:
    """``runner``: the ranks of an MPI job (``ranks.Runner``), instead of worker processes here."""
    began = time.monotonic()
    archive = Path(archive).expanduser()
    cat = catalogue(archive, scan=scan)
    members = chosen(cat.members, only)
    if only and not members:
        raise BadRequest(f"No member of {archive.name} matches {' '.join(only)}; see them with labferry ls.")
    target = Destination(Path(dest).expanduser())
    target.claim_all([m.name for m in members if m.kind != "dir"], [m.name for m in members if m.kind == "dir"])
    count = runner.ranks if runner is not None else worker_count(workers_asked)
    result = Unpacked(0, 0, 0.0, count, cat.indexed)
    tops = {m.name.split("/", 1)[0] for m in members}
    result.top = target.claim(tops.pop(), folder=True) if len(tops) == 1 else ""
    for m in members:
        if m.kind == "dir":
            target.folder(target.claim(m.name, folder=True))
    _files(archive, cat, [m for m in members if m.kind == "file"], target, (count, runner), result, progress)
    make_links(target, [m for m in members if m.kind in ("symlink", "hardlink")], result)
    folder_times(target, [m for m in members if m.kind == "dir"])
    renamed = target.renamed_note(origin="the archive")
    if renamed:
        result.notes.append(renamed)
    say_cut(archive, cat, members, result)
    if not cat.indexed:
        result.notes.append(f"{archive.name} has no index (another tool made it, or it was cut before its end): "
                            "sizes were checked, there were no checksums to compare.")
    result.seconds = time.monotonic() - began
    return result


def _files(archive: Path, cat: Catalogue, files: list[Member], target: Destination, run_on: tuple,
           result: Unpacked, progress) -> None:
    """``run_on``: (worker processes, or the MPI ranks' runner)."""
    lost = {m.name for m in files if m.data + m.size > cat.size}
    files = [m for m in files if m.name not in lost]  # cut off: said by ``say_cut``, nothing half-made
    jobs, shared, total = [], {}, sum(m.size for m in files)
    for m in files:
        whole, pieces, piece = cat.digests.get(m.name, ("", [], 0))
        if not pieces or piece < 512 or len(pieces) != -(-m.size // piece):
            path = target.file_path(target.claim(m.name))  # checked for a link by ``write_whole``, ``WholeFile``
            jobs.append((len(jobs), m.name, m.data, m.size, whole, (path, m.mode, m.mtime_ns), 0))
            continue
        path = target.file(target.claim(m.name))
        part = SharedPart.make(path, m.size)
        shared[m.name] = (part, path, m)
        for k, start in enumerate(range(0, m.size, piece)):
            jobs.append((len(jobs), m.name, m.data + start, min(piece, m.size - start), pieces[k], part, start))
    bad: dict[str, str] = {}
    done = [0]

    def finished(results: list[tuple[int, str]]) -> None:
        for number, why in results:
            done[0] += jobs[number][3]
            if why:
                bad.setdefault(jobs[number][1], why)
        if progress:
            progress(done[0], total)

    if cat.frames is not None:  # each batch the jobs of a few frames: a frame is decoded once
        batches = _by_frame(jobs, cat.frames)
    else:
        batches = [jobs[i:i + BATCH_PIECES] for i in range(0, len(jobs), BATCH_PIECES)]
        batches = [b for batch in batches for b in _split_large(batch)]
    count, runner = run_on
    try:
        workers.run(batches, workers.unpack_batch, (str(archive), cat.frames), count, finished, runner,
                    cost=lambda batch: sum(job[3] + OPEN_COST for job in batch))
    except BaseException:
        for part, _, _ in shared.values():
            part.discard()
        raise
    for name, (part, path, m) in shared.items():
        if name in bad:
            part.discard()
        else:
            part.finish(path, m.mtime_ns, m.mode)
    result.failed.extend(bad.values())
    result.restored += len(files) - len(bad)
    result.bytes += sum(m.size for m in files if m.name not in bad)


def _by_frame(jobs: list, frames: seekable.FrameMap) -> list[list]:
    """Jobs grouped by the frame that holds them (in order), about ``BATCH_PIECES`` a batch."""
    batches: list[list] = []
    current: list = []
    last = -1
    for job in sorted(jobs, key=lambda j: j[2]):
        frame = frames.frames_for(job[2], job[3])[0]
        if current and frame != last and (len(current) >= BATCH_PIECES or isinstance(job[5], SharedPart)):
            batches.append(current)
            current = []
        current.append(job)
        last = frame
    if current:
        batches.append(current)
    return batches


def _split_large(batch: list) -> list[list]:
    """A batch of one large file's pieces split so each piece can go to another worker."""
    out, small = [], []
    for job in batch:
        (out.append([job]) if isinstance(job[5], SharedPart) else small.append(job))
    return out + ([small] if small else [])


