"""``labferry pack``, ``unpack`` and ``ls ARCHIVE``: a run folder as one tar, made and opened by several workers.

``ls`` is shared with ``labferry ls URL`` (a remote folder): a local file that is a tar is listed from its index.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from backends.core.errors import BadRequest
from backends.core.words import counted, human_size

from .progress import ProgressLine


def add_parsers(sub) -> None:
    p = sub.add_parser("pack", help="pack files and folders into one tar archive, with several workers at once")
    p.add_argument("sources", nargs="+", metavar="SRC", help="files and folders to pack")
    p.add_argument("archive", metavar="ARCHIVE.tar", help="the archive to write (NAME.tar.part until it is whole)")
    _workers(p)
    p.add_argument("--dereference", action="store_true",
                   help="pack what symbolic links point to, not the links themselves")
    p.add_argument("--overwrite", action="store_true", help="replace ARCHIVE if it exists")
    p.add_argument("--compress", choices=("none", "zstd"),
                   help="zstd: zstd's seekable format, frames compressed by the workers (default: zstd when ARCHIVE "
                        "ends in .zst, else none); members compressed already (.gz, .bam, .cram…) are stored as they "
                        "are")
    p.add_argument("--piece", default="64M", metavar="SIZE",
                   help="cut files larger than SIZE into pieces that several workers write at once (default 64M)")
    p.add_argument("--json", action="store_true", help="print one JSON line with the figures at the end")
    p.set_defaults(handler=run_pack)
    u = sub.add_parser("unpack", help="unpack a tar archive into a folder, with several workers at once")
    u.add_argument("archive", metavar="ARCHIVE.tar")
    u.add_argument("dest", metavar="DEST/", help="the folder to unpack into (made when missing)")
    u.add_argument("--only", nargs="+", metavar="GLOB",
                   help="only members whose path matches (a folder's path takes what is inside it)")
    u.add_argument("--scan", action="store_true", help="ignore the archive's index and read its headers instead")
    _workers(u)
    u.add_argument("--json", action="store_true", help="print one JSON line with the figures at the end")
    u.set_defaults(handler=run_unpack)


def _workers(parser) -> None:
    parser.add_argument("--workers", default="auto", metavar="N|auto",
                        help="worker processes (default auto: one a core)")


def _count(text: str) -> int | None:
    if text == "auto":
        return None
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise BadRequest(f"--workers takes a number from 1 to 1024 or auto, not {text!r}.")
    return int(text)


def _size(text: str) -> int:
    import re

    match = re.fullmatch(r"(\d{1,6})([KMG]?)", text.strip().upper())
    size = int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)] if match else 0
    if size < 1 << 20 or size % 512:
        raise BadRequest(f"--piece takes a size of at least 1M in whole 512-byte blocks (64M, 256M), not {text!r}.")
    return size


def _progress(verb: str, quiet: bool):
    """The copy's progress line (a terminal's rewritten line, a log's line every so often), told bytes done."""
    line = ProgressLine(not quiet)

    def show(done: int, total: int) -> None:
        share = f" ({done * 100 // total} %)" if total else ""
        line.show(f"{verb} {human_size(done)} of {human_size(total)}{share}")

    show.line = line
    return show


def _on_ranks(run, args: argparse.Namespace) -> int:
    """``run(args, runner)`` here, or across the ranks of an MPI job: rank 0 runs it (and alone speaks), the
    others serve it until it is done."""
    from backends.archive import ranks

    comm = ranks.world()
    if comm is None:
        return run(args, None)
    ranks.bound_to_launcher(comm.Get_rank())
    if comm.Get_rank() > 0:
        ranks.serve(comm)  # a stop ends it at once (``bound_to_launcher``); rank 0 says what was kept
        return 0
    runner = ranks.Runner(comm)
    try:
        return run(args, runner)
    finally:
        runner.done()


def run_pack(args: argparse.Namespace) -> int:
    return _on_ranks(_pack, args)


