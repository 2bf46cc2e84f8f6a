"""``labferry copy ena:ACCESSION DEST/`` (or a bare accession): every file of a run, sample, study or project."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from app import stops
from app.accessions import ena, ids, services
from app.accessions.choose import dry_run_lines, narrow, parse_filters
from app.accessions.complete import adopt, can_complete, completing_plan, dropped_note, reroute_completed, short_runs
from app.accessions.convert import convert_runs
from app.accessions.fetch import BUDGET, HOST_CONNECTIONS_MOST, Outcome, Progress, fetch
from app.accessions.ncbi import SOURCES
from app.accessions.pipelines import PATH_STYLES, SHEETS
from app.accessions.plans import LAYOUTS, apply_layout, build_plan, no_reads_in_geo, read_list
from app.accessions.sheets import write_metadata, write_sheet
from app.cli.progress import ProgressLine
from app.requests import Defaults
from app.units import counted, format_bytes, format_duration, format_rate
from backends.core.errors import BadRequest
from backends.core.words import agrees, first_named, some_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("public data (SRC is ena:ACCESSION or a bare accession such as SRR1234567)")
    group.add_argument("--files", choices=ena.KINDS, default="fastq",
                       help="which files of each run: fastq (default), submitted (as the authors sent them) or sra")
    group.add_argument("--route", choices=ena.ROUTES, default="https",
                       help="how to reach ENA's files first: https (default; parallel ranges) or ftp; a file that "
                            "fails one way is tried the other (LABFERRY_ENA_FILES, LABFERRY_ENA_FTP)")
    group.add_argument("--source", choices=SOURCES, default="auto", dest="archive",
                       help="where runs come from: auto (default: ENA, and NCBI's .sra for a run ENA has no such "
                            "file for, converted to FASTQ with fasterq-dump), ena, or ncbi (LABFERRY_NCBI_SDL)")
    group.add_argument("-i", "--input", metavar="FILE",
                       help="a list: one accession or address per line, # comments (then give only DEST)")
    group.add_argument("--samplesheet", choices=SHEETS, default="fetchngs",
                       help="the samplesheet.csv to write: fetchngs' layout (default), or the one nf-core/rnaseq, "
                            "sarek, scrnaseq or taxprofiler reads (their schema_input.json), or none")
    group.add_argument("--layout", choices=LAYOUTS, default="flat",
                       help="flat (default: every file in DEST) or sample (a folder per sample, named by its "
                            "accession); file names as the archive gives them")
    group.add_argument("--sheet-paths", choices=PATH_STYLES, default="absolute",
                       help="the sheet's FASTQ paths absolute (default) or relative to DEST")
    group.add_argument("--filter", action="append", metavar="FIELD=VALUE", dest="filters",
                       help="only the runs whose report field has this value (repeatable: library_strategy=RNA-Seq, "
                            "instrument_platform=ILLUMINA, library_layout=PAIRED, scientific_name=…)")
    group.add_argument("--runs", type=int, metavar="N", help="only the first N runs (after --filter)")
    group.add_argument("--dry-run", action="store_true",
                       help="print the runs, files, sizes, total and free space, and fetch nothing")
    group.add_argument("--host-connections", type=int, default=BUDGET, metavar="N",
                       help=f"streams the files fetched at once share (default {BUDGET}: four large files at a time, "
                            "or as many small ones as streams)")


def run(args: argparse.Namespace, overrides) -> int:
    folder = Path(args.dest).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        raise BadRequest(f"{folder} is a file; an accession's files go into a folder. Give a folder (DEST/).")
    if not 1 <= args.host_connections <= HOST_CONNECTIONS_MOST:
        raise BadRequest(f"--host-connections {args.host_connections} is not a number of connections Ferry opens; "
                         f"give 1 to {HOST_CONNECTIONS_MOST} (default {BUDGET}).")
    plan = _planned(args, overrides, folder)
    if getattr(args, "dry_run", False):
        return _dry_run(args, plan, folder)
    unlinked = _announce(args, plan, folder)
    outcome, stopped, unconverted, short = _fetched(args, plan, folder, overrides)
    return _ended(args, plan, folder, (outcome, stopped, unconverted, short), unlinked)


def _planned(args: argparse.Namespace, overrides, folder: Path):
    """What the accessions hold, as ENA's (and NCBI's) reports say, narrowed by ``--filter`` and ``--runs``;
    while the portal is asked, the fetchers load and the first files are asked for ahead."""
    filters = parse_filters(getattr(args, "filters", None))
    preload, ahead = None, None
    if not getattr(args, "dry_run", False):
        from app.accessions.ahead import asking_ahead

        preload = lambda: _preload_fetchers(args, overrides)  # noqa: E731
        ahead = asking_ahead(folder, filters, getattr(args, "runs", None), route=args.route,
                             source=getattr(args, "archive", "auto"), kind=args.files, overrides=overrides)
    with services.waiting(lambda text: _say(args, f"labferry: {text}"), meanwhile=preload), \
            ena.rows_arriving(ahead):
        plan = apply_layout(narrow(_plan(args, overrides.ca_file), filters, getattr(args, "runs", None)),
                            getattr(args, "layout", "flat"))
        if args.files == "fastq":
            reroute_completed(plan, folder, overrides.ca_file)  # runs an earlier run completed from NCBI
    return plan


def study_plan(args: argparse.Namespace, overrides) -> ena.Plan:
    """What the accessions hold, narrowed and laid out as ``copy`` would fetch them, with nothing fetched ahead
    (``--cluster``: the tasks fetch)."""
    with services.waiting(lambda text: _say(args, f"labferry: {text}")):
        return apply_layout(narrow(_plan(args, overrides.ca_file), parse_filters(getattr(args, "filters", None)),
                                   getattr(args, "runs", None)), getattr(args, "layout", "flat"))


def _announce(args: argparse.Namespace, plan, folder: Path) -> bool:
    """What is about to be fetched, where from, and what has nothing public; True when a GEO accession links to
    no reads."""
    files = counted(len(plan.files), f"{args.files} file")
    _say(args, f"labferry: {plan.label}: {counted(plan.runs, 'run')}, {files}, {format_bytes(plan.total_bytes)} → "
               f"{folder}")
    _say_sources(args, plan)
    for accession, linked in plan.geo.items():
        if linked:
            _say(args, f"labferry: {accession} (GEO) is {', '.join(linked)} in SRA.")
    unlinked = any(not linked for linked in plan.geo.values())
    if unlinked and plan.files:
        _say(args, f"labferry: {no_reads_in_geo(plan)}", always=True)
    for missing in plan.nothing_for:
        archives = "ENA and NCBI have" if plan.source != "ena" and args.files != "submitted" else "ENA has"
        _say(args, f"labferry: {archives} nothing public for {missing} (not public yet, suppressed, or a typo).",
             always=True)
    return unlinked


def _fetched(args: argparse.Namespace, plan, folder: Path, overrides) -> tuple:
    """Every file fetched as one job (a progress line), then ``.sra`` files converted where FASTQ were asked for;
    returns the outcome, the stop (Ctrl-C, SIGTERM) or None, what was not converted, and runs left short."""
    from app.store import Store  # sqlite, once the portal has answered

    with Store() as store:
        defaults = Defaults.from_settings(store.settings.all())
    line = ProgressLine(not args.quiet)
    outcome, stopped = Outcome(), None
    from app.engine import RetryPolicy  # imported meanwhile by the preload thread

    retry = RetryPolicy(max_retries=args.retries) if getattr(args, "retries", None) is not None else None
    try:
        fetch(plan, folder, overrides, defaults=defaults, budget=args.host_connections,
              on_progress=lambda p: line.show(_progress_text(plan.label, p)),
              on_switch=lambda count, route: line.say(f"labferry: {counted(count, 'file')} failed by "
                                                      f"{args.route}; trying {route}."),
              retry=retry, outcome=outcome)
    except stops.STOPS as stop:  # Ctrl-C or SIGTERM: what is verified gets its sheet; the rest resumes
        stopped = stop
    line.done()
    unconverted: list[str] = []
    short: list[tuple[str, int, int]] = []
    if args.files == "fastq" and stopped is None:
        try:  # minutes for a large run: said as each begins; Ctrl-C ends fasterq-dump and keeps the .sra
            unconverted, short = _convert_and_complete(args, plan, folder, overrides, defaults, outcome)
        except stops.STOPS as stop:
            stopped = stop
    return outcome, stopped, unconverted, short


def _ended(args: argparse.Namespace, plan, folder: Path, ended: tuple, unlinked: bool) -> int:
    """The metadata and the samplesheet written, what went wrong said, and the exit status."""
    from app.cli import EXIT_STATUSES

    outcome, stopped, unconverted, short = ended
    for sentence in unconverted:
        print(f"labferry: {sentence}", file=sys.stderr)
    write_metadata(plan, folder)
    sheet_rows, left_out = (write_sheet(args.samplesheet, plan, folder, outcome.verified_names, args.sheet_paths)
                            if args.files == "fastq" else (0, []))
    if left_out:  # one sentence, however many runs (a study stopped early leaves out all it has yet to fetch)
        print(f"labferry: note: {args.samplesheet}'s samplesheet leaves out "
              f"{some_of([f'{run} ({why})' for run, why in left_out], 5)}.", file=sys.stderr)
    dropped = dropped_note(plan, short)
    if dropped:
        print(f"labferry: note: {dropped}", file=sys.stderr)
    for _, sentence, _ in outcome.failed:
        print(f"labferry: {sentence}", file=sys.stderr)
    status = EXIT_STATUSES.get(outcome.failed[0][2], 1) if outcome.failed else \
        3 if plan.nothing_for or _only_ena_lacks(plan, args.files) or unlinked or unconverted else 0
    if stopped is not None:
        status = stops.status(stopped)
    _summary(plan, outcome, sheet_rows, folder, stops.said(stopped) if stopped is not None else None,
             args.samplesheet)
    if args.json:
        print(json.dumps(_as_json(plan, outcome, folder, status)))
    args.closed = not outcome.left_running  # the process may end without the interpreter's tear-down (~50 ms)
    return status


def _preload_fetchers(args: argparse.Namespace, overrides) -> None:
    """As the portal is asked (``services.waiting``'s ``meanwhile``), in a thread: first, where ENA's files will
    come over HTTPS, connections to its file host are opened (``warm_up``), so the handshakes happen while the
    portal answers, not after; then what fetching the files needs is imported (the HTTPS list job, the engine:
    ~60 ms of one core), so the first GET leaves as soon as the answer is in. Not aiohttp (~0.15 s): small
    files come without it, and a list with large ones imports it then."""
    import threading

    def load() -> None:
        import importlib

        if args.route == "https" and getattr(args, "archive", "auto") != "ncbi":
            from app.requests import warm_up
            from backends.streams.budget import WARM_MOST

            try:  # the lanes' connections for small runs (the first ones asked for on them: ``ahead.py``)
                warm_up(ena.route_bases("https")[0] + "/", replace(overrides, max_streams=args.host_connections),
                        min(WARM_MOST, args.host_connections))
            except Exception:  # noqa: BLE001 - only a head start: the job connects and says what is wrong
                pass
        for name in ("backends.https.listed", "app.engine.runner"):
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the job imports it again and says what is wrong
                return

    threading.Thread(target=load, name="ferry-preload", daemon=True).start()


def _plan(args: argparse.Namespace, ca_file: str | None) -> ena.Plan:
    """Every accession (and plain address) asked for, checked before the portal is asked anything."""
    if args.input:
        sources, label = read_list(Path(args.input)), str(Path(args.input).expanduser().absolute())
    else:
        sources = [args.source]
        label = ids.PREFIX + ids.parse(args.source).text  # ena:SRR…, however it was typed
    return build_plan(sources, label, args.files, args.route, ca_file=ca_file, source=getattr(args, "archive", "auto"))


def _convert_and_complete(args: argparse.Namespace, plan, folder: Path, overrides, defaults,
                          outcome: Outcome) -> tuple[list[str], list[tuple[str, int, int]]]:
    """After the fetch: each ``.sra`` from NCBI converted to FASTQ; then, under ``--source auto``, each run whose
    FASTQ from ENA lack a read fetched from NCBI as ``.sra`` and converted with every read (``complete.py``).
    Returns (a sentence for each run left a ``.sra``, the runs left short of a read)."""
    def converting(run: str, name: str) -> None:
        _say(args, f"labferry: {run}: converting {name} to FASTQ with fasterq-dump…")

    unconverted = convert_runs(plan, folder, outcome.verified_names, on_run=converting)
    short = short_runs(plan, folder, outcome.verified_names)
    if not short or not can_complete(plan):
        return unconverted, short
    runs = [run for run, *_ in short]
    _say(args, f"labferry: ENA's FASTQ lack a read for {counted(len(runs), 'run')} ({first_named(runs)}); "
               f"fetching {agrees(len(runs), 'its', 'their')} .sra from NCBI to convert with every read.")
    sub = completing_plan(plan, runs, overrides.ca_file)
    for note in sub.notes:
        _say(args, f"labferry: {note}", always=True)
    if not sub.files:
        return unconverted, short
    more = Outcome()
    line = ProgressLine(not args.quiet)
    try:
        fetch(sub, folder, overrides, defaults=defaults, budget=args.host_connections, outcome=more,
              on_progress=lambda p: line.show(_progress_text(plan.label, p)))
    finally:
        line.done()
        outcome.add(more)
    unconverted += convert_runs(sub, folder, more.verified_names, on_run=converting)
    completed = adopt(plan, sub, folder, outcome.verified_names)
    return unconverted, [entry for entry in short if entry[0] not in completed]


def _say_sources(args: argparse.Namespace, plan) -> None:
    """What does not come from ENA as asked: a service that failed, the runs NCBI gives instead (and, for FASTQ
    without fasterq-dump, what to install before waiting for them), the runs neither archive has files for."""
    from app.accessions.convert import INSTALL, tool

    for note in plan.notes:
        _say(args, f"labferry: {note}", always=True)
    if plan.from_ncbi:
        runs = first_named(plan.from_ncbi)
        how = "" if args.files != "fastq" else "; fasterq-dump converts each to FASTQ" if tool() else f"; {INSTALL}"
        verb = agrees(len(plan.from_ncbi), "comes", "come")
        _say(args, f"labferry: {counted(len(plan.from_ncbi), 'run')} ({runs}) {verb} from NCBI as .sra, not from "
                   f"ENA{how}.", always=args.files == "fastq" and not tool())
    if plan.without_files and _only_ena_lacks(plan, args.files):  # NCBI may have them: the study is incomplete
        _say(args, f"labferry: ENA has no {args.files} files for {first_named(plan.without_files, 8)}; they were not "
                   "fetched (exit 3). Run the same command with --source auto to take them from NCBI (as .sra, "
                   "converted to FASTQ), or --files submitted for what the authors sent.", always=True)
    elif plan.without_files:
        archives = "ENA or NCBI" if plan.source != "ena" and args.files != "submitted" else "ENA"
        _say(args, f"labferry: no {args.files} files in {archives} for {', '.join(plan.without_files)}; try --files "
                   f"{'submitted' if args.files != 'submitted' else 'sra'}.", always=True)


def _only_ena_lacks(plan, kind: str) -> bool:
    """Runs ENA lists without this kind of file, under ``--source ena``, where NCBI was not asked and may serve
    them: what the user left out by choice, said with exit 3 so that a pipeline's script can tell."""
    return bool(plan.without_files) and plan.source == "ena" and kind in ("fastq", "sra")


def _dry_run(args: argparse.Namespace, plan, folder: Path) -> int:
    """What would be fetched, on stdout (one JSON object with --json), and nothing fetched."""
    if args.json:
        runs = [{"run": r.get("run_accession"), "sample": r.get("sample_accession"),
                 **{k: r.get(k, "") for k in ("library_strategy", "instrument_platform", "library_layout")},
                 "files": [{"name": f.name, "bytes": f.size, "md5": f.md5, "url": f.url, "source": f.source}
                           for f in plan.files if f.run == r.get("run_accession")]} for r in plan.rows]
        print(json.dumps({"label": plan.label, "route": plan.route, "runs": runs, "total_bytes": plan.total_bytes,
                          "nothing_for": plan.nothing_for}))
    else:
        print("\n".join(dry_run_lines(plan, folder)))
    return 3 if plan.nothing_for and not plan.files else 0


def add_ls_parser(sub) -> None:
    """``labferry ls ena:PRJ…``: what an accession holds (``copy … --dry-run`` without a destination)."""
    p = sub.add_parser("ls", help="list what a public accession holds (runs, files, sizes; nothing fetched), or "
                                  "the members of a tar archive")
    p.add_argument("source", metavar="ACCESSION|ARCHIVE",
                   help="ena:ACCESSION or a bare accession (SRR…, PRJEB…, GSE…), or a tar archive on this computer")
    add_arguments(p)
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--ca-file", metavar="PEM", help="a CA to trust for the portal (a proxy's, say)")
    p.set_defaults(handler=_run_ls, dest=".", input=None, dry_run=True)


def _run_ls(args: argparse.Namespace) -> int:
    from app.accessions.ids import is_accession

    if Path(args.source).is_file():  # an archive: listed from its index (``labferry pack``)
        from .archive import list_archive

        return list_archive(Path(args.source), args.json)
    if not is_accession(args.source):
        raise BadRequest(f"'{args.source}' is not an accession; give one such as ena:PRJEB12345 or SRR1234567.")
    plan = apply_layout(narrow(_plan(args, args.ca_file), parse_filters(args.filters), args.runs), args.layout)
    return _dry_run(args, plan, Path(args.dest).absolute())


def _say(args, text: str, always: bool = False) -> None:
    if always or not args.quiet:
        print(text, file=sys.stderr)


def _progress_text(name: str, p: Progress) -> str:
    left = (p.bytes_total - p.bytes_done) / p.rate if p.rate > 0 else None
    eta = f", {format_duration(left)} left" if left is not None else ""
    return (f"{name}: {p.files_done}/{p.files_total} files, {format_bytes(p.bytes_done)} of "
            f"{format_bytes(p.bytes_total)}, {format_rate(p.rate)}{eta}")


def _summary(plan, outcome: Outcome, sheet_rows: int, folder: Path, stopped: str | None = None,
             sheet: str = "fetchngs") -> None:
    moved = f"{format_bytes(outcome.bytes_moved)} in {format_duration(outcome.seconds)}"
    if outcome.bytes_moved and outcome.seconds > 0:
        moved += f", {format_rate(outcome.bytes_moved / outcome.seconds)}"
    kept = f", {len(outcome.kept)} already here and verified" if outcome.kept else ""
    failed = f", {len(outcome.failed)} failed" if outcome.failed else ""
    fetched = counted(len(outcome.done), "file")
    left = len(plan.files) - len(outcome.done) - len(outcome.kept) - len(outcome.failed)
    head = f"{stopped} with {counted(left, 'file')} to go{_partly_here(plan, outcome, folder)}; " if stopped else ""
    unsummed = sum(1 for f in plan.files if not f.md5)  # an empty MD5 in the report is never claimed as checked
    who = "ENA's or NCBI's" if plan.from_ncbi else "ENA's"
    checked = (f"every file checked against {who} MD5 and size" if not unsummed else
               f"every file checked against its size and {who} MD5 where the report gives one "
               f"({counted(unsummed, 'file')} without)")
    listed = (f"{folder / 'samplesheet.csv'} (for {sheet}) lists {counted(sheet_rows, 'run')}; " if sheet != "none"
              else "")
    print(f"labferry: {plan.label}: {head}{fetched} fetched ({moved}){kept}{failed}; {checked}. "
          f"{listed}metadata.tsv has the whole report.", file=sys.stderr)
    if outcome.failed or stopped:
        print("labferry: run the same command again to fetch what is missing; verified files are kept.",
              file=sys.stderr)


def _partly_here(plan, outcome: Outcome, folder: Path) -> str:
    """What of the files still to go is on disk already (their part files' records): kept, and resumed by the
    same command, which a stopped study must say, not leave the user to think it lost."""
    from backends.destination.partfile import kept_bytes

    finished = {f.name for f in outcome.done} | {f.name for f in outcome.kept}
    partial = [n for n in (kept_bytes(folder / f.name) for f in plan.files if f.name not in finished) if n]
    if not partial:
        return ""
    return (f" ({format_bytes(sum(partial))} of {counted(len(partial), 'more file')} kept here; the same command "
            "goes on from there)")


def _as_json(plan, outcome: Outcome, folder: Path, status: int) -> dict:
    failed = {f.name: sentence for f, sentence, _ in outcome.failed}
    state = {f.name: "fetched" for f in outcome.done} | {f.name: "kept" for f in outcome.kept} | \
        {name: "failed" for name in failed}
    return {
        "ok": status == 0, "accession": plan.label, "files_kind": plan.kind, "nothing_for": plan.nothing_for,
        "geo": plan.geo,
        "dest": str(folder), "bytes": plan.total_bytes, "bytes_fetched": outcome.bytes_moved,
        "seconds": round(outcome.seconds, 3), "runs_without_files": plan.without_files,
        "files": [{"run": f.run, "name": f.name, "bytes": f.size, "md5": f.md5, "state": state.get(f.name, "failed"),
                   "error": failed.get(f.name), "source": f.source} for f in plan.files],
        "converted": {run: [{"name": f.name, "bytes": f.size, "md5": f.md5} for f in files]
                      for run, files in plan.converted.items()},
    }
