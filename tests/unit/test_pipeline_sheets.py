"""Each pipeline's samplesheet checked against rules taken from that pipeline's own assets/schema_input.json (as
nf-schema applies them: empty cells are absent, patterns and enums on what is there, required columns,
uniqueEntries across rows, dependentRequired, and every file-path existing). The rules are written here, read
off the schemas of nf-core/rnaseq 3.24.0 (47b3b0d), sarek 3.10.0 (8ccac7a), scrnaseq 4.0.0 (e0ddddb) and
taxprofiler's main branch, so the suite needs no copy of them."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from app.accessions.ena import Plan
from app.accessions.pipelines import TAXPROFILER_PLATFORMS, safe_sample
from app.accessions.sheets import write_sheet

FQ_ANY = r"^([\S\s]*\/)?[^\s\/]+\.f(ast)?q(\.gz)?$"
FQ_GZ_ANY_DIR = r"^([\S\s]*\/)?[^\s\/]+\.f(ast)?q\.gz$"
FQ_GZ = r"^\S+\.f(ast)?q\.gz$"
RULES = {
    "rnaseq": {
        "first": ["sample", "fastq_1", "fastq_2", "strandedness"],
        "required": ["sample", "fastq_1", "strandedness"],
        "patterns": {"sample": r"^\S+$", "fastq_1": FQ_ANY, "fastq_2": FQ_ANY, "seq_platform": r"^\S+$"},
        "enums": {"strandedness": ["forward", "reverse", "unstranded", "auto"]},
        "files": ["fastq_1", "fastq_2"], "unique": [], "dependent": {},
    },
    "sarek": {
        "first": ["patient", "sample"],
        "required": ["patient", "sample"],
        "patterns": {"patient": r"^\S+$", "sample": r"^\S+$", "lane": r"^\S+$", "fastq_1": FQ_GZ_ANY_DIR,
                     "fastq_2": FQ_GZ_ANY_DIR},
        "enums": {}, "files": ["fastq_1", "fastq_2"], "unique": [("lane", "patient", "sample")],
        "dependent": {"fastq_2": ["fastq_1"], "lane": ["fastq_1"]},
    },
    "scrnaseq": {
        "first": ["sample", "fastq_1", "fastq_2"],
        "required": ["sample", "fastq_1", "fastq_2"],
        "patterns": {"sample": r"^\S+$", "fastq_1": FQ_GZ, "fastq_2": FQ_GZ},
        "enums": {}, "files": ["fastq_1", "fastq_2"], "unique": [], "dependent": {},
    },
    "taxprofiler": {
        "first": ["sample", "run_accession", "instrument_platform"],
        "required": ["sample", "run_accession", "instrument_platform"],
        "patterns": {"sample": r"^[^\s]+$", "run_accession": r"^[^\s]+$", "fastq_1": FQ_GZ, "fastq_2": FQ_GZ},
        "enums": {"instrument_platform": list(TAXPROFILER_PLATFORMS)},
        "files": ["fastq_1", "fastq_2"], "unique": [("fastq_1",), ("fastq_2",), ("sample", "run_accession")],
        "dependent": {},
    },
}


def check(sheet: Path, rules: dict, base: Path) -> list[dict]:
    with sheet.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header, rows = reader.fieldnames, list(reader)
    assert header[:len(rules["first"])] == rules["first"], header
    for row in rows:
        present = {k: v for k, v in row.items() if v != ""}  # nf-schema: an empty cell is absent
        for name in rules["required"]:
            assert name in present, (name, row)
        for name, pattern in rules["patterns"].items():
            if name in present:
                assert re.fullmatch(pattern, present[name]), (name, present[name])
        for name, allowed in rules["enums"].items():
            if name in present:
                assert present[name] in allowed, (name, present[name])
        for name in rules["files"]:
            if name in present:
                assert (base / present[name]).is_file(), present[name]  # absolute, or relative to DEST
        for name, needs in rules["dependent"].items():
            if name in present:
                assert all(n in present for n in needs), (name, row)
    for columns in rules["unique"]:
        keys = [tuple(row[c] for c in columns) for row in rows if all(row[c] for c in columns)]
        assert len(keys) == len(set(keys)), columns
    return rows


def _row(run, sample, files: list[str], layout: str, platform: str = "ILLUMINA") -> dict:
    return {"run_accession": run, "experiment_accession": f"ERX{run[3:]}", "sample_accession": sample,
            "instrument_platform": platform, "library_layout": layout,
            "fastq_ftp": ";".join(f"ftp.sra.ebi.ac.uk/vol1/fastq/{run[:6]}/{run}/{f}" for f in files),
            "fastq_md5": ";".join("0" * 32 for _ in files), "fastq_bytes": ";".join("10" for _ in files)}


@pytest.fixture
def study(tmp_path) -> tuple[Plan, Path, set[str]]:
    """Two runs of one sample (technical replicates), a single-end run, a run with an unpaired third file, one
    not gzipped, and one from a platform taxprofiler does not list."""
    plan = Plan("ena:PRJEB9", "fastq")
    plan.add([
        _row("ERR0000001", "SAMEA1", ["ERR0000001_1.fastq.gz", "ERR0000001_2.fastq.gz"], "PAIRED"),
        _row("ERR0000002", "SAMEA1", ["ERR0000002_1.fastq.gz", "ERR0000002_2.fastq.gz"], "PAIRED"),
        _row("ERR0000003", "SAMEA2", ["ERR0000003.fastq.gz"], "SINGLE"),
        _row("ERR0000004", "SAMEA3", ["ERR0000004.fastq.gz", "ERR0000004_1.fastq.gz", "ERR0000004_2.fastq.gz"],
             "PAIRED"),
        _row("ERR0000005", "SAMEA4 (a titled sample)", ["ERR0000005_1.fastq", "ERR0000005_2.fastq"], "PAIRED"),
        _row("ERR0000006", "SAMEA5", ["ERR0000006_1.fastq.gz", "ERR0000006_2.fastq.gz"], "PAIRED", "ELEMENT"),
    ])
    folder = tmp_path / "study"
    folder.mkdir()
    for f in plan.files:
        (folder / f.name).write_bytes(b"@r\nACGT\n+\n!!!!\n")
    return plan, folder, {f.name for f in plan.files}


@pytest.mark.parametrize("pipeline", list(RULES))
@pytest.mark.parametrize("style", ["absolute", "relative"])
def test_each_pipelines_sheet_follows_its_schema(pipeline, style, study):
    plan, folder, done = study
    count, left = write_sheet(pipeline, plan, folder, done, style)
    rows = check(folder / "samplesheet.csv", RULES[pipeline], folder)
    assert count == len(rows) > 0
    sample = "patient" if pipeline == "sarek" else "sample"
    replicates = [r for r in rows if r.get("fastq_1", "").split("/")[-1].startswith(("ERR0000001", "ERR0000002"))]
    assert len(replicates) == 2 and replicates[0][sample] == replicates[1][sample] == "SAMEA1"  # merged by it
    if style == "absolute":
        assert all(Path(r["fastq_1"]).is_absolute() for r in rows)
    else:
        assert not any(Path(r["fastq_1"]).is_absolute() for r in rows)
    unpaired = next(r for r in rows if "ERR0000004" in r["fastq_1"])
    assert unpaired["fastq_1"].endswith("ERR0000004_1.fastq.gz") and unpaired["fastq_2"].endswith("_2.fastq.gz")
    left_runs = {run for run, _ in left}
    expected = {"rnaseq": set(), "sarek": {"ERR0000005"}, "scrnaseq": {"ERR0000003", "ERR0000005"},
                "taxprofiler": {"ERR0000005", "ERR0000006"}}[pipeline]
    assert left_runs == expected, left
    assert {r.get("fastq_1", "").split("/")[-1][:10] for r in rows} | left_runs >= {
        "ERR0000001", "ERR0000002", "ERR0000003", "ERR0000004", "ERR0000005", "ERR0000006"} - (
        {"ERR0000003"} if pipeline == "scrnaseq" else set())


def test_rnaseq_takes_a_single_end_run_and_strandedness_auto(study):
    plan, folder, done = study
    write_sheet("rnaseq", plan, folder, done)
    rows = check(folder / "samplesheet.csv", RULES["rnaseq"], folder)
    single = next(r for r in rows if r["fastq_1"].endswith("ERR0000003.fastq.gz"))
    assert single["fastq_2"] == "" and {r["strandedness"] for r in rows} == {"auto"}
    titled = next(r for r in rows if "ERR0000005" in r["fastq_1"])
    assert titled["sample"] == safe_sample("SAMEA4 (a titled sample)") == "SAMEA4_a_titled_sample"


def test_none_writes_no_sheet_and_fetchngs_keeps_its_layout(study):
    plan, folder, done = study
    assert write_sheet("none", plan, folder, done) == (0, [])
    assert not (folder / "samplesheet.csv").exists()
    count, _ = write_sheet("fetchngs", plan, folder, done)
    header = (folder / "samplesheet.csv").read_text().splitlines()[0]
    assert header.startswith('"sample","fastq_1","fastq_2","run_accession"') and count == 6


def test_a_run_whose_files_did_not_all_arrive_is_not_listed(study):
    plan, folder, done = study
    count, _ = write_sheet("rnaseq", plan, folder, done - {"ERR0000002_2.fastq.gz"})
    rows = check(folder / "samplesheet.csv", RULES["rnaseq"], folder)
    assert count == 5 and not any("ERR0000002" in r["fastq_1"] for r in rows)
