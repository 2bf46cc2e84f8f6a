"""The one way out to disk: names made safe for every OS, nothing outside DEST, no link followed, never more
bytes than promised, nothing under a final name before it is whole."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.core.errors import BadAnswer, LinkInDest
from backends.destination import Destination, Identity, PartFile, WholeFile, portable_name, portable_path
from backends.destination.names import MAX_NAME_BYTES, WINDOWS_DEVICES, WINDOWS_REFUSED, fold

NAMES = {
    "what?.txt": "what%3F.txt", "x:y.txt": "x%3Ay.txt", "C:evil.txt": "C%3Aevil.txt", "back\\slash": "back%5Cslash",
    "a/b": "a%2Fb", "new\nline.fq": "new%0Aline.fq", "tab\there": "tab%09here", "trailing.": "trailing%2E",
    "trailing. ": "trailing%2E%20", "CON": "CON_", "aux.txt": "aux_.txt", "lpt1.tar.gz": "lpt1_.tar.gz",
    "Com\u00b9.x": "Com\u00b9_.x", ".": "%2E", "..": "%2E%2E", "star*<>|\".fq": "star%2A%3C%3E%7C%22.fq",
    "latin1-\udce9t\udce9.fq": "latin1-%E9t%E9.fq", "caf\u00e9.fq": "caf\u00e9.fq", "-leading-dash": "-leading-dash",
    "$(touch PWNED)": "$(touch PWNED)", "reads_1.fastq.gz": "reads_1.fastq.gz", ".hidden": ".hidden",
    "CONSOLE.txt": "CONSOLE.txt", "nul\0.txt": "nul%00.txt",
}


@pytest.mark.parametrize("given_name,saved", NAMES.items())
def test_each_name_is_saved_under_a_name_every_os_accepts(given_name, saved):
    name, why = portable_name(given_name)
    assert name == saved
    assert bool(why) == (given_name != saved)


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=()), max_size=300))
def test_no_name_from_a_server_can_be_a_path_or_a_name_windows_refuses(name):
    saved, _ = portable_name(name)
    assert saved and saved not in (".", "..")
    assert not any(c in WINDOWS_REFUSED or c in "/\\" or ord(c) < 32 for c in saved)
    assert not saved.endswith((".", " "))
    assert saved.partition(".")[0].rstrip(" ").upper() not in WINDOWS_DEVICES
    assert len(saved.encode()) <= MAX_NAME_BYTES


@given(st.lists(st.sampled_from(["..", ".", "", "a", "C:", "\\..", "x\\..\\..", "/", "b"]), min_size=1, max_size=8))
def test_a_server_path_never_leads_outside_dest(parts):
    given_path = "/".join(parts)
    try:
        saved, _ = portable_path(given_path)
    except ValueError:
        return  # nothing left to name: refused
    assert not saved.startswith("/") and ".." not in saved.split("/") and "." not in saved.split("/")
    assert os.path.normpath(os.path.join("/dest", saved)).startswith("/dest/")


def test_a_long_name_keeps_its_extension_and_differs_from_its_twin():
    a, _ = portable_name("x" * 400 + "A.fastq.gz")
    b, _ = portable_name("x" * 400 + "B.fastq.gz")
    assert a != b and a.endswith(".gz") and len(a.encode()) <= MAX_NAME_BYTES


def test_claims_report_every_name_that_changed_and_stay_below_dest(tmp_path):
    dest = Destination(tmp_path / "dest")
    assert dest.claim("/etc/passwd") == "etc/passwd"
    assert dest.claim("../../escaped.txt") == "%2E%2E/%2E%2E/escaped.txt"
    assert dest.claim("fine/reads.fq") == "fine/reads.fq"
    assert [r.given for r in dest.renamed] == ["/etc/passwd", "../../escaped.txt"]
    assert "saved under a safe name" in dest.renamed_note()
    path = dest.file(dest.claim("../../escaped.txt"))
    assert str(path).startswith(str(tmp_path / "dest") + os.sep)


def test_a_case_clash_is_numbered_only_where_the_disk_folds_case(tmp_path):
    folding = Destination(tmp_path / "a")
    folding._folds = True  # what the probe answers on macOS's or Windows' disk (tests/integration: a FAT drive)
    assert [folding.claim(n) for n in ("A.txt", "a.txt", "a.TXT", "b/R1.fq.gz", "B/r1.fq.gz")] == \
        ["A.txt", "a~2.txt", "a~3.TXT", "b/R1.fq.gz", "B/r1~2.fq.gz"]
    keeping = Destination(tmp_path / "b")
    assert keeping.folds_case() is False  # this machine's own disk: both names are kept
    assert [keeping.claim(n) for n in ("A.txt", "a.txt")] == ["A.txt", "a.txt"]
    assert fold("caf\u00e9") == fold("CAFE\u0301")


def test_a_link_inside_dest_is_never_entered_or_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "reads.fq").write_bytes(b"precious")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "run42").symlink_to(outside)
    (dest / "file.bin").symlink_to(outside / "reads.fq")
    destination = Destination(dest)
    with pytest.raises(LinkInDest, match="run42 is a link"):
        destination.file(destination.claim("run42/new.fq"))
    with pytest.raises(LinkInDest, match="file.bin is a link"):
        destination.file(destination.claim("file.bin"))
    with pytest.raises(LinkInDest):
        PartFile(dest / "file.bin").finish()
    (dest / "x.bin.part").symlink_to(outside / "reads.fq")
    with pytest.raises(LinkInDest, match="x.bin.part is a link"):
        PartFile(dest / "x.bin").lock()
    with pytest.raises(LinkInDest):
        with WholeFile(dest / "x.bin", 10, "test"):
            pass
    assert (outside / "reads.fq").read_bytes() == b"precious" and list(outside.iterdir()) == [outside / "reads.fq"]


def test_dest_itself_may_be_a_link_the_user_chose(tmp_path):
    real = tmp_path / "big-disk"
    real.mkdir()
    (tmp_path / "data").symlink_to(real)
    destination = Destination(tmp_path / "data")
    with WholeFile(destination.file(destination.claim("run/x.txt")), 3, "test") as out:
        out.write(b"abc")
        out.commit()
    assert (real / "run" / "x.txt").read_bytes() == b"abc"


def test_never_a_byte_more_than_announced(tmp_path):
    part = PartFile(tmp_path / "f.bin")
    part.open(Identity("https://h/f.bin", 10, '"e"', None))
    part.write(b"0123456789", 0)
    with pytest.raises(BadAnswer, match="more than the 10 B it announced for f.bin"):
        part.write(b"x", 10)
    with pytest.raises(BadAnswer):
        part.write(b"6789x", 6)
    part.discard()
    with pytest.raises(BadAnswer), WholeFile(tmp_path / "g.bin", 4, "ftp://h/g.bin") as out:
        out.write(b"abcd")
        out.write(b"e")
    assert not (tmp_path / "g.bin").exists() and not (tmp_path / "g.bin.part").exists()


def test_a_whole_file_is_under_its_name_only_once_committed(tmp_path):
    target = tmp_path / "r.fq"
    with WholeFile(target, None, "x") as out:
        out.write(b"@r\nACGT\n")
        assert not target.exists() and (tmp_path / "r.fq.part").exists()
    assert not (tmp_path / "r.fq.part").exists() and not target.exists()  # not committed: gone
    with WholeFile(target, None, "x") as out:
        out.write(b"@r\nACGT\n")
        out.commit(mtime=1_600_000_000, mode=0o640)
    assert target.read_bytes() == b"@r\nACGT\n" and int(target.stat().st_mtime) == 1_600_000_000


@given(st.text(max_size=300))
def test_a_saved_name_is_saved_as_itself_again(name):
    """What Ferry saved once, it saves under the same name when asked again (--sync, a re-run)."""
    once = portable_name(name)[0]
    assert portable_name(once) == (once, "")


def test_a_folder_named_after_the_source_that_is_a_link_is_refused(tmp_path):
    """DEST/run42 made from the source's name (DEST was a folder): a link there was not the user's choice."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "run42").symlink_to(outside)
    with pytest.raises(LinkInDest, match="run42 is a link"):
        Destination(tmp_path / "run42", named_here=True).folder("")
    assert Destination(tmp_path / "run42").folder("") == tmp_path / "run42"  # typed by the user: taken
    assert list(outside.iterdir()) == []


