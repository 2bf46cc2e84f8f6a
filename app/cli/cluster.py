"""``labferry copy SRC DEST --cluster slurm``: one transfer spread over a cluster's nodes (``app.cluster``), and
``labferry cluster-task``, what each node's task runs (not for typing)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from app import stops
from app.units import format_bytes, format_duration, format_rate
from backends.core.errors import BadRequest

#: connections to one host for all tasks together when the user gives none (a server's MaxStartups is 10)
BUDGET = 24
#: rounds of tasks after the first, for what a failed task left, when --retries is not given
ROUNDS = 2


def add_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("on a cluster (Slurm)")
    group.add_argument("--cluster", choices=("slurm",),
                       help="spread the copy over a cluster's nodes as one Slurm job array, watched from here; "
                            "DEST must be on a file system the nodes share")
    group.add_argument("--nodes", type=_nodes, default=3, metavar="N", help="tasks (one per node) at most (default 3)")
    group.add_argument("--partition", metavar="NAME", help="the partition of transfer nodes (sbatch --partition)")
    group.add_argument("--account", metavar="NAME", help="the account to charge (sbatch --account)")
    group.add_argument("--time", metavar="LIMIT", help="each task's time limit, as sbatch takes it (2:00:00)")
    group.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                       help="one more argument for sbatch, as is (repeatable: --sbatch-arg=--qos=xfer)")
    group.add_argument("--host-budget", type=int, default=BUDGET, metavar="N",
                       help=f"connections to the server for all tasks together, split among them (default {BUDGET})")


def add_task_parser(sub) -> None:
    p = sub.add_parser("cluster-task", help="one task of a copy --cluster: what Slurm's batch script runs on a node "
                                            "(not for typing)")
    p.add_argument("work")
    p.add_argument("round", type=int)
    p.add_argument("task", type=int)
    p.set_defaults(handler=lambda args: _task(args))


def _task(args: argparse.Namespace) -> int:
    from app.cluster.task import run_task

    return run_task(Path(args.work), args.round, args.task)


def _nodes(text: str) -> int:
    from app.cluster.plan import MOST_TASKS

    if not text.isdigit() or not 1 <= int(text) <= MOST_TASKS:
        raise argparse.ArgumentTypeError(f"give a number of nodes from 1 to {MOST_TASKS}")
    return int(text)


def run(args: argparse.Namespace, overrides) -> int:
    """Plan here, submit, watch, check every file at the end; the exit status."""
    from app.cluster import slurm
    from app.cluster.plan import make_work, planned, save
    from app.cluster.slurm import Settings
    from app.cluster.watch import Watch
    from app.requests import overrides_to_wire

    _refuse_combinations(args)
    slurm.need("sbatch")  # no Slurm here: the sentence, before anything is listed
    label, dest, files = _files(args, overrides)
    budget = max(1, args.host_budget // min(args.nodes, len(files) or 1))
    plan = planned(label, dest, files, overrides_to_wire(overrides), budget)
    if getattr(args, "dry_run", False):
        return _dry_run(plan, args.nodes)
    work = make_work(dest)
    save(plan, work)
    from app.cli.progress import ProgressLine

    line = ProgressLine(not args.quiet)
    settings = Settings(nodes=args.nodes, partition=args.partition, account=args.account, time=args.time,
                        extra=tuple(args.sbatch_arg), retries=ROUNDS if args.retries is None else args.retries,
                        name=f"ferry-{dest.name}"[:60])
    watch = Watch(plan, work, settings, show=line.show, say=line.say)
    began = time.time()
    try:
        checked = watch.run()
    except stops.STOPS as stop:
        line.done()
        print(f"labferry: {stops.said(stop)}: the tasks were cancelled (scancel); the same command resumes what "
              "they left.", file=sys.stderr)
        return stops.status(stop)
    except slurm.ClusterError as exc:
        line.done()
        _record(plan, began, "failed", exc)
        raise
    line.done()
    return _ended(args, plan, work, checked, began)


def _dry_run(plan, nodes: int) -> int:
    """The shares as the first round would deal them; nothing submitted, nothing written."""
    from app.cluster.plan import deal

    shares = deal([f.size or 0 for f in plan.files], min(nodes, len(plan.files)))
    print(f"{plan.label} → {plan.dest}: {len(plan.files)} files, {format_bytes(plan.total_bytes)}, "
          f"{len(shares)} tasks of {plan.budget} connections each")
    for k, share in enumerate(shares):
        print(f"task {k}: {len(share)} files, {format_bytes(sum(plan.files[i].size or 0 for i in share))}")
    return 0


def _refuse_combinations(args: argparse.Namespace) -> None:
    for flag, given in (("--on", args.on), ("--via", args.via), ("--pack", args.pack), ("--unpack", args.unpack),
                        ("--sync", args.sync), ("-i", args.input)):
        if given:
            raise BadRequest(f"--cluster does not take {flag} yet; run the copy on the login node with --cluster "
                             "alone, or without --cluster.")


def _files(args: argparse.Namespace, overrides) -> tuple[str, Path, list]:
    """(label, DEST folder, the files below it, claimed)."""
    from app.accessions.ids import is_accession
    from app.cluster.sources import claimed, folder_files
    from app.requests import default_registry, resolve_here

    if is_accession(args.source):
        from app.accessions.fetch import listed

        from .accession import study_plan

        study = study_plan(args, overrides)
        dest = Path(args.dest).expanduser().absolute()
        if dest.exists() and not dest.is_dir():
            raise BadRequest(f"{dest} is a file; a study's files go into a folder. Give a folder (DEST/).")
        args.study = study
        return study.label, dest, claimed(listed(study.files), dest)
    request = resolve_here(args.source, args.dest, overrides)
    dest = Path(request.dest)
    return args.source, dest, claimed(folder_files(request, default_registry), dest)


def _ended(args: argparse.Namespace, plan, work: Path, checked, began: float) -> int:
    seconds = max(1e-3, time.time() - began)
    moved = plan.total_bytes
    verified, sized = len(checked.verified), len(checked.sized)
    how = (f"{verified} verified against their published checksums" if verified else "") + \
          (f"{', ' if verified else ''}{sized} size-checked (no checksum published; not verified)" if sized else "")
    study = getattr(args, "study", None)
    if study is not None and args.files == "fastq":
        from app.accessions.sheets import write_metadata, write_sheet

        write_metadata(study, Path(plan.dest))
        write_sheet(args.samplesheet, study, Path(plan.dest), {f.name for f in checked.verified}, args.sheet_paths)
    _record(plan, began, "done", None, verified=not sized, how=how)
    if not args.quiet:
        print(f"labferry: {plan.label} → {plan.dest}: {len(plan.files)} files, {format_bytes(moved)} in "
              f"{format_duration(seconds)} ({format_rate(moved / seconds)}) over the cluster; {how}.",
              file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)  # the plan, the tasks' records and logs: done with
    if args.json:
        print(json.dumps({"state": "done", "source": plan.label, "dest": plan.dest, "files": len(plan.files),
                          "bytes": moved, "seconds": seconds, "verified": verified, "size_checked": sized}))
    return 0


def _record(plan, began: float, outcome: str, error, *, verified: bool = False, how: str = "") -> None:
    """One History row for the whole job."""
    from app.store import Store

    seconds = max(1e-3, time.time() - began)
    with Store() as store:
        store.history.add(source=plan.label, dest=plan.dest, backend="cluster (slurm)", outcome=outcome,
                          bytes=plan.total_bytes if outcome == "done" else None, seconds=seconds,
                          throughput_mbps=plan.total_bytes * 8 / seconds / 1e6 if outcome == "done" else None,
                          verified=int(verified), verify_method=how or None, error=str(error) if error else None,
                          error_kind=error.kind if error else None, started=began)
