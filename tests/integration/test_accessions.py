"""``labferry copy ena:ACCESSION DEST/``: a stand-in ENA portal (tests/servers/ena_portal.py), the files on the
real nginx with TLS, every file checked against the published MD5, a samplesheet nf-core reads."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from types import SimpleNamespace

import pytest

from .conftest import MiB, labferry
from .test_https_errors import assert_clean_failure


def _data(seed: int, size: int) -> bytes:
    import random

    return random.Random(seed).randbytes(size)


@pytest.fixture(scope="module")
def portal(nginx):
    from tests.servers.ena_portal import Portal

    server = Portal(nginx.data).start()
    common = dict(sample="SAMEA0000001", study="ERP000001", project="PRJEB1111")
    server.add_run("ERR0000001", experiment="ERX0000001", layout="PAIRED", **common,
                   fastq=[("ERR0000001_1.fastq.gz", _data(1, 24 * MiB)), ("ERR0000001_2.fastq.gz", _data(2, 24 * MiB))])
    server.add_run("ERR0000002", experiment="ERX0000002", layout="SINGLE", **common,
                   fastq=[("ERR0000002.fastq.gz", _data(3, 2 * MiB))])
    server.add_run("ERR0000003", experiment="ERX0000003", layout="SINGLE", **common, fastq=[],
                   submitted=[("sample3.bam", _data(4, 1 * MiB))])
    damaged = dict(sample="SAMEA0000002", study="ERP000002", project="PRJEB2222")
    server.add_run("ERR0000004", experiment="ERX0000004", layout="PAIRED", **damaged,
                   fastq=[("ERR0000004_1.fastq.gz", _data(5, 1 * MiB)), ("ERR0000004_2.fastq.gz", _data(6, 1 * MiB))],
                   wrong_md5="ERR0000004_2.fastq.gz")
    server.add_run("ERR0000005", experiment="ERX0000005", layout="SINGLE", **damaged,
                   fastq=[("ERR0000005.fastq.gz", _data(7, 1 * MiB))])
    for run, project in (("ERR0000006", "PRJEB4444"), ("ERR0000007", "PRJEB5555")):
        server.add_run(run, experiment=run.replace("ERR", "ERX"), layout="PAIRED", sample="SAMEA0000004",
                       study=project.replace("PRJEB", "ERP00"), project=project,
                       fastq=[(f"{run}_1.fastq.gz", _data(int(run[-1]) * 10, 2 * MiB)),
                              (f"{run}_2.fastq.gz", _data(int(run[-1]) * 10 + 1, 20 * MiB))])
    server.add_geo("GSE0001111", sra="ERP000001")  # a series: its SRA study, here PRJEB1111's
    server.add_geo("GSM0000005", sra="ERX0000005")  # a sample: its experiment
    server.add_geo("GSE0002000", superseries_of=["GSE0001111", "GSE0001112"])  # a SuperSeries: no reads of its own
    small = dict(sample="SAMEA0000003", study="ERP000003", project="PRJEB3333")
    for i in range(SMALL_RUNS):
        run = f"ERR00001{i:02d}"
        server.add_run(run, experiment=f"ERX00001{i:02d}", layout="SINGLE", **small,
                       fastq=[(f"{run}.fastq.gz", _data(100 + i, 64 * 1024 + i))])
    server.add_run("ERR0000066", experiment="ERX0000066", layout="SINGLE", sample="SAMEA0000006", study="ERP000006",
                   project="PRJEB6666", fastq=[("ERR0000066.fastq.gz", _data(66, 1 * MiB))])
    yield server
    server.stop()


SMALL_RUNS = 40
#: seconds ENA's stand-in takes to answer for PRJEB6666 (the old question gave up at 60)
SLOW_ANSWER = 65


@pytest.fixture(scope="module")
def slow_portal_copy(portal, nginx, tmp_path_factory):
    """``labferry copy ena:PRJEB6666`` against a portal that answers after a minute, started when the module's
    first test asks for it, so the minute passes while the other tests run: (process, destination)."""
    from .conftest import popen_labferry

    home, dest = tmp_path_factory.mktemp("slow-home"), tmp_path_factory.mktemp("slow-dest")
    portal.slow["PRJEB6666"] = SLOW_ANSWER
    proc = popen_labferry("copy", "ena:PRJEB6666", f"{dest}/", "--ca-file", nginx.ca_file, env_home=home,
                          env={"LABFERRY_ENA_PORTAL": portal.url, "LABFERRY_ENA_FILES": f"https://127.0.0.1:{nginx.port}",
                               "LABFERRY_NCBI_SDL": portal.sdl})
    yield proc, dest
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def fetch(portal, nginx, *args: str, home, **env_extra):
    env = dict(os.environ, LABFERRY_ENA_PORTAL=portal.url, LABFERRY_ENA_FILES=f"https://127.0.0.1:{nginx.port}",
               LABFERRY_NCBI_EUTILS=portal.eutils, LABFERRY_NCBI_SDL=portal.sdl)
    env.update(env_extra)
    return labferry("copy", *args, "--ca-file", nginx.ca_file, env_home=home, env=env, timeout=180)


def md5_of(path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_a_project_arrives_verified_with_a_samplesheet_and_the_report(portal, nginx, tmp_path, ferry_home,
                                                                      slow_portal_copy):
    dest = tmp_path / "study"
    proc = fetch(portal, nginx, "ena:PRJEB1111", f"{dest}/", "--json", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    names = sorted(p.name for p in dest.iterdir())
    assert names == ["ERR0000001_1.fastq.gz", "ERR0000001_2.fastq.gz", "ERR0000002.fastq.gz", "metadata.tsv",
                     "samplesheet.csv"]
    for row in portal.runs[:2]:
        for path, md5 in zip(row["fastq_ftp"].split(";"), row["fastq_md5"].split(";"), strict=True):
            assert md5_of(dest / path.rsplit("/", 1)[1]) == md5
    assert out["runs_without_files"] == ["ERR0000003"]
    # the list's small run, its last file, came in two pieces from nginx (ranges), the large ones in parallel
    assert "lean path: 1 small files fetched (1 in pieces), 0 handed" in (ferry_home / "ferry.log").read_text()
    assert "ERR0000003" in proc.stderr and "--files submitted" in proc.stderr  # named, never skipped silently
    with open(dest / "samplesheet.csv") as sheet:
        assert sheet.readline().startswith('"sample","fastq_1","fastq_2","run_accession","experiment_accession"')
    with open(dest / "samplesheet.csv") as sheet:
        rows = {r["run_accession"]: r for r in csv.DictReader(sheet)}
    assert set(rows) == {"ERR0000001", "ERR0000002"}
    paired, single = rows["ERR0000001"], rows["ERR0000002"]
    assert paired["sample"] == "ERX0000001" and paired["single_end"] == "false"
    assert paired["fastq_1"] == str(dest / "ERR0000001_1.fastq.gz") and paired["fastq_2"].endswith("_2.fastq.gz")
    assert paired["md5_1"] == md5_of(dest / "ERR0000001_1.fastq.gz")
    assert single["single_end"] == "true" and single["fastq_2"] == "" and single["md5_2"] == ""
    with open(dest / "metadata.tsv") as meta:
        report = list(csv.DictReader(meta, delimiter="\t"))
    assert [r["run_accession"] for r in report] == ["ERR0000001", "ERR0000002", "ERR0000003"]
    assert report[0]["scientific_name"] == "Homo sapiens"

    # the same command again: what is here and verified is not fetched again
    log_before = nginx.access_log.read_text().count("ERR0000001_1.fastq.gz")
    again = fetch(portal, nginx, "ena:PRJEB1111", f"{dest}/", "--json", home=ferry_home)
    assert again.returncode == 0, again.stderr
    states = {f["name"]: f["state"] for f in json.loads(again.stdout.strip().splitlines()[-1])["files"]}
    assert set(states.values()) == {"kept"}
    assert nginx.access_log.read_text().count("ERR0000001_1.fastq.gz") == log_before


def test_a_file_that_does_not_match_its_md5_fails_alone(portal, nginx, tmp_path, ferry_home):
    dest = tmp_path / "damaged"
    proc = fetch(portal, nginx, "PRJEB2222", f"{dest}/", "--json", home=ferry_home)
    assert proc.returncode != 0
    assert re.search(r"ERR0000004: ERR0000004_2\.fastq\.gz: .*md5", proc.stderr, re.I), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (dest / "ERR0000004_2.fastq.gz").exists()  # nothing under the final name
    assert (dest / "ERR0000004_1.fastq.gz").exists() and (dest / "ERR0000005.fastq.gz").exists()
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    states = {f["name"]: f["state"] for f in out["files"]}
    assert states == {"ERR0000004_1.fastq.gz": "fetched", "ERR0000004_2.fastq.gz": "failed",
                      "ERR0000005.fastq.gz": "fetched"}
    with open(dest / "samplesheet.csv") as sheet:
        assert [r["run_accession"] for r in csv.DictReader(sheet)] == ["ERR0000005"]  # an incomplete run is left out


@pytest.mark.parametrize("pipeline", ["rnaseq", "sarek", "taxprofiler"])
def test_a_study_arrives_with_the_sheet_a_pipeline_reads(pipeline, portal, nginx, tmp_path, ferry_home):
    """``--samplesheet rnaseq|sarek|taxprofiler`` (and paths relative to DEST): the sheet that pipeline's
    schema_input.json accepts, the runs of one sample sharing its name (checked by the rules of
    tests/unit/test_pipeline_sheets.py)."""
    from tests.unit.test_pipeline_sheets import RULES, check

    dest = tmp_path / pipeline
    proc = fetch(portal, nginx, "ena:PRJEB1111", f"{dest}/", "--samplesheet", pipeline, "--sheet-paths", "relative",
                 home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    rows = check(dest / "samplesheet.csv", RULES[pipeline], dest)
    assert sorted(r["fastq_1"] for r in rows) == ["ERR0000001_1.fastq.gz", "ERR0000002.fastq.gz"]
    key = "patient" if pipeline == "sarek" else "sample"
    assert {r[key] for r in rows} == {"SAMEA0000001"}  # both runs are of one sample: one name, merged by it
    assert f"samplesheet.csv (for {pipeline}) lists 2 runs" in proc.stderr


def test_a_dry_run_shows_the_study_and_fetches_nothing(portal, nginx, tmp_path, ferry_home):
    dest = tmp_path / "not-yet"
    proc = fetch(portal, nginx, "ena:PRJEB1111", f"{dest}/", "--dry-run", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("ena:PRJEB1111: 3 runs, 3 fastq files,") and "from ENA by https" in out
    for run in ("ERR0000001", "ERR0000002", "ERR0000003"):
        assert f"  {run}  SAMEA0000001  WGS ILLUMINA" in out
    assert "ERR0000001_2.fastq.gz  24.0 MiB" in out and "no fastq files in ENA" in out  # ERR0000003's
    assert f"free at {dest}:" in out.splitlines()[-1]
    assert not dest.exists()  # nothing fetched, nothing made


def test_filters_and_runs_fetch_a_part_and_ls_lists_it(portal, nginx, tmp_path, ferry_home):
    dest = tmp_path / "paired"
    proc = fetch(portal, nginx, "ena:PRJEB1111", f"{dest}/", "--filter", "library_layout=paired", "--json",
                 home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in dest.glob("*.fastq.gz")) == ["ERR0000001_1.fastq.gz", "ERR0000001_2.fastq.gz"]
    listed = labferry("ls", "ena:PRJEB3333", "--runs", "2", "--filter", "instrument_platform=ILLUMINA", "--json",
                      env_home=ferry_home, env=dict(os.environ, LABFERRY_ENA_PORTAL=portal.url,
                                                    LABFERRY_NCBI_SDL=portal.sdl,
                                                    LABFERRY_ENA_FILES=f"https://127.0.0.1:{nginx.port}"))
    assert listed.returncode == 0, listed.stderr
    shown = json.loads(listed.stdout)
    assert [r["run"] for r in shown["runs"]] == ["ERR0000100", "ERR0000101"]
    assert shown["total_bytes"] == sum(f["bytes"] for r in shown["runs"] for f in r["files"]) > 0
    bad = fetch(portal, nginx, "ena:PRJEB1111", f"{dest}/", "--filter", "colour=blue", home=ferry_home)
    assert bad.returncode == 2 and "not a field of ENA's report" in bad.stderr
    none = fetch(portal, nginx, "ena:PRJEB1111", f"{tmp_path}/none/", "--filter", "instrument_platform=PACBIO_SMRT",
                 home=ferry_home)
    assert none.returncode == 2 and len(none.stderr.strip().splitlines()) == 1, none.stderr
    assert "No run of ena:PRJEB1111 matches instrument_platform=pacbio_smrt; its runs have instrument_platform " \
           "ILLUMINA." in none.stderr and not (tmp_path / "none").exists()


def test_one_run_by_its_bare_accession(portal, nginx, tmp_path, ferry_home, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc = fetch(portal, nginx, "ERR0000002", "got/", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    assert md5_of(tmp_path / "got" / "ERR0000002.fastq.gz") == portal.runs[1]["fastq_md5"]


def test_nothing_public_is_one_sentence(portal, nginx, tmp_path, ferry_home):
    proc = fetch(portal, nginx, "ena:ERR9999999", f"{tmp_path}/x/", "-q", home=ferry_home)
    assert_clean_failure(proc, 3, words=("nothing public", "ERR9999999"))
    assert not (tmp_path / "x").exists()


def test_a_malformed_accession_is_bad_input_and_writes_nothing(portal, nginx, tmp_path, ferry_home):
    for word in ("ena:SRR12", "ena:hello", "GSE12x"):
        proc = fetch(portal, nginx, word, f"{tmp_path}/x/", home=ferry_home)
        assert_clean_failure(proc, 2)
    assert not (tmp_path / "x").exists() and portal.queries.count("SRR12") == 0
    asked = len(portal.queries)
    for budget in ("0", "257", "-4"):  # a budget that opens no connection, or a thread for each of thousands
        proc = fetch(portal, nginx, "ena:PRJEB3333", f"{tmp_path}/x/", "--host-connections", budget, home=ferry_home)
        assert_clean_failure(proc, 2, words=("--host-connections", "give 1 to 256"))
    assert not (tmp_path / "x").exists() and len(portal.queries) == asked


def test_a_portal_that_fails_is_asked_again_then_named(portal, nginx, tmp_path, ferry_home):
    portal.fail_first["ERR0000005"] = 2  # two 503s, then the answer
    proc = fetch(portal, nginx, "ena:ERR0000005", f"{tmp_path}/ok/", "-q", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    from tests.servers.nginx import free_port

    down = labferry("copy", "ena:ERR0000005", f"{tmp_path}/no/", env_home=ferry_home, timeout=120,
                    env=dict(os.environ, LABFERRY_ENA_PORTAL=f"http://127.0.0.1:{free_port()}/api",
                             LABFERRY_NCBI_SDL=portal.sdl))
    waited, failed = down.stderr.strip().splitlines()
    assert_clean_failure(SimpleNamespace(returncode=down.returncode, stdout=down.stdout, stderr=failed), 4,
                         words=("ENA's portal", "could not be reached"))
    # the wait before the last try is said as what it is: no service asked for it
    assert re.fullmatch(r"labferry: ENA's portal could not be reached \(.*refused\); asking about ERR0000005 "
                        r"again in 4 s", waited), down.stderr


def test_a_list_of_accessions_and_addresses(portal, nginx, tmp_path, ferry_home):
    """``-i FILE``, as aria2c and kingfisher users write them: comments, blank lines, an address among accessions,
    and one accession ENA has nothing for (named; the rest arrive; the exit status says not everything did)."""
    listing = tmp_path / "wanted.txt"
    listing.write_text("# the runs for figure 2\nERR0000002\n\nena:ERR0000005   # the control\n"
                       f"https://127.0.0.1:{nginx.port}/listed-plain.bin\nERR9999999\n")
    # its own name: plain.bin is the session's shared 48 MiB file (conftest.plain_file), which other modules
    # read after this one when the suite runs on several workers
    (nginx.data / "listed-plain.bin").write_bytes(b"x" * 1000)
    dest = tmp_path / "listed"
    proc = fetch(portal, nginx, "-i", str(listing), f"{dest}/", "--json", home=ferry_home)
    assert proc.returncode == 3, proc.stderr
    assert "nothing public for ERR9999999" in proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {f["name"]: f["state"] for f in out["files"]} == {
        "ERR0000002.fastq.gz": "fetched", "ERR0000005.fastq.gz": "fetched", "listed-plain.bin": "fetched"}
    with open(dest / "samplesheet.csv") as sheet:
        assert sorted(r["run_accession"] for r in csv.DictReader(sheet)) == ["ERR0000002", "ERR0000005"]
    bad = tmp_path / "bad.txt"
    bad.write_text("ERR0000002\nnot-an-accession\n")
    proc = fetch(portal, nginx, "-i", str(bad), f"{tmp_path}/none/", home=ferry_home)
    assert_clean_failure(proc, 2, words=("not-an-accession",))
    assert not (tmp_path / "none").exists()


def _connections(nginx, prefix: str) -> set[str]:
    """nginx's connection numbers for the GETs of files under ``prefix`` (its access log's last field)."""
    return {line.split(" ")[-1] for line in nginx.access_log.read_text().splitlines()
            if line.startswith(f"GET {prefix}")}


def test_a_study_is_one_job_and_its_small_runs_share_connections(portal, nginx, tmp_path, ferry_home):
    """40 small runs: one queue job and one history entry named by the accession, at most 32 connections
    (the default budget) for 40 GETs, every file checked."""
    dest = tmp_path / "small"
    proc = fetch(portal, nginx, "ena:PRJEB3333", f"{dest}/", "--json", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["files"]) == SMALL_RUNS and {f["state"] for f in out["files"]} == {"fetched"}
    log = nginx.access_log.read_text().splitlines()
    gets = [line for line in log if line.startswith("GET /vol1/fastq/ERR000/ERR00001")]
    assert len(gets) == SMALL_RUNS  # one GET each: no HEAD, no sidecar lookups, no retries
    assert len(_connections(nginx, "/vol1/fastq/ERR000/ERR00001")) <= 32
    history = json.loads(labferry("history", "--json", "--search", "PRJEB3333", env_home=ferry_home).stdout)
    assert [(h["source"], h["outcome"]) for h in history] == [("ena:PRJEB3333", "done")]
    assert history[0]["bytes"] == sum(64 * 1024 + i for i in range(SMALL_RUNS)) and history[0]["verified"]


def test_a_file_changed_after_it_was_verified_is_fetched_again(portal, nginx, tmp_path, ferry_home):
    """Verified files are taken on their size and time when those are as Ferry left them (no reading back 40
    files); a file changed since, even to the same size, is read, found wrong and fetched again."""
    dest = tmp_path / "again"
    assert fetch(portal, nginx, "ena:PRJEB3333", f"{dest}/", "-q", home=ferry_home).returncode == 0
    victim = dest / "ERR0000107.fastq.gz"
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))  # same size, a new time
    os.utime(victim, ns=(1, 1))
    proc = fetch(portal, nginx, "ena:PRJEB3333", f"{dest}/", "--json", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    states = {f["name"]: f["state"] for f in json.loads(proc.stdout.strip().splitlines()[-1])["files"]}
    assert states.pop("ERR0000107.fastq.gz") == "fetched" and set(states.values()) == {"kept"}
    assert md5_of(victim) == next(r for r in portal.runs if r["run_accession"] == "ERR0000107")["fastq_md5"]


def test_geo_series_and_samples_are_fetched_through_the_sra_they_link(portal, nginx, tmp_path, ferry_home):
    """GSE → its SRA study → ENA's report (the files of PRJEB1111); GSM → its experiment; a SuperSeries without
    reads of its own is one sentence naming its series, exit 3, nothing written."""
    dest = tmp_path / "geo"
    proc = fetch(portal, nginx, "GSE0001111", f"{dest}/", "--json", home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["geo"] == {"GSE0001111": ["ERP000001"]} and "GSE0001111 (GEO) is ERP000001 in SRA" in proc.stderr
    assert sorted(f["name"] for f in out["files"] if f["state"] == "fetched") == [
        "ERR0000001_1.fastq.gz", "ERR0000001_2.fastq.gz", "ERR0000002.fastq.gz"]
    with open(dest / "samplesheet.csv") as sheet:
        assert sorted(r["run_accession"] for r in csv.DictReader(sheet)) == ["ERR0000001", "ERR0000002"]

    sample = fetch(portal, nginx, "ena:GSM0000005", f"{tmp_path}/gsm/", "-q", home=ferry_home)
    assert sample.returncode == 0, sample.stderr
    assert md5_of(tmp_path / "gsm" / "ERR0000005.fastq.gz") == portal.runs[4]["fastq_md5"]

    superseries = fetch(portal, nginx, "GSE0002000", f"{tmp_path}/super/", home=ferry_home)
    assert_clean_failure(superseries, 3, words=("SuperSeries", "GSE0001111", "GSE0001112"))
    unknown = fetch(portal, nginx, "GSE0009999", f"{tmp_path}/super/", home=ferry_home)
    assert_clean_failure(unknown, 3, words=("GEO links no SRA reads to GSE0009999",))
    assert not (tmp_path / "super").exists()


def _ftp_mirror(nginx, vsftpd, run: str) -> str:
    """ENA's tree for ``run`` on the vsftpd too (anonymous, read-only, as ftp.sra.ebi.ac.uk); its base URL."""
    import shutil

    source = nginx.data / "vol1" / "fastq" / run[:6] / run
    target = vsftpd.anon / "vol1" / "fastq" / run[:6] / run
    shutil.copytree(source, target, dirs_exist_ok=True)
    for folder in (vsftpd.anon / "vol1", *(p for p in (vsftpd.anon / "vol1").rglob("*"))):
        os.chmod(folder, 0o755 if folder.is_dir() else 0o644)
    return vsftpd.url().rstrip("/")