def test_write_whole_says_when_another_writer_took_its_name(tmp_path, monkeypatch):
    """A second unpack into the same folder removes this member's part file and makes its own before this one is
    renamed: the rename then names the other's bytes, and ``write_whole`` must not call them checked. A plain
    run, and a link planted at the part's name, for contrast."""
    from backends.destination import write_whole
    from backends.host import portable

    plain = tmp_path / "plain.vcf"
    assert write_whole(str(plain), b"ours\n", 0o640, 1_600_000_000_123_456_789) is True
    assert plain.read_bytes() == b"ours\n" and os.stat(plain).st_mtime_ns == 1_600_000_000_123_456_789
    assert oct(os.stat(plain).st_mode & 0o777) == oct(0o640) and not (tmp_path / "plain.vcf.part").exists()

    target = tmp_path / "member.vcf"
    real_stamp = portable.stamp_open

    def other_writer_meanwhile(fd, mode, mtime_ns):
        part = tmp_path / "member.vcf.part"
        os.unlink(part)
        part.write_bytes(b"theirs\n")  # the other process's part file, under the same name
        return real_stamp(fd, mode, mtime_ns)

    monkeypatch.setattr(portable, "stamp_open", other_writer_meanwhile)
    assert write_whole(str(target), b"ours\n", 0o644, None) is False
    assert target.read_bytes() == b"theirs\n"
    monkeypatch.setattr(portable, "stamp_open", real_stamp)

    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    os.symlink(outside, tmp_path / "linked.vcf.part")
    with pytest.raises(LinkInDest):
        write_whole(str(tmp_path / "linked.vcf"), b"ours\n")
    assert outside.read_text() == "not yours" and not (tmp_path / "linked.vcf").exists()
