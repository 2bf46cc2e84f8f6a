"""NCBI as a second source: runs ENA has no FASTQ for, or does not have at all, come as NCBI's ``.sra`` (located
by a stand-in for the SRA Data Locator, tests/servers/ena_portal.py, the file on the real nginx), checked
against the size and MD5 it publishes, and are converted with sra-tools' own ``fasterq-dump``. The ``.sra``
files are real: made here by sra-tools' loader (``latf-load``) and archiver (``kar``)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import labferry, require


def _reads(seed: int, count: int, length: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("ACGT") for _ in range(length)) for _ in range(count)]


def make_sra(work: Path, run: str, *reads: list[str]) -> bytes:
    """A real .sra of ``run`` holding ``reads`` (one list a read: one for single-end, two for paired, three for
    a single-cell run whose first read is its index), made as NCBI's loaders make them: ``latf-load`` for one
    or two reads; for more, ``sharq`` (which marks the index read technical, as NCBI does) piped into
    ``general-loader``; then ``kar`` packs the database into one file."""
    kar = require("kar")
    work.mkdir(parents=True, exist_ok=True)
    files = []
    for number, sequences in enumerate(reads, 1):
        mate = f"/{number}" if len(reads) == 2 else f" {number}:N:0:1" if len(reads) > 2 else ""
        path = work / f"{run}_{number}.fq"
        path.write_text("".join(f"@spot{i}{mate}\n{s}\n+\n{'I' * len(s)}\n" for i, s in enumerate(sequences)))
        files.append(str(path))
    if len(reads) <= 2:
        subprocess.run([require("latf-load"), "--quality", "PHRED_33", "-p", "ILLUMINA", "-o", str(work / run),
                        *files], check=True, capture_output=True)
    else:
        kinds = "".join("T" if len(r[0]) <= 12 else "B" for r in reads)
        stream = subprocess.run([require("sharq"), "--readTypes", kinds, "--platform", "ILLUMINA", "--output", run,
                                 *files], check=True, capture_output=True).stdout
        schemas = next(p for p in (Path("/usr/lib/ncbi-vdb"), Path("/usr/local/lib/ncbi-vdb"))
                       if (p / "sra" / "generic-fastq.vschema").is_file())
        subprocess.run([require("general-loader"), "-I", str(schemas), "--target", str(work / run)], input=stream,
                       check=True, capture_output=True)
    subprocess.run([kar, "-c", str(work / f"{run}.sra"), "-d", str(work / run)], check=True, capture_output=True)
    return (work / f"{run}.sra").read_bytes()


PAIRED = (_reads(1, 300, 76), _reads(2, 300, 76))
SINGLE_CELL = (_reads(4, 50, 8), _reads(5, 50, 28), _reads(6, 50, 90))  # index (i7), barcode+UMI, cDNA


def fastq_gz(sequences: list[str]) -> bytes:
    return gzip.compress("".join(f"@r{i}\n{s}\n+\n{'F' * len(s)}\n" for i, s in enumerate(sequences)).encode())
SINGLE = (_reads(3, 200, 100),)


@pytest.fixture(scope="module")
def ncbi(nginx, tmp_path_factory):
    from tests.servers.ena_portal import Portal

    require("fasterq-dump")
    work = tmp_path_factory.mktemp("sra")
    server = Portal(nginx.data).start()
    files = f"https://127.0.0.1:{nginx.port}"
    common = dict(sample="SAMEA0007771", study="ERP000777", project="PRJEB7777", layout="PAIRED")
    server.add_run("ERR0000771", experiment="ERX0000771", **common,
                   fastq=[("ERR0000771_1.fastq.gz", gzip.compress(b"@a\nACGT\n+\nIIII\n")),
                          ("ERR0000771_2.fastq.gz", gzip.compress(b"@a\nTTGA\n+\nIIII\n"))])
    server.add_run("ERR0000772", experiment="ERX0000772", **common, fastq=[])  # not mirrored as FASTQ yet
    server.add_ncbi_run("ERR0000772", make_sra(work, "ERR0000772", *PAIRED), files)
    server.add_ncbi_run("SRR0000901", make_sra(work, "SRR0000901", *SINGLE), files)  # not in ENA at all
    server.add_ncbi_run("SRR0000902", make_sra(work, "SRR0000902", *PAIRED), files)
    server.add_ncbi_run("SRR0000903", make_sra(work, "SRR0000903", *SINGLE), files, wrong_md5=True)
    server.add_geo("GSE0007777", sra="ERP000777")
    cells = dict(sample="SAMEA0007881", study="ERP000788", project="PRJEB7878", layout="PAIRED")
    server.add_run("ERR0000781", experiment="ERX0000781", **cells, fastq=[  # index, barcode, cDNA: 3 files
        ("ERR0000781_1.fastq.gz", fastq_gz(SINGLE_CELL[0])), ("ERR0000781_2.fastq.gz", fastq_gz(SINGLE_CELL[1])),
        ("ERR0000781_3.fastq.gz", fastq_gz(SINGLE_CELL[2]))], fields={"read_count": "50", "base_count": "6300"})
    server.add_run("ERR0000782", experiment="ERX0000782", **cells, fastq=[  # ENA dropped the index read
        ("ERR0000782_1.fastq.gz", fastq_gz(SINGLE_CELL[1])), ("ERR0000782_2.fastq.gz", fastq_gz(SINGLE_CELL[2]))],
        fields={"read_count": "50", "base_count": "6300"})
    completing = dict(sample="SAMEA0007991", study="ERP000799", project="PRJEB7979", layout="PAIRED")
    server.add_run("ERR0000791", experiment="ERX0000791", **completing, fastq=[  # ENA dropped the index read...
        ("ERR0000791_1.fastq.gz", fastq_gz(SINGLE_CELL[1])), ("ERR0000791_2.fastq.gz", fastq_gz(SINGLE_CELL[2]))],
        fields={"read_count": "50", "base_count": "6300", "library_source": "TRANSCRIPTOMIC SINGLE CELL"})
    server.add_ncbi_run("ERR0000791", make_sra(work, "ERR0000791", *SINGLE_CELL), files)  # ...NCBI has it
    yield server
    server.stop()


def fetch(ncbi, nginx, *args: str, home: Path, path: str | None = None, **more: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, LABFERRY_ENA_PORTAL=ncbi.url, LABFERRY_ENA_FILES=f"https://127.0.0.1:{nginx.port}",
               LABFERRY_NCBI_SDL=ncbi.sdl, LABFERRY_NCBI_EUTILS=ncbi.eutils, **more)
    if path is not None:
        env["PATH"] = path
    return labferry("copy", *args, "--ca-file", nginx.ca_file, env_home=home, env=env, timeout=180)


def without_tools(tmp_path: Path) -> Path:
    """An empty folder to run Ferry with as its whole PATH: no fasterq-dump (nor anything else) found."""
    bare = tmp_path / "bin"
    bare.mkdir()
    return bare


def dropped_notes(proc: subprocess.CompletedProcess) -> list[str]:
    """The lines of stderr that name runs whose ENA FASTQ lack a read."""
    return [line for line in proc.stderr.splitlines() if "fewer bases than the run's spots" in line]


def sequences_of(path: Path) -> list[str]:
    with gzip.open(path, "rt") as fh:
        return fh.read().splitlines()[1::4]


def test_a_run_ena_has_no_fastq_for_comes_from_ncbi_converted_into_the_rnaseq_sheet(ncbi, nginx, tmp_path,
                                                                                       ferry_home):
    dest = tmp_path / "study"
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{dest}/", "--samplesheet", "rnaseq", "--json", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "1 run (ERR0000772) comes from NCBI as .sra" in proc.stderr
    names = sorted(p.name for p in dest.iterdir())
    assert names == ["ERR0000771_1.fastq.gz", "ERR0000771_2.fastq.gz", "ERR0000772.fastq.md5", "ERR0000772.sra",
                     "ERR0000772_1.fastq.gz", "ERR0000772_2.fastq.gz", "metadata.tsv", "samplesheet.csv"]
    assert hashlib.md5((dest / "ERR0000772.sra").read_bytes()).hexdigest() == ncbi.sra["ERR0000772"]["md5"]
    assert sequences_of(dest / "ERR0000772_1.fastq.gz") == PAIRED[0]  # the reads as loaded, mates apart
    assert sequences_of(dest / "ERR0000772_2.fastq.gz") == PAIRED[1]
    manifest = dict(line.split("  ")[::-1] for line in (dest / "ERR0000772.fastq.md5").read_text().splitlines())
    assert manifest == {n: hashlib.md5((dest / n).read_bytes()).hexdigest()
                        for n in ("ERR0000772_1.fastq.gz", "ERR0000772_2.fastq.gz")}
    with open(dest / "samplesheet.csv") as sheet:
        rows = list(csv.DictReader(sheet))
    assert [(Path(r["fastq_1"]).name, Path(r["fastq_2"]).name) for r in rows] == [
        ("ERR0000771_1.fastq.gz", "ERR0000771_2.fastq.gz"), ("ERR0000772_1.fastq.gz", "ERR0000772_2.fastq.gz")]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {f["name"]: f["source"] for f in out["files"]}["ERR0000772.sra"] == "ncbi"
    assert sorted(f["name"] for f in out["converted"]["ERR0000772"]) == ["ERR0000772_1.fastq.gz",
                                                                         "ERR0000772_2.fastq.gz"]

    # again: nothing verified is fetched twice, nothing converted twice
    fetched = nginx.access_log.read_text().count("/ERR0000772.1")
    converted_at = (dest / "ERR0000772.fastq.md5").stat().st_mtime_ns
    again = fetch(ncbi, nginx, "ena:PRJEB7777", f"{dest}/", "--samplesheet", "rnaseq", home=ferry_home)
    assert again.returncode == 0, again.stderr
    assert nginx.access_log.read_text().count("/ERR0000772.1") == fetched
    assert (dest / "ERR0000772.fastq.md5").stat().st_mtime_ns == converted_at


def test_a_run_only_at_ncbi_is_fetched_after_waiting_out_a_429(ncbi, nginx, tmp_path, ferry_home):
    ncbi.sdl_fail_first["SRR0000901"] = 1  # 429 Too Many Requests, Retry-After: 1
    proc = fetch(ncbi, nginx, "SRR0000901", f"{tmp_path}/", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert ncbi.sdl_queries.count("SRR0000901") == 2
    assert "asks Ferry to wait 1 s before asking about SRR0000901 again (HTTP 429)" in proc.stderr, proc.stderr
    assert sequences_of(tmp_path / "SRR0000901.fastq.gz") == SINGLE[0]
    with open(tmp_path / "samplesheet.csv") as sheet:
        [row] = list(csv.DictReader(sheet))
    assert row["run_accession"] == "SRR0000901" and row["single_end"] == "true"
    assert row["md5_1"] == hashlib.md5((tmp_path / "SRR0000901.fastq.gz").read_bytes()).hexdigest()


def test_without_fasterq_dump_the_sra_is_kept_and_one_sentence_says_what_to_install(ncbi, nginx, tmp_path,
                                                                                     ferry_home):
    bare = without_tools(tmp_path)
    dest = tmp_path / "got"
    proc = fetch(ncbi, nginx, "SRR0000902", f"{dest}/", home=ferry_home, path=str(bare))
    assert proc.returncode == 3, proc.stderr
    told = [line for line in proc.stderr.splitlines() if "install sra-tools" in line]
    assert len(told) == 2 and "Traceback" not in proc.stderr  # before the wait, and after it
    assert sorted(p.name for p in dest.iterdir()) == ["SRR0000902.sra", "metadata.tsv", "samplesheet.csv"]
    fetched = nginx.access_log.read_text().count("/SRR0000902.1")
    proc = fetch(ncbi, nginx, "SRR0000902", f"{dest}/", home=ferry_home, path=os.environ["PATH"])
    assert proc.returncode == 0, proc.stderr
    assert nginx.access_log.read_text().count("/SRR0000902.1") == fetched  # the verified .sra is not fetched again
    assert sequences_of(dest / "SRR0000902_2.fastq.gz") == PAIRED[1]


def test_a_dry_run_says_where_each_file_comes_from_and_source_ena_asks_no_ncbi(ncbi, nginx, tmp_path, ferry_home):
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{tmp_path}/", "--dry-run", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "ERR0000772.sra" in proc.stdout and "from NCBI (to be converted to FASTQ)" in proc.stdout
    asked = len(ncbi.sdl_queries)
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{tmp_path}/", "--source", "ena", "--dry-run", home=ferry_home)
    assert proc.returncode == 0 and len(ncbi.sdl_queries) == asked
    assert "no fastq files in ENA" in proc.stdout and "ERR0000772.sra" not in proc.stdout
    proc = fetch(ncbi, nginx, "SRR0009999", f"{tmp_path}/", home=ferry_home)
    assert proc.returncode == 3 and "ENA and NCBI have nothing public for SRR0009999" in proc.stderr


def test_a_sra_whose_md5_differs_from_ncbis_never_sits_under_its_name(ncbi, nginx, tmp_path, ferry_home):
    proc = fetch(ncbi, nginx, "SRR0000903", f"{tmp_path}/", home=ferry_home)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "SRR0000903" in proc.stderr and "MD5" in proc.stderr.upper()
    assert not (tmp_path / "SRR0000903.sra").exists() and not list(tmp_path.glob("SRR0000903_*"))
    assert shutil.which("fasterq-dump")


def test_eutils_calls_carry_the_users_ncbi_api_key(ncbi, nginx, tmp_path, ferry_home):
    """A GEO series goes through E-utilities: with ``NCBI_API_KEY`` set every call carries it (NCBI then allows 10
    requests a second instead of 3), and names the tool."""
    ncbi.eutils_asked.clear()
    proc = fetch(ncbi, nginx, "GSE0007777", f"{tmp_path}/", "--dry-run", home=ferry_home, NCBI_API_KEY="k3y-0f-lab")
    assert proc.returncode == 0, proc.stderr
    assert "ERR0000771" in proc.stdout and "ERR0000772.sra" in proc.stdout
    assert len(ncbi.eutils_asked) == 2  # esearch, esummary
    assert all(q.get("api_key") == "k3y-0f-lab" and q.get("tool") == "labferry" for q in ncbi.eutils_asked)


def test_layout_sample_puts_each_samples_runs_in_its_folder_converted_ones_too(ncbi, nginx, tmp_path, ferry_home):
    dest = tmp_path / "by-sample"
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{dest}/", "--layout", "sample", "--sheet-paths", "relative",
                 home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in dest.iterdir()) == ["SAMEA0007771", "metadata.tsv", "samplesheet.csv"]
    assert sorted(p.name for p in (dest / "SAMEA0007771").iterdir()) == [
        "ERR0000771_1.fastq.gz", "ERR0000771_2.fastq.gz", "ERR0000772.fastq.md5", "ERR0000772.sra",
        "ERR0000772_1.fastq.gz", "ERR0000772_2.fastq.gz"]
    with open(dest / "samplesheet.csv") as sheet:
        rows = list(csv.DictReader(sheet))
    assert [(r["fastq_1"], r["fastq_2"]) for r in rows] == [
        ("SAMEA0007771/ERR0000771_1.fastq.gz", "SAMEA0007771/ERR0000771_2.fastq.gz"),
        ("SAMEA0007771/ERR0000772_1.fastq.gz", "SAMEA0007771/ERR0000772_2.fastq.gz")]
    assert sequences_of(dest / rows[1]["fastq_2"]) == PAIRED[1]


def test_a_single_cell_run_maps_reads_by_their_lengths_and_a_dropped_index_is_said(ncbi, nginx, tmp_path,
                                                                                   ferry_home):
    """Three files (index, barcode, cDNA): read 1 is the barcode read and read 2 the cDNA, whatever the file
    order, the index keeps its own column; a run whose files add up to fewer bases a spot than the report's is
    named, with how to get every read (fetchngs #326, #260, #144)."""
    dest = tmp_path / "cells"
    proc = fetch(ncbi, nginx, "ena:PRJEB7878", f"{dest}/", "--samplesheet", "scrnaseq", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    with open(dest / "samplesheet.csv") as sheet:
        rows = {r["fastq_1"].rsplit("/", 1)[-1]: r["fastq_2"].rsplit("/", 1)[-1] for r in csv.DictReader(sheet)}
    assert rows == {"ERR0000781_2.fastq.gz": "ERR0000781_3.fastq.gz", "ERR0000782_1.fastq.gz": "ERR0000782_2.fastq.gz"}
    noted = dropped_notes(proc)
    assert len(noted) == 1 and "ERR0000782 (118 of 126 bases a spot)" in noted[0] and "ERR0000781" not in noted[0]
    assert "NCBI has no .sra for them either" in noted[0]  # --source auto asked NCBI, which lacks this run
    proc = fetch(ncbi, nginx, "ena:PRJEB7878", f"{dest}/", home=ferry_home)  # the fetchngs sheet: every file
    assert proc.returncode == 0, proc.stderr
    with open(dest / "samplesheet.csv") as sheet:
        row = next(r for r in csv.DictReader(sheet) if r["run_accession"] == "ERR0000781")
    assert [Path(row[k]).name for k in ("fastq_1", "fastq_2", "fastq_index_1")] == [
        "ERR0000781_2.fastq.gz", "ERR0000781_3.fastq.gz", "ERR0000781_1.fastq.gz"]


def test_source_ncbi_takes_every_run_from_ncbi_and_names_what_it_lacks(ncbi, nginx, tmp_path, ferry_home):
    """``--source ncbi``: ENA's report still names the study's runs; each comes from NCBI as .sra, and a run NCBI
    has nothing for is named, even though ENA has its FASTQ."""
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{tmp_path}/", "--source", "ncbi", "--dry-run", "--json",
                 home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    runs = {r["run"]: [(f["name"], f["source"]) for f in r["files"]] for r in json.loads(proc.stdout)["runs"]}
    assert runs == {"ERR0000771": [], "ERR0000772": [("ERR0000772.sra", "ncbi")]}
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{tmp_path}/", "--source", "ncbi", "--dry-run", home=ferry_home)
    block = proc.stdout.split("ERR0000771", 1)[1].split("ERR0000772", 1)[0]
    assert "no fastq files in ENA or NCBI" in block, proc.stdout


def test_a_run_ena_serves_short_of_a_read_is_completed_from_ncbi_and_not_fetched_twice(ncbi, nginx, tmp_path,
                                                                                     ferry_home):
    """ENA serves two of a single-cell run's three reads (fetchngs #144); ``--source auto`` (the default) sees it
    in the files that arrived, fetches the run's .sra from NCBI and converts it with every read: the index, the
    barcode read and the cDNA read, under the archive's names, and the sheet maps them by their lengths. The
    same command again fetches nothing: ENA's files do not come back over the complete ones."""
    dest = tmp_path / "completed"
    proc = fetch(ncbi, nginx, "ena:PRJEB7979", f"{dest}/", "--samplesheet", "scrnaseq", "--json", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert "ENA's FASTQ lack a read for 1 run (ERR0000791); fetching its .sra from NCBI" in proc.stderr
    assert "fewer bases than the run's spots" not in proc.stderr  # completed, so not left to the user
    assert [sequences_of(dest / f"ERR0000791_{n}.fastq.gz") for n in (1, 2, 3)] == list(SINGLE_CELL)
    manifest = (dest / "ERR0000791.fastq.md5").read_text().split()
    assert manifest[1::2] == [f"ERR0000791_{n}.fastq.gz" for n in (1, 2, 3)]
    assert all(hashlib.md5((dest / name).read_bytes()).hexdigest() == md5
               for md5, name in zip(manifest[::2], manifest[1::2], strict=True))
    with open(dest / "samplesheet.csv") as sheet:
        rows = list(csv.DictReader(sheet))
    assert [(Path(r["fastq_1"]).name, Path(r["fastq_2"]).name) for r in rows] == [
        ("ERR0000791_2.fastq.gz", "ERR0000791_3.fastq.gz")]  # the barcode read and the cDNA, not the index
    first = json.loads(proc.stdout.strip().splitlines()[-1])
    again = fetch(ncbi, nginx, "ena:PRJEB7979", f"{dest}/", "--json", home=ferry_home)
    assert again.returncode == 0, again.stderr
    assert "ENA's FASTQ lack a read" not in again.stderr and "converting" not in again.stderr
    second = json.loads(again.stdout.strip().splitlines()[-1])
    assert second["bytes_fetched"] == 0, (first, second)
    assert [sequences_of(dest / f"ERR0000791_{n}.fastq.gz") for n in (1, 2, 3)] == list(SINGLE_CELL)
    with open(dest / "samplesheet.csv") as sheet:
        row = next(csv.DictReader(sheet))
    assert [Path(row[k]).name for k in ("fastq_1", "fastq_2", "fastq_index_1")] == [
        "ERR0000791_2.fastq.gz", "ERR0000791_3.fastq.gz", "ERR0000791_1.fastq.gz"]


def test_source_ena_leaves_a_short_run_as_ena_serves_it_and_says_how_to_complete_it(ncbi, nginx, tmp_path,
                                                                                    ferry_home):
    dest = tmp_path / "as-ena"
    proc = fetch(ncbi, nginx, "ena:PRJEB7979", f"{dest}/", "--source", "ena", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    noted = dropped_notes(proc)
    assert len(noted) == 1 and "ERR0000791 (118 of 126 bases a spot)" in noted[0] and "--source auto" in noted[0]
    assert sorted(p.name for p in dest.glob("ERR0000791*")) == ["ERR0000791_1.fastq.gz", "ERR0000791_2.fastq.gz"]


def test_without_fasterq_dump_a_short_run_is_not_fetched_from_ncbi_and_the_note_says_what_to_install(
        ncbi, nginx, tmp_path, ferry_home):
    bare = without_tools(tmp_path)
    dest = tmp_path / "short"
    proc = fetch(ncbi, nginx, "ena:PRJEB7979", f"{dest}/", home=ferry_home, path=str(bare))
    assert proc.returncode == 0, proc.stderr
    noted = dropped_notes(proc)
    assert len(noted) == 1 and "ERR0000791" in noted[0], proc.stderr
    assert "install sra-tools" in noted[0] and "every read from NCBI's .sra" in noted[0]
    assert "lack a read" not in proc.stderr  # nothing asked of NCBI for it
    assert sorted(p.name for p in dest.glob("ERR0000791*")) == ["ERR0000791_1.fastq.gz", "ERR0000791_2.fastq.gz"]


def test_source_ena_with_a_run_ena_has_no_fastq_for_says_so_and_exits_3(ncbi, nginx, tmp_path, ferry_home):
    """With --source ena, a study whose run ENA lists without FASTQ ended with exit 0 and no word: a pipeline's
    script could not tell the study was incomplete. The run is named with what to run instead, the other run's
    files arrive verified, and the exit status is 3 (documented: an accession the archive does not serve)."""
    dest = tmp_path / "study"
    proc = fetch(ncbi, nginx, "ena:PRJEB7777", f"{dest}/", "--source", "ena", home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "ENA has no fastq files for ERR0000772; they were not fetched (exit 3)" in proc.stderr, proc.stderr
    assert "--source auto" in proc.stderr, proc.stderr
    assert (dest / "ERR0000771_1.fastq.gz").exists() and not list(dest.glob("ERR0000772*"))