def test_a_file_https_cannot_give_comes_by_ftp_and_the_other_way_round(portal, nginx, vsftpd, tmp_path,
                                                                        ferry_home):
    """A mirror answering 404 (the "550 on some mirrors" of fetchngs' tracker) for one file: that file alone is
    fetched by the other route, checked against the same MD5; with ``--route ftp`` the same the other way."""
    ftp = _ftp_mirror(nginx, vsftpd, "ERR0000006")
    gone = nginx.data / "vol1/fastq/ERR000/ERR0000006/ERR0000006_2.fastq.gz"
    gone.rename(gone.with_suffix(".away"))
    try:
        dest = tmp_path / "fallback"
        proc = fetch(portal, nginx, "ena:PRJEB4444", f"{dest}/", "--json", home=ferry_home, LABFERRY_ENA_FTP=ftp)
    finally:
        gone.with_suffix(".away").rename(gone)
    assert proc.returncode == 0, proc.stderr
    assert "1 file failed by https; trying ftp" in proc.stderr
    row = next(r for r in portal.runs if r["run_accession"] == "ERR0000006")
    for name, md5 in zip(("ERR0000006_1.fastq.gz", "ERR0000006_2.fastq.gz"), row["fastq_md5"].split(";"), strict=True):
        assert md5_of(dest / name) == md5
    assert "RETR vol1/fastq/ERR000/ERR0000006/ERR0000006_2.fastq.gz" in (vsftpd.root / "vsftpd.log").read_text()
    assert "ERR0000006_1.fastq.gz" not in (vsftpd.root / "vsftpd.log").read_text()  # only what HTTPS could not give

    ftp = _ftp_mirror(nginx, vsftpd, "ERR0000007")
    (vsftpd.anon / "vol1/fastq/ERR000/ERR0000007/ERR0000007_1.fastq.gz").unlink()
    dest = tmp_path / "by-ftp"
    proc = fetch(portal, nginx, "ena:PRJEB5555", f"{dest}/", "--route", "ftp", "--json", home=ferry_home,
                 LABFERRY_ENA_FTP=ftp)
    assert proc.returncode == 0, proc.stderr
    assert "1 file failed by ftp; trying https" in proc.stderr
    row = next(r for r in portal.runs if r["run_accession"] == "ERR0000007")
    for name, md5 in zip(("ERR0000007_1.fastq.gz", "ERR0000007_2.fastq.gz"), row["fastq_md5"].split(";"), strict=True):
        assert md5_of(dest / name) == md5


