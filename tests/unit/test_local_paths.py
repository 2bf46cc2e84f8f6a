"""What a researcher on Windows or macOS pastes as a source or destination is a local path, never an address:
drive letters with either slash, UNC paths, ``~``, and the ``file:`` URLs browsers and file managers copy."""

from __future__ import annotations

import pytest

from app.requests import Overrides, resolve
from backends.core.registry import scheme_of
from backends.core.urls import local_path_of


@pytest.mark.parametrize("text", [r"C:\data\run1.fq.gz", "C:/data/", r"\\server\share\x", "D:run.bam", "~/reads",
                                  r"c:\Users\Ana\My Data\s 1.fastq"])
def test_windows_and_home_paths_are_local_not_addresses(text):
    assert scheme_of(text) == ""
    assert local_path_of(text) == text


@pytest.mark.parametrize(("url", "path"), [
    ("file:///C:/data/run1.fq.gz", "C:/data/run1.fq.gz"),
    ("file:///c:/Users/Ana/My%20Data/s%201.fastq", "c:/Users/Ana/My Data/s 1.fastq"),
    ("file://server/share/x.bam", "//server/share/x.bam"),
    ("file:///Users/ana/Downloads/r%C3%A9sultats.tsv", "/Users/ana/Downloads/résultats.tsv"),
    ("file://localhost/home/ana/x", "/home/ana/x"),
    ("FILE:///tmp/x", "/tmp/x"),
])
def test_file_urls_name_local_paths(url, path):
    assert local_path_of(url) == path


def test_a_file_url_as_the_destination_is_a_local_folder(tmp_path, ferry_home):
    """``labferry copy https://… file:///…/in/``: the folder, and the file named after the source inside it."""
    (tmp_path / "in").mkdir()
    request = resolve("https://data.example.org/runs/r1.fastq.gz", (tmp_path / "in").as_uri() + "/", Overrides())
    assert request.dest == str(tmp_path / "in" / "r1.fastq.gz")


def test_a_file_url_as_the_source_is_an_upload_from_that_file(tmp_path, ferry_home):
    local = tmp_path / "my reads.fq"
    local.write_bytes(b"@r\nACGT\n+\n!!!!\n")
    request = resolve(local.as_uri(), "sftp://lab@dtn.example.org/inbox/", Overrides())
    assert request.source == str(local) and request.backend == "ssh"
