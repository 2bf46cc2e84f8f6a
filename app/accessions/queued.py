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
from .fetch import BUDGET, OTHER_ROUTE, OTHER_ROUTE_FOR, check_refusals, check_room, listed
from .sheets import write_metadata, write_sheet

#: beside metadata.tsv: which samplesheet the window was asked for (``--samplesheet``, ``--sheet-paths``)
SHEET_CHOICE = ".labferry-samplesheet.json"


def queue_request(plan: ena.Plan, folder: Path, overrides: Overrides | None = None, *,
                  defaults: Defaults | None = None, store=None, budget: int = BUDGET,
                  sheet: tuple[str, str] = ("fetchngs", "absolute")) -> Request:
    """The list request for ``plan`` into ``folder``, once the space is known to be there; ``metadata.tsv``
    (and ``sheet``, the samplesheet asked for) is written now, so the end of the job can make the samplesheet
    whenever it comes, after the window was closed and opened again too."""
    if folder.exists() and not folder.is_dir():
        raise LocalError(f"{folder} is a file; an accession's files go into a folder. Choose a folder.")
    Destination(folder).folder("")
    check_refusals(folder)
    check_room(plan, folder)  # the same reckoning as ``labferry copy ena:…``: what is here already counts
    request = resolve_list(plan.label, listed(plan.files), folder, _budgeted(overrides, budget), defaults=defaults,
                           store=store)
    write_metadata(plan, folder)
    write_atomic(folder / SHEET_CHOICE, json.dumps({"pipeline": sheet[0], "paths": sheet[1]}).encode())
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
    pipeline, style = _sheet_choice(folder)
    rows, _ = write_sheet(pipeline, plan, folder, verified | _verified_before(plan, folder, files), style)
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

    try:
        chosen = json.loads((folder / SHEET_CHOICE).read_text())
        pipeline, style = chosen.get("pipeline"), chosen.get("paths")
    except (OSError, ValueError, AttributeError):
        return "fetchngs", "absolute"
    return (pipeline if pipeline in SHEETS else "fetchngs", style if style in PATH_STYLES else "absolute")


def plan_from_folder(folder: Path, label: str) -> ena.Plan | None:
    """The FASTQ plan ``metadata.tsv`` in ``folder`` records, or None."""
    try:
        text = (folder / "metadata.tsv").read_text()
    except OSError:
        return None
    plan = ena.Plan(label.removesuffix(OTHER_ROUTE), "fastq")
    plan.add(ena.parse_tsv(text))
    return plan


def _verified_before(plan: ena.Plan, folder: Path, files: dict) -> set[str]:
    """Files of the plan that an earlier job of the same folder verified (a second route's job lists only
    the files it fetched): those under their final name with the report's size."""
    return {f.name for f in plan.files if f.name not in files and (folder / f.name).is_file()
            and (folder / f.name).stat().st_size == f.size}


def _budgeted(overrides: Overrides | None, budget: int) -> Overrides:
    return replace(overrides or Overrides(), max_streams=budget)