def test_a_study_cut_off_midway_resumes_with_the_same_command(portal, nginx, tmp_path, ferry_home, monkeypatch):
    """Ferry killed while a large file is half-way (as a laptop shut or a server gone): the same command keeps
    what was verified, resumes the large file from its record instead of starting over, and every MD5 holds."""
    from .conftest import kill_after_progress, popen_labferry

    monkeypatch.setenv("LABFERRY_ENA_PORTAL", portal.url)
    monkeypatch.setenv("LABFERRY_NCBI_SDL", portal.sdl)
    monkeypatch.setenv("LABFERRY_ENA_FILES", f"https://127.0.0.1:{nginx.port}/slow")  # 2 MB/s a connection
    dest = tmp_path / "cut"
    uri = "/slow/vol1/fastq/ERR000/ERR0000006/ERR0000006_2.fastq.gz"
    before = nginx.body_bytes(uri)
    proc = popen_labferry("copy", "ena:PRJEB4444", f"{dest}/", "--host-connections", "2", "-q", "--ca-file",
                          nginx.ca_file, env_home=ferry_home)
    done = kill_after_progress(proc, dest / "ERR0000006_2.fastq.gz.part.ferry", 4 * MiB)
    assert done >= 4 * MiB and not (dest / "ERR0000006_2.fastq.gz").exists()
    again = fetch(portal, nginx, "ena:PRJEB4444", f"{dest}/", "--json", home=ferry_home,
                  LABFERRY_ENA_FILES=f"https://127.0.0.1:{nginx.port}/slow")
    assert again.returncode == 0, again.stderr
    row = next(r for r in portal.runs if r["run_accession"] == "ERR0000006")
    for name, md5 in zip(("ERR0000006_1.fastq.gz", "ERR0000006_2.fastq.gz"), row["fastq_md5"].split(";"), strict=True):
        assert md5_of(dest / name) == md5
    sent = nginx.body_bytes(uri) - before
    # a restart costs what the first run sent plus the whole file again (at least 20 MiB + done): less is a resume
    assert sent < 20 * MiB + done, f"{sent} bytes sent for a 20 MiB file of which {done} were kept: it started over"


