"""Samplesheets for the nf-core pipelines a study is fetched for (``--samplesheet``), each laid out as that
pipeline's own ``assets/schema_input.json`` asks (nf-schema validates the sheet against it before a run):

* ``rnaseq`` (nf-core/rnaseq 3.24.0, 47b3b0d): ``sample,fastq_1,fastq_2,strandedness`` first; ``sample`` without
  spaces, FASTQ names ending ``.fastq``/``.fq`` (gzipped or not), ``strandedness`` one of forward, reverse,
  unstranded, auto (Ferry writes auto: the pipeline infers it); ``seq_platform`` from the report.
* ``sarek`` (nf-core/sarek 3.10.0, 8ccac7a): ``patient,sample,lane,fastq_1,fastq_2``; ``lane`` with a FASTQ,
  ``(lane, patient, sample)`` unique, FASTQ gzipped. ENA knows no patient: each sample is its own (edit the
  column for tumour/normal pairs).
* ``scrnaseq`` (nf-core/scrnaseq 4.0.0, e0ddddb): ``sample,fastq_1,fastq_2``, both reads required, gzipped.
* ``taxprofiler`` (nf-core/taxprofiler, its main branch): ``sample,run_accession,instrument_platform,fastq_1,
  fastq_2,fasta``; the platform one of the schema's enum; ``(sample, run_accession)`` unique.

Every pipeline gets one row per run, and the runs of one biological sample share its ``sample`` value (ENA's
sample accession), so the pipeline merges them as technical replicates. A run a pipeline cannot take (a single
read where both are needed, a file that is not gzipped FASTQ, a platform it does not know) is left out of that
sheet and named. ``fetchngs`` (the default) is ``sheets.write_samplesheet``; ``none`` writes no sheet.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from backends.destination import Destination, write_atomic

from .ena import Plan
from .reads import assign

SHEETS = ("fetchngs", "rnaseq", "sarek", "scrnaseq", "taxprofiler", "none")
PATH_STYLES = ("absolute", "relative")
#: nf-core/taxprofiler's instrument_platform enum
TAXPROFILER_PLATFORMS = ("ABI_SOLID", "BGISEQ", "CAPILLARY", "COMPLETE_GENOMICS", "DNBSEQ", "HELICOS", "ILLUMINA",
                         "ION_TORRENT", "LS454", "OXFORD_NANOPORE", "PACBIO_SMRT")
_FASTQ = re.compile(r"\.f(ast)?q(\.gz)?$")
_FASTQ_GZ = re.compile(r"\.f(ast)?q\.gz$")


@dataclass
class RunReads:
    """One run whose files all arrived: its report row and where read 1, read 2 (or its one file) are."""

    meta: dict
    read_1: str
    read_2: str  # "" for a single-end run
    md5_1: str = ""
    md5_2: str = ""
    index: tuple[str, ...] = ()  # index (technical) reads, in the run's order
    unpaired: str = ""  # reads whose mate was lost (ENA's RUN.fastq.gz beside RUN_1 and RUN_2)

    @property
    def run(self) -> str:
        return self.meta.get("run_accession", "")

    @property
    def sample(self) -> str:
        """ENA's sample accession (the biological sample its runs share), made a name every pipeline takes."""
        return safe_sample(self.meta.get("sample_accession") or self.meta.get("experiment_accession") or self.run)


@dataclass
class Sheet:
    columns: tuple[str, ...]
    rows: list[dict]
    left_out: list[tuple[str, str]]  # (run, why)


def safe_sample(text: str) -> str:
    """No whitespace and nothing a file name or a shell would trip on: what the schemas' ``^\\S+$`` allows and
    the pipelines' output folders are named after."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text.strip()).strip("_") or "sample"


def runs_with_reads(plan: Plan, folder: Path, done: set[str], style: str = "absolute") -> list[RunReads]:
    """The runs whose files are all here and verified, their reads mapped by the archive's read number and, for
    more than two files, by their reads' lengths (``reads.assign``: an index read is never read 1)."""
    by_run = plan.files_by_run()
    saved = Destination(folder)  # where each file was saved (the archive's name, made safe)
    root = folder.resolve()  # once: resolving each of a thousand files' paths took longer than their sheet

    def where(name: str) -> str:
        rel = saved.claim(name)  # below DEST, "/"-separated (as nf-core sheets want on every OS)
        return rel if style == "relative" else str(root / rel)

    found = []
    for meta in plan.rows:
        files = plan.converted.get(meta.get("run_accession", ""))  # made here from NCBI's .sra: verified
        if files is None:
            files = by_run.get(meta.get("run_accession", ""), [])
            if not files or any(f.name not in done for f in files):
                continue
        if plan.kind == "fastq" and all(f.name.endswith(".sra") for f in files):
            continue  # a .sra not converted (no fasterq-dump): said when the fetch ended
        files = [f for f in files if not f.name.endswith(".sra")]
        roles = assign(files, meta.get("run_accession", ""), lambda f: folder / saved.claim(f.name))
        first, second = roles.read_1, roles.read_2
        if first is None:
            continue
        found.append(RunReads(meta, where(first.name), where(second.name) if second else "", first.md5,
                              second.md5 if second else "", tuple(where(f.name) for f in roles.index),
                              where(roles.unpaired.name) if roles.unpaired else ""))
    return found


