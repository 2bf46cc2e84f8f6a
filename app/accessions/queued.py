"""An accession queued in the window: the same job as ``labferry copy ena:…``, finished when the job ends.

The window queues the plan's list job and goes on; the job may end after the window was closed and opened
again, so what the end needs is kept in the folder itself: ``metadata.tsv`` (the whole report) is written when
the job is queued, and when it ends the samplesheet is made from it and the files the job verified, and the
files that failed for a reason the other route may not have (``fetch.OTHER_ROUTE_FOR``) are queued again by
that route.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from app.requests import Defaults, Overrides, Request, resolve_list
from backends.core.base import FILE_DONE, FILE_FAILED, FILE_KEPT
from backends.core.errors import LocalError
from backends.core.words import some_of
from backends.destination import Destination, write_atomic

from . import ena
from .complete import adopt, can_complete, completing_plan, dropped_note, reroute_completed, short_runs
from .convert import convert_runs
from .fetch import BUDGET, OTHER_ROUTE, OTHER_ROUTE_FOR, check_refusals, check_room, listed
from .plans import LAYOUTS, apply_layout
from .sheets import write_metadata, write_sheet

#: beside metadata.tsv: which samplesheet the window was asked for (``--samplesheet``, ``--sheet-paths``)
SHEET_CHOICE = ".labferry-samplesheet.json"


def queue_request(plan: ena.Plan, folder: Path, overrides: Overrides | None = None, *,
                  defaults: Defaults | None = None, store=None, budget: int = BUDGET,
                  sheet: tuple[str, str] = ("fetchngs", "absolute"), layout: str = "flat") -> Request:
    """The list request for ``plan`` into ``folder``, once the space is known to be there; ``metadata.tsv``
    (and ``sheet``, the samplesheet asked for, the layout, and the files that come from NCBI) is written now,
    so the end of the job can convert and make the samplesheet whenever it comes, after the window was closed
    and opened again too."""
    if folder.exists() and not folder.is_dir():
        raise LocalError(f"{folder} is a file; an accession's files go into a folder. Choose a folder.")
    Destination(folder).folder("")
    check_refusals(folder)
    reroute_completed(plan, folder, overrides.ca_file if overrides else None)  # completed by an earlier fetch
    check_room(plan, folder)  # the same reckoning as ``labferry copy ena:…``: what is here already counts
    request = resolve_list(plan.label, listed(plan.files), folder, _budgeted(overrides, budget), defaults=defaults,
                           store=store)
    write_metadata(plan, folder)
    ncbi = [_ncbi_entry(f) for f in plan.files if f.source == "ncbi"]
    write_atomic(folder / SHEET_CHOICE, json.dumps({"pipeline": sheet[0], "paths": sheet[1], "layout": layout,
                                                    "source": plan.source, "ncbi": ncbi}).encode())
    return request


def _ncbi_entry(f: ena.RemoteFile, **more) -> dict:
    return {"run": f.run, "name": f.name.rsplit("/", 1)[-1], "url": f.url, "md5": f.md5, "size": f.size, **more}


def finish(label: str, folder: Path, files: dict, *, defaults: Defaults | None = None, store=None,
           budget: int = BUDGET) -> tuple[int | None, Request | None, str | None, str | None]:
    """After a list job for an accession ended (``files``: its view's name → (state, error, kind)): (the
    samplesheet's runs, or None when the job was not a FASTQ accession's; the request that follows, or None:
    the files that failed tried by the other route, or, under ``--source auto``, the ``.sra`` of each run whose
    FASTQ from ENA lack a read, to be converted with every read when that job ends; a sentence naming the runs
    left short of a read, or None; a sentence naming the runs the samplesheet leaves out and why, or None)."""
    plan = plan_from_folder(folder, label)
    if plan is None:
        return None, None, None, None
    sub = _completing(folder, plan)
    if not files or not set(files) <= {f.name for f in (*plan.files, *sub.files)}:
        return None, None, None, None
    verified = {name for name, (state, *_) in files.items() if state in (FILE_DONE, FILE_KEPT)}
    verified |= _verified_before(plan, folder, files)
    pipeline, style = _sheet_choice(folder)
    unconverted = convert_runs(plan, folder, verified)  # fasterq-dump, where a run came from NCBI as .sra
    if sub.files:  # the job that completes runs from NCBI ended: their .sra converted over ENA's files
        unconverted += convert_runs(sub, folder, verified)
        adopt(plan, sub, folder, verified | {f.name for f in plan.files if (folder / f.name).is_file()})
    rows, left_out = write_sheet(pipeline, plan, folder, verified, style)
    if unconverted:
        raise LocalError(" ".join(unconverted))
    short = short_runs(plan, folder, verified)
    if short and can_complete(plan) and not label.endswith((OTHER_ROUTE, COMPLETING)):
        completing = _complete_request(plan, short, folder, label, budget, defaults, store)
        if completing is not None:
            return rows, completing, None, None
    note = dropped_note(plan, short, window=True)
    again = [f for f in plan.files if f.name in files and files[f.name][0] == FILE_FAILED
             and (files[f.name][2] or "") in OTHER_ROUTE_FOR and f.other_url]
    if not again or label.endswith((OTHER_ROUTE, COMPLETING)):
        return rows, None, note, _left_out_note(pipeline, left_out)
    request = resolve_list(label + OTHER_ROUTE, listed(again, other_route=True), folder, _budgeted(None, budget),
                           defaults=defaults, store=store)
    left = _left_out_note(pipeline, left_out)  # said now: the other route may fail before it fetches a file
    return rows, request, note, left and left[:-1] + " for now; the other route is tried for what failed."


def _left_out_note(pipeline: str, left_out: list[tuple[str, str]]) -> str | None:
    """The runs the samplesheet leaves out, and why (the command line's note, for the window)."""
    if not left_out:
        return None
    return f"{pipeline}'s samplesheet leaves out {some_of([f'{run} ({why})' for run, why in left_out], 5)}."


#: the label of the job that fetches, from NCBI, the runs ENA served short of a read
COMPLETING = " (every read, from NCBI)"


def _complete_request(plan: ena.Plan, short: list[tuple[str, int, int]], folder: Path, label: str, budget: int,
                      defaults, store) -> Request | None:
    """The list request for the ``.sra`` of each run in ``short`` (its FASTQ from ENA lack a read), recorded
    beside metadata.tsv so the end of that job converts them; None when NCBI has none of them."""
    sub = completing_plan(plan, [run for run, *_ in short], None)
    if not sub.files:
        return None
    chosen = _chosen(folder)
    chosen["ncbi"] = [*(chosen.get("ncbi") or []), *(_ncbi_entry(f, saved=f.name, completes=True) for f in sub.files)]
    write_atomic(folder / SHEET_CHOICE, json.dumps(chosen).encode())
    return resolve_list(label + COMPLETING, listed(sub.files), folder, _budgeted(None, budget), defaults=defaults,
                        store=store)


def _completing(folder: Path, plan: ena.Plan) -> ena.Plan:
    """The ``.sra`` files recorded to complete runs ENA served short (``_complete_request``), as a plan."""
    sub = ena.Plan(plan.label, "fastq", source="auto")
    for entry in _chosen(folder).get("ncbi") or []:
        if isinstance(entry, dict) and entry.get("completes"):
            found = _entry_file(entry)
            if found is not None:
                sub.files.append(replace(found, name=str(entry.get("saved") or found.name)))
    sub.rows = [row for row in plan.rows if row.get("run_accession") in {f.run for f in sub.files}]
    return sub


def _entry_file(entry: dict) -> ena.RemoteFile | None:
    try:
        return ena.RemoteFile(str(entry["run"]), str(entry["name"]), str(entry["url"]), str(entry["md5"]),
                              int(entry["size"]), None, source="ncbi")
    except (KeyError, TypeError, ValueError):
        return None


def _sheet_choice(folder: Path) -> tuple[str, str]:
    """What ``queue_request`` recorded; fetchngs' sheet with absolute paths where nothing (or nonsense) is."""
    from .pipelines import PATH_STYLES, SHEETS

    chosen = _chosen(folder)
    pipeline, style = chosen.get("pipeline"), chosen.get("paths")
    return (pipeline if pipeline in SHEETS else "fetchngs", style if style in PATH_STYLES else "absolute")


def plan_from_folder(folder: Path, label: str) -> ena.Plan | None:
    """The FASTQ plan ``metadata.tsv`` in ``folder`` records, with the files NCBI gave and the layout the
    window recorded beside it, or None."""
    try:
        text = (folder / "metadata.tsv").read_text()
    except OSError:
        return None
    chosen = _chosen(folder)
    plan = ena.Plan(label.removesuffix(OTHER_ROUTE).removesuffix(COMPLETING), "fastq",
                    source=chosen.get("source") if chosen.get("source") in ("auto", "ena", "ncbi") else "auto")
    plan.add(ena.parse_tsv(text))
    for entry in chosen.get("ncbi") or []:
        found = _entry_file(entry) if isinstance(entry, dict) and not entry.get("completes") else None
        if found is None:
            continue
        plan.files.append(found)
        plan.from_ncbi.append(found.run)
    plan.without_files = [run for run in plan.without_files if run not in plan.from_ncbi]
    return apply_layout(plan, chosen.get("layout") if chosen.get("layout") in LAYOUTS else "flat")


def _chosen(folder: Path) -> dict:
    try:
        chosen = json.loads((folder / SHEET_CHOICE).read_text())
    except (OSError, ValueError):
        return {}
    return chosen if isinstance(chosen, dict) else {}


def _verified_before(plan: ena.Plan, folder: Path, files: dict) -> set[str]:
    """Files of the plan that an earlier job of the same folder verified (a second route's job lists only
    the files it fetched): those under their final name with the report's size."""
    return {f.name for f in plan.files if f.name not in files and (folder / f.name).is_file()
            and (folder / f.name).stat().st_size == f.size}


def _budgeted(overrides: Overrides | None, budget: int) -> Overrides:
    return replace(overrides or Overrides(), max_streams=budget)