def test_a_folder_without_the_room_is_refused_before_anything_is_fetched(portal, nginx, tmp_path, ferry_home,
                                                                          monkeypatch, capsys):
    """The report gives the total first: a disk with 1 MiB free for a 49 MiB study is refused in one sentence,
    and no file is asked of the server. (The disk's free space is the one thing stood in for: filling a real
    disk in a test would fill the machine's.)"""
    from app.cli import main

    for name, value in (("LABFERRY_ENA_PORTAL", portal.url), ("LABFERRY_ENA_FILES", f"https://127.0.0.1:{nginx.port}"),
                        ("LABFERRY_NCBI_SDL", portal.sdl),
                        ("LABFERRY_HOME", str(ferry_home))):
        monkeypatch.setenv(name, value)
    from backends.host import portable

    monkeypatch.setattr(portable, "free_bytes", lambda folder: 256 * 4096)
    asked = nginx.access_log.read_text().count("ERR0000001_1.fastq.gz")
    status = main(["copy", "ena:PRJEB1111", f"{tmp_path / 'full'}/", "--ca-file", nginx.ca_file, "-q"])
    err = capsys.readouterr().err
    assert status == 5 and "Not enough free space" in err and "Traceback" not in err, err
    assert nginx.access_log.read_text().count("ERR0000001_1.fastq.gz") == asked
    assert not [p for p in (tmp_path / "full").rglob("*") if p.is_file()]


