"""Which file of a run is which read: ENA's names, and for more than two files the reads' own lengths."""

from __future__ import annotations

import gzip
from dataclasses import dataclass

from app.accessions.reads import assign, longest_read, missing_bases, number_of


@dataclass
class F:
    name: str


def fastq(path, lengths: list[int], packed: bool = True) -> None:
    text = "".join(f"@r{i} 1:N:0\n{'A' * n}\n+\n{'F' * n}\n" for i, n in enumerate(lengths)).encode()
    path.write_bytes(gzip.compress(text) if packed else text)


def test_ena_read_numbers_from_names():
    assert [number_of(n, "SRR1") for n in ("SRR1_1.fastq.gz", "SRR1_3.fq", "SRR1.fastq.gz", "SAMEA1/SRR1_2.fastq.gz",
                                           "other_1.fastq.gz", "SRR1.bam")] == [1, 3, 0, 2, None, None]


def test_the_longest_of_the_first_reads_gzipped_or_not_and_none_for_what_is_not_fastq(tmp_path):
    fastq(tmp_path / "a.fastq.gz", [150, 151, 149])
    fastq(tmp_path / "b.fastq", [8, 8], packed=False)
    (tmp_path / "c.fastq.gz").write_bytes(b"\x1f\x8b not really gzip")
    (tmp_path / "d.fastq").write_text("this is a README\n")
    assert [longest_read(tmp_path / n) for n in ("a.fastq.gz", "b.fastq", "c.fastq.gz", "d.fastq")] == [
        151, 8, None, None]


def test_a_single_cell_run_in_any_order_of_lengths_gets_barcode_then_cdna(tmp_path):
    for name, length in (("R_1.fastq.gz", 28), ("R_2.fastq.gz", 8), ("R_3.fastq.gz", 91), ("R_4.fastq.gz", 10)):
        fastq(tmp_path / name, [length] * 5)
    files = [F(f"R_{i}.fastq.gz") for i in (4, 3, 2, 1)]  # the order a report may list them in
    roles = assign(files, "R", lambda f: tmp_path / f.name)
    assert (roles.read_1.name, roles.read_2.name) == ("R_1.fastq.gz", "R_3.fastq.gz")
    assert [f.name for f in roles.index] == ["R_2.fastq.gz", "R_4.fastq.gz"]


def test_two_files_are_read_1_and_2_without_reading_them_and_orphans_are_unpaired(tmp_path):
    roles = assign([F("R_2.fastq.gz"), F("R.fastq.gz"), F("R_1.fastq.gz")], "R", lambda f: tmp_path / "absent")
    assert (roles.read_1.name, roles.read_2.name, roles.unpaired.name) == ("R_1.fastq.gz", "R_2.fastq.gz",
                                                                           "R.fastq.gz")
    single = assign([F("R.fastq.gz")], "R", lambda f: tmp_path / "absent")
    assert single.read_1.name == "R.fastq.gz" and single.read_2 is None and single.unpaired is None


def test_a_missing_read_is_told_by_the_reports_spot_length(tmp_path):
    fastq(tmp_path / "R_1.fastq.gz", [28] * 4)
    fastq(tmp_path / "R_2.fastq.gz", [90] * 4)
    paths = [tmp_path / "R_1.fastq.gz", tmp_path / "R_2.fastq.gz"]
    assert missing_bases({"read_count": "10", "base_count": "1260"}, paths) == (126, 118)  # an 8-base index gone
    assert missing_bases({"read_count": "10", "base_count": "1180"}, paths) is None  # all there
    assert missing_bases({"read_count": "10", "base_count": "1150"}, paths) is None  # trimmed reads: fewer, not more
    assert missing_bases({"read_count": "0", "base_count": "1260"}, paths) is None
