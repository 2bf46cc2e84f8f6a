"""What Ferry keeps for itself, where a second user or a second process is the adversary: its data folder on a
shared workstation or DTN (every job's addresses), and a database that another program damaged or holds."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from tests.servers.holder import hold_database

from . import conftest
from .conftest import ferry


def _modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)) or ".": stat.S_IMODE(os.lstat(p).st_mode) for p in [folder, *folder.rglob("*")]}


def _with_umask(mask: int, *args: str, home: Path) -> conftest.Ran:
    old = os.umask(mask)
    try:
        return ferry(*args, home=home)
    finally:
        os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o002], ids=["umask-022", "umask-002"])
def test_a_fresh_data_folder_is_the_users_alone(tmp_path, mask):
    home = tmp_path / "ferry-home"
    ran = _with_umask(mask, "history", home=home)
    assert ran.returncode == 0, ran.stderr
    modes = _modes(home)
    assert {"ferry.sqlite3", "ferry.log"} <= set(modes), modes
    assert modes["."] == 0o700, modes
    assert all(mode & 0o077 == 0 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}
    assert not ran.said, ran.said  # nothing to tighten: nothing to say


@pytest.mark.parametrize("mask", [0o022, 0o002], ids=["umask-022", "umask-002"])
def test_an_old_wider_data_folder_is_tightened_with_a_note(tmp_path, mask):
    home = tmp_path / "ferry-home"
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)
    (home / "tls").mkdir()
    os.chmod(home / "tls", 0o775)
    for name, mode in (("ferry.log", 0o644), ("tls/ca.pem", 0o664)):
        (home / name).write_text("x\n")
        os.chmod(home / name, mode)
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not Ferry's\n")
    os.chmod(outside, 0o644)
    (home / "link").symlink_to(outside)
    ran = _with_umask(mask, "history", home=home)
    assert ran.returncode == 0, ran.stderr
    modes = _modes(home)
    assert all(mode & 0o077 == 0 for name, mode in modes.items() if name != "link"), {
        k: oct(v) for k, v in modes.items()}
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644  # a link is never followed
    assert [line for line in ran.said if "open to other users" in line and str(home) in line], ran.said
    again = ferry("history", home=home)
    assert not [line for line in again.said if "open to other users" in line], again.said


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def _truncated(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE filler (x BLOB)")
        conn.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(4000),) for _ in range(50)])
    os.truncate(path, 3000)


def _empty_pages(path: Path) -> None:
    """SQLite's header, then zeros: a disk that lost its blocks."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE filler (x BLOB)")
        conn.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(4000),) for _ in range(50)])
    with open(path, "r+b") as fh:
        fh.seek(4096)
        fh.write(bytes(8192))


@pytest.mark.parametrize("damage", [_garbage, _truncated, _empty_pages], ids=["garbage", "truncated", "zeroed"])
def test_a_damaged_database_is_moved_aside_and_a_new_one_made(tmp_path, damage):
    home = tmp_path / "ferry-home"
    home.mkdir(mode=0o700)
    damage(home / "ferry.sqlite3")
    kept = (home / "ferry.sqlite3").read_bytes()
    ran = ferry("history", home=home)
    assert ran.returncode == 0, ran.stderr
    assert "No transfers yet." in ran.stdout
    aside = [p for p in home.iterdir() if p.name.startswith("ferry.sqlite3.damaged-")]
    assert len(aside) == 1 and aside[0].read_bytes() == kept, list(home.iterdir())
    said = [line for line in ran.said if "was damaged" in line]
    assert len(said) == 1 and str(aside[0]) in said[0] and "labferry doctor" in said[0], ran.said
    doctor = ferry("doctor", home=home)
    assert doctor.returncode == 0, doctor.stderr
    assert str(aside[0]) in doctor.stdout and "ok" in doctor.stdout.lower(), doctor.stdout
    assert stat.S_IMODE(aside[0].stat().st_mode) == 0o600


def test_a_database_held_by_another_process_is_waited_for_then_given_up_in_a_sentence(tmp_path):
    home = tmp_path / "ferry-home"
    assert ferry("history", home=home).returncode == 0
    holder = hold_database(home / "ferry.sqlite3", 60)
    try:
        began = time.monotonic()
        ran = ferry("history", home=home, env=dict(os.environ, LABFERRY_DB_WAIT="3"))
        took = time.monotonic() - began
    finally:
        holder.kill()
        holder.wait()
    assert ran.returncode == 5, (ran.returncode, ran.stderr)
    assert [line for line in ran.said if "waiting" in line.lower() and "ferry.sqlite3" in line], ran.said
    final = ran.said[-1]
    assert "another program" in final and "LABFERRY_HOME" in final, ran.said
    assert 2.5 < took < 20, took
    assert (home / "ferry.sqlite3").exists() and not list(home.glob("*.damaged-*"))


def test_a_database_held_for_a_moment_is_waited_for(tmp_path):
    home = tmp_path / "ferry-home"
    assert ferry("history", home=home).returncode == 0
    holder = hold_database(home / "ferry.sqlite3", 2)
    try:
        ran = ferry("history", home=home, env=dict(os.environ, LABFERRY_DB_WAIT="30"))
    finally:
        holder.wait(30)
    assert ran.returncode == 0, ran.stderr
    assert "No transfers yet." in ran.stdout