def test_ctrl_c_in_the_middle_of_a_study_says_what_is_done_and_the_same_command_finishes(portal, nginx, tmp_path,
                                                                                         ferry_home, monkeypatch):
    """Ctrl-C while the large file comes at 2 MB/s: exit 130 within seconds, a summary of what is verified, a
    samplesheet of the runs whose files all arrived; the same command fetches only the rest."""
    import signal
    import time

    from .conftest import popen_labferry

    monkeypatch.setenv("LABFERRY_ENA_PORTAL", portal.url)
    monkeypatch.setenv("LABFERRY_NCBI_SDL", portal.sdl)
    monkeypatch.setenv("LABFERRY_ENA_FILES", f"https://127.0.0.1:{nginx.port}/slow")
    dest = tmp_path / "ctrl-c"
    proc = popen_labferry("copy", "ena:PRJEB4444", f"{dest}/", "--host-connections", "2", "--ca-file",
                          nginx.ca_file, env_home=ferry_home)
    deadline = time.monotonic() + 60
    while not (dest / "ERR0000006_1.fastq.gz").exists() and time.monotonic() < deadline:
        time.sleep(0.2)  # the small file is in; the 20 MiB one still comes
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - sent < 10, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    summary = next(line for line in err.splitlines() if "stopped (Ctrl-C)" in line)
    assert "1 file to go (" in summary and "of 1 more file kept here; the same command goes on" in summary, summary
    assert "; 1 file fetched (2.0 MiB" in summary, summary
    assert not (dest / "ERR0000006_2.fastq.gz").exists()
    assert (dest / "samplesheet.csv").read_text().count("\n") == 1  # a header: the run is not whole yet
    again = fetch(portal, nginx, "ena:PRJEB4444", f"{dest}/", "--json", home=ferry_home,
                  LABFERRY_ENA_FILES=f"https://127.0.0.1:{nginx.port}/slow")
    assert again.returncode == 0, again.stderr
    states = {f["name"]: f["state"] for f in json.loads(again.stdout.splitlines()[-1])["files"]}
    assert states == {"ERR0000006_1.fastq.gz": "kept", "ERR0000006_2.fastq.gz": "fetched"}
    assert "ERR0000006" in (dest / "samplesheet.csv").read_text()


