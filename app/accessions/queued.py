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
from backends.destination import Destination, write_atomic

from . import ena
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
    check_room(plan, folder)  # the same reckoning as ``labferry copy ena:…``: what is here already counts
    request = resolve_list(plan.label, listed(plan.files), folder, _budgeted(overrides, budget), defaults=defaults,
                           store=store)
    write_metadata(plan, folder)
    ncbi = [{"run": f.run, "name": f.name.rsplit("/", 1)[-1], "url": f.url, "md5": f.md5, "size": f.size}
            for f in plan.files if f.source == "ncbi"]
    write_atomic(folder / SHEET_CHOICE, json.dumps({"pipeline": sheet[0], "paths": sheet[1], "layout": layout,
                                                    "ncbi": ncbi}).encode())
    return request


def finish(label: str, folder: Path, files: dict, *, defaults: Defaults | None = None, store=None,
           budget: int = BUDGET) -> tuple[int | None, Request | None]:
    """After a list job for an accession ended (``files``: its view's name → (state, error, kind)): (the
    samplesheet's runs, or None when the job was not a FASTQ accession's; the request that tries the files
    that failed by the other route, or None)."""
    plan = plan_from_folder(folder, label)
    if plan is None or not files or not set(files) <= {f.name for f in plan.files}:
        return None, None
    verified = {name for name, (state, *_) in files.items() if state in (FILE_DONE, FILE_KEPT)}
    verified |= _verified_before(plan, folder, files)
    pipeline, style = _sheet_choice(folder)
    unconverted = convert_runs(plan, folder, verified)  # fasterq-dump, where a run came from NCBI as .sra
    rows, _ = write_sheet(pipeline, plan, folder, verified, style)
    if unconverted:
        raise LocalError(" ".join(unconverted))
    again = [f for f in plan.files if f.name in files and files[f.name][0] == FILE_FAILED
             and (files[f.name][2] or "") in OTHER_ROUTE_FOR and f.other_url]
    if not again or label.endswith(OTHER_ROUTE):
        return rows, None
    request = resolve_list(label + OTHER_ROUTE, listed(again, other_route=True), folder, _budgeted(None, budget),
                           defaults=defaults, store=store)
    return rows, request


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
    plan = ena.Plan(label.removesuffix(OTHER_ROUTE), "fastq")
    plan.add(ena.parse_tsv(text))
    chosen = _chosen(folder)
    for entry in chosen.get("ncbi") or []:
        try:
            found = ena.RemoteFile(str(entry["run"]), str(entry["name"]), str(entry["url"]), str(entry["md5"]),
                                   int(entry["size"]), None, source="ncbi")
        except (KeyError, TypeError, ValueError):
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
