"""Seeing what a study holds before fetching it, and fetching a part of it.

``--filter FIELD=VALUE`` keeps the runs whose report field has that value (ENA's own words, compared without
regard to case: ``library_strategy=RNA-Seq``, ``instrument_platform=ILLUMINA``, ``library_layout=PAIRED``,
``scientific_name=Homo sapiens``); filters on different fields must all hold, several values for one field are
alternatives. ``--runs N`` keeps the first N runs the report lists. ``--dry-run`` prints what would be fetched
(runs, files, kinds, sizes, total, the free space at DEST, the source) and fetches nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from backends.core.errors import BadRequest

from .ena import FIELDS, Plan

#: the report's fields that take a filter (the files' own columns are not a run's property)
FILTERABLE = tuple(f for f in FIELDS if not f.endswith(("_ftp", "_md5", "_bytes")))


def parse_filters(given: list[str] | None) -> dict[str, set[str]]:
    """``["library_strategy=RNA-Seq", …]`` → field → accepted values (lower case); a sentence for a bad one."""
    wanted: dict[str, set[str]] = {}
    for text in given or ():
        field, sep, value = text.partition("=")
        field = field.strip().lower()
        if not sep or not value.strip():
            raise BadRequest(f"'{text}' is not a filter; write it as FIELD=VALUE, such as library_strategy=RNA-Seq.")
        if field not in FILTERABLE:
            raise BadRequest(f"'{field}' is not a field of ENA's report that Ferry can filter on; use one of "
                             f"{', '.join(FILTERABLE)}.")
        wanted.setdefault(field, set()).add(value.strip().lower())
    return wanted


def keeps(row: dict, filters: dict[str, set[str]]) -> bool:
    """Whether a report row passes every filter (``parse_filters``' values are in lower case)."""
    return all((row.get(field) or "").lower() in values for field, values in filters.items())


def narrow(plan: Plan, filters: dict[str, set[str]], runs: int | None = None) -> Plan:
    """``plan`` with only the runs the filters keep (the first ``runs`` of them), and their files."""
    if not filters and runs is None:
        return plan
    if runs is not None and runs < 1:
        raise BadRequest(f"--runs {runs} keeps no run; give 1 or more.")
    kept_rows = [row for row in plan.rows if keeps(row, filters)]
    if filters and plan.rows and not kept_rows:
        raise BadRequest(no_match(plan, filters))
    if runs is not None:
        kept_rows = kept_rows[:max(0, runs)]
    keep = {row.get("run_accession") for row in kept_rows}
    plan.rows = kept_rows
    plan.files = [f for f in plan.files if f.run in keep or not f.run]  # plain addresses from a list stay
    plan.without_files = [run for run in plan.without_files if run in keep]
    return plan


def no_match(plan: Plan, filters: dict[str, set[str]]) -> str:
    """A filter no run passes: what was asked, and what the runs have in those fields (so the next try is right)."""
    asked = ", ".join(f"{field}={'|'.join(sorted(values))}" for field, values in filters.items())
    seen = []
    for field in filters:
        values = sorted({row.get(field) or "(empty)" for row in plan.rows})
        seen.append(f"{field} {', '.join(values[:8])}{' …' if len(values) > 8 else ''}")
    return f"No run of {plan.label} matches {asked}; its runs have {'; '.join(seen)}."


def dry_run_lines(plan: Plan, folder: Path) -> list[str]:
    """What ``--dry-run`` prints: one block per run, then the totals and the room at DEST."""
    from app.units import counted, format_bytes

    by_run = plan.files_by_run()
    ncbi = f"; {counted(len(plan.from_ncbi), 'run')} from NCBI as .sra" if plan.from_ncbi else ""
    lines = [f"{plan.label}: {counted(plan.runs, 'run')}, {counted(len(plan.files), plan.kind + ' file')}, "
             f"{format_bytes(plan.total_bytes)}, from ENA by {plan.route} (the other route for a file that "
             f"fails){ncbi}"]
    for row in plan.rows:
        run = row.get("run_accession", "")
        what = " ".join(v for v in (row.get("library_strategy"), row.get("instrument_platform"),
                                    row.get("library_layout"), row.get("scientific_name")) if v)
        lines.append(f"  {run}  {row.get('sample_accession', '')}  {what}")
        for f in by_run.get(run, []):
            source = "  from NCBI (to be converted to FASTQ)" if f.source == "ncbi" and plan.kind == "fastq" else \
                "  from NCBI" if f.source == "ncbi" else ""
            lines.append(f"      {f.name}  {format_bytes(f.size)}  md5 {f.md5 or '(none given)'}{source}")
        if not by_run.get(run):
            lines.append(f"      no {plan.kind} files in ENA" + (" or NCBI" if plan.source != "ena" else ""))
    room = free_space(folder)
    lines.append(f"total {format_bytes(plan.total_bytes)}; free at {folder}: "
                 f"{format_bytes(room) if room is not None else 'unknown'}"
                 + ("  (not enough room)" if room is not None and room < plan.total_bytes else ""))
    return lines


def free_space(folder: Path) -> int | None:
    """Free space where ``folder`` is, or would be made (its nearest existing parent); None when unknown."""
    for place in (folder, *folder.parents):
        if place.exists():
            try:
                return shutil.disk_usage(place).free
            except OSError:
                return None
    return None