def test_a_read_only_destination_is_one_sentence_before_anything_is_fetched(portal, nginx, tmp_path, ferry_home):
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=4m", "tmpfs", str(ro)], check=True)
    try:
        proc = fetch(portal, nginx, "ena:PRJEB4444", f"{ro}/", home=ferry_home)
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (f"labferry: {ro} is on a read-only file system. Choose another "
                                                    "destination folder.")


def test_a_portal_asking_to_wait_with_retry_after_is_waited_for_as_it_asks(portal, nginx, tmp_path, ferry_home):
    portal.fail_first["PRJEB5555"], portal.retry_after = 1, 4
    try:
        proc = fetch(portal, nginx, "ena:PRJEB5555", f"{tmp_path}/later/", home=ferry_home)
    finally:
        portal.retry_after = None
    assert proc.returncode == 0, proc.stderr
    assert "ENA's portal asks Ferry to wait 4 s before asking about PRJEB5555 again (HTTP 503)" in proc.stderr


def test_limit_rate_caps_the_study_as_a_whole_not_each_file(portal, nginx, tmp_path, ferry_home):
    """--limit-rate 16M on a study of two 24 MiB files and a small one: the job as a whole keeps to 16 MiB/s (each
    large file once had its own bucket: twice the cap, four times with four files)."""
    proc = fetch(portal, nginx, "ena:PRJEB1111", f"{tmp_path}/capped/", "--limit-rate", "16M", "--json",
                 home=ferry_home)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    assert out["bytes_fetched"] >= 50 * MiB
    rate = out["bytes_fetched"] / out["seconds"]
    assert rate <= 16 * MiB * 1.15, f"{rate / MiB:.1f} MiB/s under a 16 MiB/s cap"


def test_a_portal_that_answers_after_a_minute_is_waited_for_and_shown_waiting(slow_portal_copy):
    """ENA's portal takes minutes for a large project: Ferry's question once ended at 60 s, silently, four times
    over. A 65-second answer now arrives, and the terminal says what Ferry waits for within seconds. (The copy
    started with the module's first test and waited while the others ran.)"""
    proc, dest = slow_portal_copy
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err
    waits = [line for line in err.splitlines() if "asking ENA's portal about PRJEB6666" in line]
    assert waits[0] == "labferry: asking ENA's portal about PRJEB6666 (3 s)…", err
    assert len(waits) >= 6  # every 10 s while it waits
    assert (dest / "samplesheet.csv").exists() and (dest / "ERR0000066.fastq.gz").exists()
