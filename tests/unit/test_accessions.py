"""Accessions and ENA's report, without the network: which kind each accession is, and the plan a report gives."""

from __future__ import annotations

import pytest

from app.accessions import ena, ids
from backends.core.errors import BadRequest


@pytest.mark.parametrize("text, kind", [
    ("SRR1234567", "run"), ("ena:ERR000001", "run"), ("DRR123456", "run"), ("SRX1234567", "experiment"),
    ("ERS123456", "sample"), ("SAMN01234567", "sample"), ("SAMEA1234567", "sample"), ("SAMD00012345", "sample"),
    ("SRP123456", "study"), ("ERP000001", "study"), ("PRJNA625551", "project"), ("PRJEB37513", "project"),
    ("PRJDB1234", "project"), ("GSE147507", "geo-series"), ("ena:GSM4432378", "geo-sample"),
])
def test_each_kind_of_accession(text, kind):
    assert ids.parse(text).kind == kind


def test_lowercase_accessions_are_taken_as_enas_and_ncbis_take_them():
    assert ids.parse("srr1234567") == ids.Accession("SRR1234567", "run")
    assert ids.parse("ENA:prjeb37513") == ids.Accession("PRJEB37513", "project")
    assert ids.is_accession("gse147507")


@pytest.mark.parametrize("text", ["SRR12", "ena:", "PRJXX1", "ena:hello world", "GSE147x"])
def test_what_is_not_an_accession_is_refused_in_words(text):
    with pytest.raises(BadRequest) as caught:
        ids.parse(text)
    assert caught.value.exit_status == 2


def test_a_bare_word_is_an_accession_only_when_no_such_path_exists(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert ids.is_accession("SRR1234567") and ids.is_accession("ena:anything")
    (tmp_path / "SRR1234567").write_text("a local file of that name: an upload, as before")
    assert not ids.is_accession("SRR1234567")
    assert not ids.is_accession("data/run1.bam") and not ids.is_accession("https://host/x")


def test_the_plan_takes_urls_md5s_and_sizes_from_the_report(monkeypatch):
    monkeypatch.setenv("LABFERRY_ENA_FILES", "https://mirror.example.org/ena/")
    rows = ena.parse_tsv(
        "run_accession\tfastq_ftp\tfastq_md5\tfastq_bytes\n"
        "SRR1\tftp.sra.ebi.ac.uk/vol1/fastq/SRR1/SRR1.fastq.gz;ftp.sra.ebi.ac.uk/vol1/fastq/SRR1/SRR1_1.fastq.gz;"
        "ftp.sra.ebi.ac.uk/vol1/fastq/SRR1/SRR1_2.fastq.gz\taa;bb;cc\t10;20;30\n"
        "SRR2\t\t\t\n")
    plan = ena.Plan("SRP123456", "fastq")
    plan.add(rows)
    assert [(f.name, f.read, f.md5, f.size) for f in plan.files] == [
        ("SRR1.fastq.gz", None, "aa", 10), ("SRR1_1.fastq.gz", 1, "bb", 20), ("SRR1_2.fastq.gz", 2, "cc", 30)]
    assert plan.files[1].url == "https://mirror.example.org/ena/vol1/fastq/SRR1/SRR1_1.fastq.gz"
    assert plan.without_files == ["SRR2"] and plan.total_bytes == 60


def test_small_files_go_many_at_once_and_large_ones_four_at_a_time_within_the_budget():
    from backends.streams.budget import budget_split

    assert budget_split(16, 40, 0) == (16, 0, 0)  # 40 small runs: 16 at once, one connection each
    assert budget_split(16, 3, 0) == (3, 0, 0)
    assert budget_split(16, 1, 12) == (1, 4, 3)  # the small lane takes what it needs, four large files share the rest
    assert budget_split(16, 0, 2) == (0, 2, 8)
    assert budget_split(2, 0, 5) == (0, 2, 1)
    for budget in (1, 2, 3, 16, 64):  # never more connections than the budget, one a lane at the least
        for smalls, larges in ((0, 1), (1, 0), (5, 5), (100, 100)):
            small, lanes, each = budget_split(budget, smalls, larges)
            assert small + lanes * each <= max(budget, bool(smalls) + bool(larges))


def test_a_list_in_utf8_with_a_bom_is_read_and_another_encoding_is_named_by_its_line(tmp_path):
    from app.accessions.plans import read_list

    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfsrr1234567\r\n# caf\xc3\xa9\r\nERR000001\r\n")
    assert read_list(bom) == ["srr1234567", "ERR000001"]
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"SRR1234567\n# \xe9tude de cas\nERR000001\n")
    with pytest.raises(BadRequest, match=r"Line 2 of the list .*latin1.txt is not UTF-8 \(byte 0xe9\)"):
        read_list(latin)
    wide = tmp_path / "utf16.txt"
    wide.write_bytes("SRR1234567\n".encode("utf-16"))
    with pytest.raises(BadRequest, match="saved as UTF-16"):
        read_list(wide)