def _reads_match(run: RunReads, pattern: re.Pattern) -> bool:
    """Whether read 1, and read 2 where the run has one, are named as ``pattern`` asks (FASTQ, gzipped)."""
    return bool(pattern.search(run.read_1)) and (not run.read_2 or bool(pattern.search(run.read_2)))


def rnaseq(runs: list[RunReads]) -> Sheet:
    rows, left = [], []
    for r in runs:
        if not _reads_match(r, _FASTQ):
            left.append((r.run, "its files are not FASTQ"))
            continue
        rows.append({"sample": r.sample, "fastq_1": r.read_1, "fastq_2": r.read_2, "strandedness": "auto",
                     "seq_platform": safe_sample(r.meta.get("instrument_platform", "")) if
                     r.meta.get("instrument_platform") else ""})
    return Sheet(("sample", "fastq_1", "fastq_2", "strandedness", "seq_platform"), rows, left)


def sarek(runs: list[RunReads]) -> Sheet:
    rows, left = [], []
    for r in runs:
        if not _reads_match(r, _FASTQ_GZ):
            left.append((r.run, "sarek takes gzipped FASTQ only"))
            continue
        rows.append({"patient": r.sample, "sample": r.sample, "lane": safe_sample(r.run), "fastq_1": r.read_1,
                     "fastq_2": r.read_2})
    return Sheet(("patient", "sample", "lane", "fastq_1", "fastq_2"), rows, left)


def scrnaseq(runs: list[RunReads]) -> Sheet:
    rows, left = [], []
    for r in runs:
        if not r.read_2:
            left.append((r.run, "scrnaseq needs read 1 and read 2, and ENA has one file for it"))
            continue
        if not _reads_match(r, _FASTQ_GZ):  # read 2 is there: checked above
            left.append((r.run, "scrnaseq takes gzipped FASTQ only"))
            continue
        rows.append({"sample": r.sample, "fastq_1": r.read_1, "fastq_2": r.read_2})
    return Sheet(("sample", "fastq_1", "fastq_2"), rows, left)


def taxprofiler(runs: list[RunReads]) -> Sheet:
    rows, left = [], []
    for r in runs:
        platform = (r.meta.get("instrument_platform") or "").upper()
        if platform not in TAXPROFILER_PLATFORMS:
            left.append((r.run, f"taxprofiler does not know the platform {platform or '(none)'}"))
            continue
        if not _reads_match(r, _FASTQ_GZ):
            left.append((r.run, "taxprofiler takes gzipped FASTQ only"))
            continue
        rows.append({"sample": r.sample, "run_accession": safe_sample(r.run), "instrument_platform": platform,
                     "fastq_1": r.read_1, "fastq_2": r.read_2, "fasta": ""})
    return Sheet(("sample", "run_accession", "instrument_platform", "fastq_1", "fastq_2", "fasta"), rows, left)


BUILDERS = {"rnaseq": rnaseq, "sarek": sarek, "scrnaseq": scrnaseq, "taxprofiler": taxprofiler}


def write_pipeline_sheet(pipeline: str, plan: Plan, folder: Path, done: set[str],
                         style: str = "absolute") -> Sheet:
    """``samplesheet.csv`` for ``pipeline`` in ``folder``: written whole or not at all (``destination``)."""
    sheet = BUILDERS[pipeline](runs_with_reads(plan, folder, done, style))
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=sheet.columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(sheet.rows)
    write_atomic(folder / "samplesheet.csv", out.getvalue().encode("utf-8"))
    return sheet
