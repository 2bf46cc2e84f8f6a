"""An FTP server a researcher was told to download from, misbehaving on purpose (``tests/servers/hostile_ftp.py``):
lying sizes, hostile names, listings that lead back into themselves or never end, a trickle, a full disk."""

from __future__ import annotations

from .conftest import MiB, ferry, files_below

PEAK_MIB = 250


def copy_into(server, path: str, dest, home, *extra: str, timeout: float = 60):
    return ferry("copy", server.url(path), f"{dest}/", "--retries", "1", *extra, home=home, timeout=timeout)


def test_a_file_longer_than_its_size_is_stopped_at_once(hostile_ftp, dest, ferry_home):
    ran = copy_into(hostile_ftp, "/lies.bin", dest, ferry_home)
    assert ran.returncode == 3, ran.stderr
    assert "sent more than the 1.0 MiB it announced" in ran.said[-1] and "Retrying" not in ran.stderr
    assert files_below(dest) == {}
    assert hostile_ftp.served["/lies.bin"] < 64 * MiB
    assert ran.seconds < 20 and ran.peak_mib < PEAK_MIB


def test_hostile_names_in_a_listing_are_saved_inside_dest_and_named(hostile_ftp, dest, ferry_home):
    ran = copy_into(hostile_ftp, "/names/", dest, ferry_home)
    assert ran.returncode == 0, ran.stderr
    assert files_below(dest.parent) == {"dest/names/what%3F.txt": 2, "dest/names/CON_": 4,
                                        "dest/names/x%3Ay.txt": 6, "dest/names/trailing%2E": 4,
                                        "dest/names/sub/inner.txt": 6}
    assert any("saved under a safe name" in line and "'what?.txt' → 'what%3F.txt'" in line for line in ran.said)
    assert any("1 symbolic link on the server was not followed" in line for line in ran.said), ran.stderr
    # a name with a line break would end RETR's line and start a command of the server's choosing, and one with a
    # slash would name another file than the one listed: neither is ever sent
    assert any("2 names on the server hold a line break or a slash" in line for line in ran.said), ran.stderr
    assert not [verb for verb, _ in hostile_ftp.asked if verb == "DELE"]
    assert not [arg for verb, arg in hostile_ftp.asked if verb == "RETR" and ".." in arg]


def test_a_listing_that_leads_back_into_itself_ends(hostile_ftp, dest, ferry_home):
    ran = copy_into(hostile_ftp, "/loop/", dest, ferry_home)
    assert ran.returncode == 0, ran.stderr
    assert files_below(dest) == {"loop/x.txt": 2}
    assert any("2 folders left out" in line for line in ran.said), ran.stderr
    assert ran.seconds < 20


def test_a_tree_deeper_than_any_real_one_is_refused_in_a_sentence(hostile_ftp, dest, ferry_home):
    ran = copy_into(hostile_ftp, "/deep/", dest, ferry_home)
    assert ran.returncode == 2, ran.stderr
    assert "more than 32 levels deep" in ran.said[-1]
    assert files_below(dest) == {} and ran.seconds < 30
    assert sum(n for (verb, arg), n in hostile_ftp.asked.items() if verb == "MLSD" and arg.startswith("/deep")) <= 40


def test_a_trickling_data_connection_ends_as_a_stall(hostile_ftp, dest, ferry_home):
    ran = copy_into(hostile_ftp, "/trickle.bin", dest, ferry_home, "--stall-timeout", "2", timeout=90)
    assert ran.returncode == 4, ran.stderr
    assert "stall" in ran.said[-1] and ran.seconds < 40
    assert not (dest / "trickle.bin").exists()


def test_a_full_disk_on_the_server_during_an_upload_is_one_sentence(hostile_ftp, tmp_path, ferry_home):
    local = tmp_path / "reads.fq"
    local.write_bytes(b"@r\nACGT\n+\nFFFF\n" * 65536)  # 1 MiB: past the server's 256 KiB of room
    ran = ferry("copy", str(local), hostile_ftp.url("/incoming.fq"), "--retries", "3", home=ferry_home)
    assert ran.returncode != 0, ran.stderr
    assert "full" in ran.said[-1].lower() and "Retrying" not in ran.stderr, ran.stderr
    assert len(ran.said) == 1, ran.stderr
