"""A web server a researcher was told to download from, misbehaving on purpose (``tests/servers/hostile_http.py``).

Each case: what reached disk stays inside DEST and within what the server promised, the command ends in time
with one sentence and its documented exit status, its memory stays bounded, and a fault that can never become
a file is not retried (the server was asked once)."""

from __future__ import annotations

import pytest

from backends.https.download import START_STREAMS
from tests.servers.hostile_http import WIDE

from .conftest import MiB, ferry, files_below

#: memory a copy may use at its peak, whatever the server sends (Python, aiohttp and Ferry take ~60-90 MiB)
PEAK_MIB = 250


def copy_into(server, path: str, dest, home, *extra: str, timeout: float = 60):
    return ferry("copy", server.url(path), f"{dest}/", "--retries", "1", *extra, home=home, timeout=timeout)


@pytest.mark.parametrize("path", ["/lies.bin", "/chunked-lie.bin"])
def test_a_server_that_sends_more_than_it_announced_is_stopped_at_once(hostile_http, path, dest, ferry_home):
    ran = copy_into(hostile_http, path, dest, ferry_home)
    assert ran.returncode == 3, ran.stderr
    assert "sent more than the 1.0 MiB it announced" in ran.said[-1]
    assert files_below(dest.parent) == {"dest": 0} or files_below(dest) == {}
    assert ran.seconds < 20 and ran.peak_mib < PEAK_MIB
    # never retried: one attempt in the log, and no more requests than one attempt's speculative ranges (sent
    # together before the first answer shows the server ignores ranges) and the whole one
    assert "attempt 2" not in (ferry_home / "ferry.log").read_text()
    assert hostile_http.asked[("GET", path)] <= START_STREAMS + 1


def test_a_gzip_bomb_stops_long_before_the_disk_is_full(hostile_http, dest, ferry_home):
    ran = copy_into(hostile_http, "/bomb.fastq", dest, ferry_home)
    assert ran.returncode == 3, ran.stderr
    assert "inflates more than 100 times" in ran.said[-1] and "decompression bomb" in ran.said[-1]
    assert files_below(dest) == {}  # not even the part file
    assert ran.seconds < 30 and ran.peak_mib < PEAK_MIB


def test_an_honest_body_the_server_gzipped_unasked_arrives_whole(hostile_http, dest, ferry_home):
    ran = copy_into(hostile_http, "/small-gzip.fastq", dest, ferry_home)
    assert ran.returncode == 0, ran.stderr
    assert files_below(dest) == {"small-gzip.fastq": 4 * MiB}


@pytest.mark.parametrize("path", ["/header-flood.bin", "/long-header.bin"])
def test_a_header_block_beyond_any_sane_size_is_refused_once(hostile_http, path, dest, ferry_home):
    ran = copy_into(hostile_http, path, dest, ferry_home)
    assert ran.returncode == 3, ran.stderr
    assert "is not HTTP Ferry can read" in ran.said[-1] and "Retrying" not in ran.stderr
    assert files_below(dest) == {}
    assert ran.seconds < 10 and ran.peak_mib < PEAK_MIB


@pytest.mark.parametrize("path,to", [("/to-file.bin", "file:///etc/passwd"), ("/to-ftp.bin", "ftp://"),
                                     ("/to-data.bin", "data:")])
def test_a_redirect_to_another_scheme_is_final(hostile_http, path, to, dest, ferry_home):
    ran = copy_into(hostile_http, path, dest, ferry_home)
    assert ran.returncode == 3, ran.stderr
    assert f"redirects to {to}" in ran.said[-1] and "Retrying" not in ran.stderr
    assert files_below(dest) == {} and ran.seconds < 10


def test_a_sign_in_page_is_refused_and_leaves_no_part_file(hostile_http, dest, ferry_home):
    ran = copy_into(hostile_http, "/sign-in.bin", dest, ferry_home)
    assert ran.returncode == 2, ran.stderr
    assert "is a web page" in ran.said[-1]
    assert files_below(dest) == {}


NAMED = {"dotdot": "escaped.txt", "absolute": "absolute.txt", "star": "star.txt", "backslash": "back.txt",
         "con": "CON_", "aux": "aux_.txt", "colon": "C%3Aevil.txt", "question": "what%3F.txt",
         "trailing": "trailing%2E%20"}


@pytest.mark.parametrize("key,saved", NAMED.items())
def test_a_name_in_content_disposition_stays_inside_dest_and_is_reported(hostile_http, key, saved, dest,
                                                                         ferry_home):
    ran = copy_into(hostile_http, f"/named/{key}", dest, ferry_home)
    assert ran.returncode == 0, ran.stderr
    assert files_below(dest.parent) == {f"dest/{saved}": 8}
    assert any(f"saved as {saved!r}" in line for line in ran.said), ran.stderr


def test_hostile_names_in_a_listing_are_all_saved_inside_dest_and_named(hostile_http, dest, ferry_home):
    ran = copy_into(hostile_http, "/names/", dest, ferry_home)
    assert ran.returncode == 0, ran.stderr
    got = files_below(dest.parent)
    assert set(got) == {f"dest/names/{n}" for n in (
        "..%2F..%2Fescaped.txt", "back%5Cslash.txt", "CON_", "aux_.txt", "what%3F.txt", "x%3Ay.txt",
        "trailing%2E", "A.txt", "a.txt", "sub/inner.txt", "nul%00.txt")}
    assert got["dest/names/a.txt"] == 6 and got["dest/names/A.txt"] == 6
    note = next(line for line in ran.said if "saved under a safe name" in line)
    assert "'../../escaped.txt' → '..%2F..%2Fescaped.txt'" in note and "11 names" not in note


def test_a_listing_that_links_back_to_itself_ends_and_says_what_it_left_out(hostile_http, dest, ferry_home):
    before = sum(n for (method, path), n in hostile_http.asked.items() if path.startswith("/loop/"))
    ran = copy_into(hostile_http, "/loop/", dest, ferry_home)
    assert ran.returncode == 0, ran.stderr
    assert files_below(dest) == {"loop/x.txt": 2}
    assert any("2 folders left out" in line and "link back" in line for line in ran.said), ran.stderr
    asked = sum(n for (method, path), n in hostile_http.asked.items() if path.startswith("/loop/")) - before
    assert asked < 10 and ran.seconds < 20


def test_a_server_that_trickles_ends_as_a_stall_not_never(hostile_http, dest, ferry_home):
    ran = copy_into(hostile_http, "/trickle.bin", dest, ferry_home, "--stall-timeout", "2", "--retries", "1")
    assert ran.returncode == 4, ran.stderr
    assert "a stall" in ran.said[-1] and "Ferry tried 2 times" in ran.said[-1]
    assert ran.seconds < 30
    assert not (dest / "trickle.bin").exists()


def test_a_folder_of_five_thousand_files_comes_whole_within_memory(hostile_http, dest, ferry_home):
    """One listing page of 5,000 entries, a HEAD and a GET each: all of them arrive, memory stays bounded."""
    ran = copy_into(hostile_http, "/wide/", dest, ferry_home, timeout=240)
    assert ran.returncode == 0, ran.stderr
    got = files_below(dest / "wide")
    assert len(got) == WIDE and set(got.values()) == {0}
    assert ran.peak_mib < PEAK_MIB + 150, ran.peak_mib