def run_unpack(args: argparse.Namespace) -> int:
    return _on_ranks(_unpack, args)


def _pack(args: argparse.Namespace, runner) -> int:
    from app import stops
    from backends.archive.pack import pack

    shown = _progress("packed", args.quiet)
    compress = args.compress or ("zstd" if args.archive.endswith((".zst", ".tzst")) else "none")
    compress = None if compress == "none" else compress
    done = [0]

    def progress(packed: int, total: int) -> None:
        done[0] = packed
        shown(packed, total)

    try:
        made = pack(args.sources, Path(args.archive), workers_asked=_count(args.workers),
                    dereference=args.dereference, overwrite=args.overwrite, piece=_size(args.piece),
                    compress=compress, progress=progress, runner=runner)
    except stops.STOPS as stop:
        shown.line.done()
        if compress:
            print(f"labferry: packing {stops.said(stop)}; a compressed archive is made in one go, so nothing was "
                  "kept: run the same command to start again.", file=sys.stderr)
        else:
            print(f"labferry: packing {stops.said(stop)}; {human_size(done[0])} are kept in {args.archive}.part: "
                  "run the same command to go on from there.", file=sys.stderr)
        return stops.status(stop)
    shown.line.done()
    for note in made.notes:
        print(f"labferry: {note}", file=sys.stderr)
    rate = made.data_bytes / made.seconds / 1e6 if made.seconds else 0.0
    if args.json:
        print(json.dumps({"archive": str(made.archive), "members": made.members, "files": made.files,
                          "data_bytes": made.data_bytes, "size": made.size, "seconds": round(made.seconds, 3),
                          "workers": made.workers, "notes": made.notes}))
    elif not args.quiet:
        print(f"packed {made.files:,} files ({human_size(made.data_bytes)}) into {made.archive} in "
              f"{made.seconds:.1f} s ({rate:.0f} MB/s, {made.workers} {'ranks' if runner else 'workers'}); its index "
              f"lists all "
              f"{made.members:,} members", file=sys.stderr)
    return 0


def _unpack(args: argparse.Namespace, runner) -> int:
    from backends.archive.download import unpack
    from backends.core.errors import Corrupt

    shown = _progress("unpacked", args.quiet)
    try:
        done = unpack(Path(args.archive), Path(args.dest), only=args.only, workers_asked=_count(args.workers),
                      scan=args.scan, progress=shown, runner=runner)
    finally:
        shown.line.done()
    for note in done.notes:
        print(f"labferry: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"restored": done.restored, "bytes": done.bytes, "seconds": round(done.seconds, 3),
                          "workers": done.workers, "indexed": done.indexed, "failed": done.failed,
                          "notes": done.notes}))
    elif not args.quiet:
        print(f"unpacked {done.restored:,} members ({human_size(done.bytes)}) into {args.dest} in "
              f"{done.seconds:.1f} s", file=sys.stderr)
    if done.failed:
        raise Corrupt(f"{counted(len(done.failed), 'member')} of {args.archive} could not be restored "
                      f"({'; '.join(done.failed[:3])}); {counted(done.restored, 'other')} were restored under "
                      f"{args.dest}. Fetch the archive again and run the same command.")
    return 0


def list_archive(archive: Path, as_json: bool) -> int:
    from backends.archive.browse import catalogue, chosen

    cat = catalogue(archive)
    for m in chosen(cat.members, None):
        if as_json:
            whole = cat.digests.get(m.name, ("", [], 0))[0]
            print(json.dumps({"name": m.name, "kind": m.kind, "size": m.size, "mode": oct(m.mode),
                              "mtime": m.mtime_ns / 1e9, "offset": m.data, "sha256": whole or None,
                              "link": m.linkname or None}))
        else:
            stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(m.mtime_ns / 1e9))
            link = f" -> {m.linkname}" if m.linkname else ""
            shown = m.name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            print(f"{m.kind[0] if m.kind != 'file' else '-'} {m.size:>14,} {stamp} {shown}{link}")
    return 0
