"""``samplesheet.csv`` for nf-core pipelines and ``metadata.tsv`` with the whole report.

The samplesheet has nf-core/fetchngs' layout (its ``SRA_TO_SAMPLESHEET``): ``sample`` (the experiment, so runs
sequenced from one library share it), ``fastq_1`` and ``fastq_2`` (absolute paths), then the run's metadata, every
value in double quotes, as nf-core/rnaseq and the others read it. ``md5_1``/``md5_2`` and ``single_end`` say what
Ferry checked and how the reads are laid out; ``fastq_index_1``/``fastq_index_2`` hold a run's index (technical)
reads and ``fastq_unpaired`` the reads whose mate was lost, where the archive has them.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from backends.destination import write_atomic

from .ena import FIELDS, Plan

SHEET_COLUMNS = ("sample", "fastq_1", "fastq_2", "run_accession", "experiment_accession", "sample_accession",
                 "secondary_sample_accession", "study_accession", "secondary_study_accession", "submission_accession",
                 "sample_title", "experiment_title", "study_title", "scientific_name", "tax_id", "instrument_platform",
                 "instrument_model", "library_layout", "library_strategy", "library_source", "library_selection",
                 "library_name", "read_count", "base_count", "md5_1", "md5_2", "single_end", "fastq_index_1",
                 "fastq_index_2", "fastq_unpaired")


def write_samplesheet(plan: Plan, folder: Path, done: set[str], style: str = "absolute") -> int:
    """One row per run whose FASTQ files are all here and verified (``done``: their names); returns the rows.
    ``style``: the paths absolute, or relative to the folder (``--sheet-paths``)."""
    from .pipelines import runs_with_reads

    rows = []
    for run in runs_with_reads(plan, folder, done, style):
        record = {k: run.meta.get(k, "") for k in SHEET_COLUMNS}
        record.update(sample=run.meta.get("experiment_accession") or run.run, fastq_1=run.read_1,
                      fastq_2=run.read_2, md5_1=run.md5_1, md5_2=run.md5_2,
                      single_end="false" if run.read_2 else "true", fastq_unpaired=run.unpaired,
                      **{f"fastq_index_{i}": path for i, path in enumerate(run.index[:2], 1)})
        rows.append(record)
    out = io.StringIO(newline="")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    writer.writerows([r[k] for k in SHEET_COLUMNS] for r in rows)
    write_atomic(folder / "samplesheet.csv", out.getvalue().encode("utf-8"))
    return len(rows)


def write_sheet(pipeline: str, plan: Plan, folder: Path, done: set[str],
                style: str = "absolute") -> tuple[int, list[tuple[str, str]]]:
    """The samplesheet ``--samplesheet`` asks for: (its rows, the runs left out of it and why)."""
    if pipeline == "none":
        return 0, []
    missing = _not_arrived(plan, done)
    if pipeline == "fetchngs":
        return write_samplesheet(plan, folder, done, style), missing
    from .pipelines import write_pipeline_sheet

    sheet = write_pipeline_sheet(pipeline, plan, folder, done, style)
    return len(sheet.rows), missing + sheet.left_out


def _not_arrived(plan: Plan, done: set[str]) -> list[tuple[str, str]]:
    """The runs a sheet leaves out because their files did not all arrive (failed or still to come): said with
    the sheet, where they were once left out without a word."""
    runs: dict[str, list] = {}
    for f in plan.files:
        runs.setdefault(f.run, []).append(f)
    return [(run, "its files did not all arrive") for run, files in runs.items()
            if run not in plan.converted and any(f.name not in done for f in files)]


def write_metadata(plan: Plan, folder: Path) -> None:
    """Every row the portal gave, every column Ferry asked for (tab-separated, as ENA writes it); written whole
    or not at all, never through a link, a read-only folder said in a sentence (``destination``)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(FIELDS)
    writer.writerows([row.get(k, "") for k in FIELDS] for row in plan.rows)
    write_atomic(folder / "metadata.tsv", out.getvalue().encode("utf-8"))
