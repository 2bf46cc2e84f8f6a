"""Names on a disk that folds case and refuses what Windows refuses (a real FAT file system): A.txt and a.txt
both kept, what?.txt saved under a name the disk takes, every change said. Without the destination module the
second twin overwrote the first, and what?.txt was lost without a word."""

from __future__ import annotations

from .conftest import ferry, files_below


def test_a_web_folder_with_case_twins_and_refused_characters_onto_a_fat_drive(hostile_http, fat_drive, ferry_home):
    ran = ferry("copy", hostile_http.url("/names/"), f"{fat_drive}/", "--retries", "0", home=ferry_home)
    assert ran.returncode == 0, ran.stderr
    got = files_below(fat_drive / "names")
    assert set(got) == {"..%2F..%2Fescaped.txt", "back%5Cslash.txt", "CON_", "aux_.txt", "what%3F.txt",
                        "x%3Ay.txt", "trailing%2E", "A.txt", "a~2.txt", "sub/inner.txt", "nul%00.txt"}, got
    assert (fat_drive / "names" / "A.txt").read_bytes() == b"upper\n"
    assert (fat_drive / "names" / "a~2.txt").read_bytes() == b"lower\n"
    note = next(line for line in ran.said if "saved under a safe name" in line)
    assert "and" in note and ran.stderr.count("differs only by case") >= 1, ran.stderr


def test_an_ssh_folder_with_case_twins_onto_a_fat_drive(sshd, fat_drive, ferry_home):
    """Over SSH the small files come as one tar stream: unpacked on a disk that folds case, the twins would land
    on one name; they arrive apart, each checked against the server's SHA-256."""
    import time

    remote = sshd.home / f"twins-{time.monotonic_ns()}"
    remote.mkdir()
    bodies = {"A.txt": b"upper\n", "a.txt": b"lower\n", "what?.txt": b"q\n", "plain.fq": b"@r\nACGT\n"}
    for name, body in bodies.items():
        (remote / name).write_bytes(body)
    sshd.give(remote)
    ran = ferry("copy", sshd.url(str(remote)), f"{fat_drive}/", *sshd.args(), "--retries", "0", home=ferry_home)
    assert ran.returncode == 0, ran.stderr
    got = {name: (fat_drive / remote.name / name).read_bytes() for name in files_below(fat_drive / remote.name)}
    assert got == {"A.txt": b"upper\n", "a~2.txt": b"lower\n", "what%3F.txt": b"q\n", "plain.fq": b"@r\nACGT\n"}
