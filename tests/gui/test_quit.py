"""Quitting the window while a transfer runs: the program ends at once and in silence (the transfer stays
queued, its part file kept for the next start), with no Qt or asyncio complaint on the terminal — once it
printed "QBasicTimer can only be used with threads started with QThread" and "Unknown child process"."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from app.store import Store

ROOT = Path(__file__).resolve().parents[2]
#: what the offscreen platform itself says about any window; everything else on stderr is a complaint
PLATFORM_NOISE = ("This plugin does not support",)


def test_quit_during_an_ssh_download_ends_quietly_and_keeps_the_part_file(sshd, ferry_home, tmp_path):
    big = sshd.home / f"quit-{time.monotonic_ns()}.bin"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # sparse: a gigabyte the download cannot finish in the seconds before Quit
    sshd.give(big)
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(sshd.known_hosts, home / ".ssh" / "known_hosts")  # ssh's own defaults find the server and key
    shutil.copy(sshd.key, home / ".ssh" / "id_ed25519")
    os.chmod(home / ".ssh" / "id_ed25519", 0o600)
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    with Store() as store:
        store.settings.set("download_folder", str(downloads))
        store.settings.set("limit_rate", str(50 << 20))  # Settings' cap: the copy is still running at Quit
    env = dict(os.environ, HOME=str(home), QT_QPA_PLATFORM="offscreen")
    began = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "app", "gui", "--quit-after", "3",
                           f"sftp://{sshd.user}@127.0.0.1:{sshd.port}{big}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    complaints = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith(PLATFORM_NOISE)]
    assert proc.returncode == 0 and not complaints, proc.stderr[-3000:]
    assert time.monotonic() - began < 30, "quitting waited for the transfer"
    assert (downloads / f"{big.name}.part").exists() and not (downloads / big.name).exists()
