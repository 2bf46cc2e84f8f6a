"""Runs whose FASTQ from ENA lack a read, completed from NCBI (``--source auto``, the default).

ENA's FASTQ of a run can hold fewer reads than the run's spots: an index read, most often (fetchngs #144).
``reads.missing_bases`` tells, from the first records of the files that arrived. Under ``--source auto`` such a
run's ``.sra`` is then located by NCBI's SRA Data Locator, fetched, and converted with every read
(``convert.py``). The converted files take the archive's names, ``RUN_1`` … in read order, over ENA's (which
held a part of the same reads); ENA's files the conversion did not write over are removed, so the run's folder
holds one consistent set. The run's conversion manifest (``RUN.fastq.md5``) marks it as completed: the same
command again routes it to NCBI from the start (``reroute_completed``), so its ``.sra`` is kept, nothing is
fetched twice, and ENA's files never come back over the complete ones.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import replace
from pathlib import Path

from .convert import converted
from .ena import Plan
from .reads import missing_bases, number_of

#: runs named one by one in a sentence; the rest are counted
NAMED = 5


def completes(plan: Plan) -> bool:
    """Whether runs ENA serves short are completed from NCBI: ``--source auto``, FASTQ asked for."""
    return plan.source == "auto" and plan.kind == "fastq"


def short_runs(plan: Plan, folder: Path, done: set[str]) -> list[tuple[str, int, int]]:
    """(run, the spot's bases in the report, the bases its files hold) for each run whose files from ENA, all
    here and verified, hold fewer bases a spot than the run has."""
    from backends.destination import Destination

    if plan.kind != "fastq":
        return []
    saved = Destination(folder)
    by_run = plan.files_by_run()
    short = []
    for meta in plan.rows:
        run = meta.get("run_accession", "")
        listed = by_run.get(run, [])
        files = [f for f in listed if f.source == "ena" and f.name in done]
        reads = [f for f in files if (number_of(f.name, run) or 0) >= 1] or files[:1]
        if not reads or len(files) < len(listed) or run in plan.converted:
            continue
        found = missing_bases(meta, [folder / saved.claim(f.name) for f in reads])
        if found:
            short.append((run, *found))
    return short


#: how the window names ``--source auto`` (its From choice, app/ui/accession_dialog.py)
FROM_AUTO = "From \u201cENA, and NCBI's .sra for runs ENA lacks\u201d"


def dropped_note(plan: Plan, short: list[tuple[str, int, int]], *, window: bool = False) -> str | None:
    """One sentence naming the runs left short, and how to get every read (with ``window``, in the window's
    words: its From choice, not ``--source``); None when there are none."""
    if not short:
        return None
    from .convert import INSTALL, tool

    named = ", ".join(f"{run} ({held} of {spot} bases a spot)" for run, spot, held in short[:NAMED])
    more = f" and {len(short) - NAMED} more" if len(short) > NAMED else ""
    again = "fetch it again" if window else "run the same command again"
    if not completes(plan):
        how = (f"fetched with {FROM_AUTO}, each run's .sra comes from NCBI, converted with every read" if window
               else "--source auto (the default) or ncbi fetches each run's .sra and converts it with every read")
    elif tool() is None:  # not fetched: a .sra nothing here can convert
        how = INSTALL.replace("run the same command again", again).replace("its FASTQ files",
                                                                           "every read from NCBI's .sra")
    else:
        how = "NCBI has no .sra for them either"
    return (f"ENA's FASTQ files hold fewer bases than the run's spots for {named}{more}: a read, most often an index, "
            f"is not in them; {how}.")


def can_complete(plan: Plan) -> bool:
    """Whether runs ENA serves short are fetched from NCBI now: ``--source auto``, and ``fasterq-dump`` here to
    convert them (without it their .sra would only be kept, and ENA's files serve meanwhile)."""
    from .convert import tool

    return completes(plan) and tool() is not None


def completing_plan(plan: Plan, runs: list[str], ca_file: str | None) -> Plan:
    """A plan of the ``.sra`` files NCBI has for ``runs``, each in the folder its run's ENA files are in (a
    sample's, with ``--layout sample``); a run NCBI has nothing for (or NCBI failing: said in its notes) is not
    in it."""
    from .plans import locate_at_ncbi

    folder_of = {f.run: posixpath.dirname(f.name) for f in plan.files if f.run in runs}
    sub = Plan(plan.label, plan.kind, plan.route, source="auto")
    sub.rows = [row for row in plan.rows if row.get("run_accession") in folder_of]
    sub.without_files = list(folder_of)
    locate_at_ncbi(sub, ca_file)
    sub.files = [replace(f, name=posixpath.join(folder_of[f.run], f.name)) if folder_of.get(f.run) else f
                 for f in sub.files]
    return sub


def adopt(plan: Plan, sub: Plan, folder: Path, done: set[str]) -> list[str]:
    """The runs ``sub`` completed (converted: ``sub.converted``) into ``plan``: their ENA files leave it, their
    ``.sra`` and converted FASTQ take their place, and ENA's files the conversion did not write over are removed
    from DEST (Ferry fetched them, verified, in this same command). Returns the runs completed."""
    from backends.destination import Destination

    completed = [run for run in sub.converted if run not in plan.converted]
    saved = Destination(folder)
    for run in completed:
        made = {f.name for f in sub.converted[run]}
        for f in (f for f in plan.files if f.run == run and f.source == "ena"):
            if f.name not in made and f.name in done:
                _remove(folder / saved.claim(f.name))
        plan.converted[run] = sub.converted[run]
    _from_ncbi(plan, sub, set(completed))
    return completed


def reroute_completed(plan: Plan, folder: Path, ca_file: str | None) -> None:
    """Runs an earlier run of the command completed (their conversion manifest is in their folder, over ENA's
    names) come from NCBI in this plan too: their ``.sra``, verified here, is kept and nothing fetched again."""
    if not completes(plan):
        return
    manifests: dict[str, set[str]] = {}  # each run folder's conversion manifests, listed once (not a stat a run)
    runs = []
    for run, files in plan.files_by_run().items():
        sub = posixpath.dirname(files[0].name) if files else ""
        if sub not in manifests:
            manifests[sub] = _manifests_in(folder / sub)
        if (files and f"{run}.fastq.md5" in manifests[sub] and all(f.source == "ena" for f in files)
                and converted(folder / sub, run) is not None):
            runs.append(run)
    if not runs:
        return
    sub = completing_plan(plan, runs, ca_file)
    plan.notes += sub.notes
    _from_ncbi(plan, sub, {f.run for f in sub.files})


def _from_ncbi(plan: Plan, sub: Plan, runs: set[str]) -> None:
    """``runs`` come from NCBI in ``plan``: their ENA files leave it, their ``.sra`` from ``sub`` joins it."""
    plan.files = [f for f in plan.files if not (f.run in runs and f.source == "ena")]
    plan.files += [f for f in sub.files if f.run in runs]
    taken = dict.fromkeys(f.run for f in sub.files if f.run in runs)  # in the plan's order, once each
    plan.from_ncbi += [run for run in taken if run not in plan.from_ncbi]


def _manifests_in(folder: Path) -> set[str]:
    try:
        with os.scandir(folder) as entries:
            return {e.name for e in entries if e.name.endswith(".fastq.md5")}
    except OSError:
        return set()  # no folder yet: nothing converted in it


def _remove(path: Path) -> None:
    try:
        if path.is_file() and not path.is_symlink():
            path.unlink()
    except OSError:
        pass  # left beside the complete set; the samplesheet names the complete files only
