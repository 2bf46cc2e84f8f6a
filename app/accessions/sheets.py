"""``samplesheet.csv`` for nf-core pipelines and ``metadata.tsv`` with the whole report.

The samplesheet has nf-core/fetchngs' layout (its ``SRA_TO_SAMPLESHEET``): ``sample`` (the experiment, so runs
sequenced from one library share it), ``fastq_1`` and ``fastq_2`` (absolute paths), then the run's metadata, every
value in double quotes, as nf-core/rnaseq and the others read it. ``md5_1``/``md5_2`` and ``single_end`` say what
Ferry checked and how the reads are laid out.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from backends.destination import Destination, write_atomic

from .ena import FIELDS, Plan

SHEET_COLUMNS = ("sample", "fastq_1", "fastq_2", "run_accession", "experiment_accession", "sample_accession",
                 "secondary_sample_accession", "study_accession", "secondary_study_accession", "submission_accession",
                 "sample_title", "experiment_title", "study_title", "scientific_name", "tax_id", "instrument_platform",
                 "instrument_model", "library_layout", "library_strategy", "library_source", "library_selection",
                 "library_name", "read_count", "base_count", "md5_1", "md5_2", "single_end")


def write_samplesheet(plan: Plan, folder: Path, done: set[str]) -> int:
    """One row per run whose FASTQ files are all here and verified (``done``: their names); returns the rows."""
    by_run: dict[str, list] = {}
    for f in plan.files:
        by_run.setdefault(f.run, []).append(f)
    rows = []
    saved = Destination(folder)  # where each file was saved (the archive's name, made safe)

    def where(name: str) -> str:
        return str((folder / saved.claim(name)).resolve())

    for meta in plan.rows:
        files = by_run.get(meta.get("run_accession", ""), [])
        if not files or any(f.name not in done for f in files):
            continue
        reads = {f.read: f for f in files if f.read is not None}
        first, second = (reads.get(1), reads.get(2)) if reads else (files[0], None)
        record = {k: meta.get(k, "") for k in SHEET_COLUMNS}
        record.update(sample=meta.get("experiment_accession") or meta.get("run_accession", ""),
                      fastq_1=where(first.name) if first else "",
                      fastq_2=where(second.name) if second else "",
                      md5_1=first.md5 if first else "", md5_2=second.md5 if second else "",
                      single_end="false" if second else "true")
        rows.append(record)
    out = io.StringIO(newline="")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    writer.writerows([r[k] for k in SHEET_COLUMNS] for r in rows)
    write_atomic(folder / "samplesheet.csv", out.getvalue().encode("utf-8"))
    return len(rows)


def write_metadata(plan: Plan, folder: Path) -> None:
    """Every row the portal gave, every column Ferry asked for (tab-separated, as ENA writes it); written whole
    or not at all, never through a link, a read-only folder said in a sentence (``destination``)."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(FIELDS)
    writer.writerows([row.get(k, "") for k in FIELDS] for row in plan.rows)
    write_atomic(folder / "metadata.tsv", out.getvalue().encode("utf-8"))