def test_eutils_calls_are_paced_to_ncbis_limit_three_a_second_or_ten_with_a_key(monkeypatch):
    """NCBI blocks an address that asks E-utilities faster than 3 requests a second (10 with an API key): calls
    from any thread wait their turn. A clock that does not move shows the waits each call is given."""
    from app.accessions import geo

    for key, gap in ((None, 1 / 3), ("abc123", 1 / 10)):
        if key:
            monkeypatch.setenv("NCBI_API_KEY", key)
        else:
            monkeypatch.delenv("NCBI_API_KEY", raising=False)
        monkeypatch.setattr(geo, "_next_call", 0.0)
        waits = [geo.pace(sleep=lambda s: None, clock=lambda: 100.0) for _ in range(4)]
        assert waits == pytest.approx([0.0, gap, 2 * gap, 3 * gap])


def test_the_sra_data_locators_answer_gives_the_normalized_file_by_a_free_link():
    """SDL version 2 as NCBI documents it: the normalized .sra before SRA Lite, a link that needs neither payment
    nor a restore from cold storage, NCBI's own before a cloud's; nothing usable is no file, not a guess."""
    from app.accessions.ncbi import choose

    def entry(name, md5, locations, noqual=False):
        return {"type": "sra", "name": name, "size": 1234, "md5": md5, "noqual": noqual, "locations": locations}

    paid = {"link": "https://s3.example/paid", "service": "s3", "payRequired": True}
    cold = {"link": "https://gs.example/cold", "service": "gs", "rehydrationRequired": True}
    cloud = {"link": "https://s3.example/free", "service": "s3"}
    own = {"link": "https://sra-downloadb.example/SRR1.1", "service": "sra-ncbi"}
    answer = {"version": "2", "result": [{"bundle": "SRR1", "status": 200, "files": [
        entry("SRR1.lite", "a" * 32, [own], noqual=True), entry("SRR1", "B" * 32, [paid, cold, cloud, own])]}]}
    found = choose(answer, "SRR1")
    assert (found.name, found.url, found.md5, found.size, found.source) == (
        "SRR1.sra", own["link"], "b" * 32, 1234, "ncbi")
    lite_only = {"version": "2", "result": [{"status": 200, "files": [entry("SRR1.lite", "c" * 32, [cloud], True)]}]}
    assert choose(lite_only, "SRR1").name == "SRR1.lite.sra"
    assert choose({"version": "2", "result": [{"status": 200, "files": [entry("SRR1", "d" * 32, [paid])]}]},
                  "SRR1") is None
    assert choose({"version": "2", "result": [{"bundle": "SRR1", "status": 404, "msg": "not found"}]}, "SRR1") is None
    with pytest.raises(Exception, match="version 2"):
        choose({"version": "1"}, "SRR1")
