"""Ferry on a DTN: a real agent process reached over a real sshd, with a data folder of its own (the DTN's)
apart from the laptop's. Jobs submitted with ``--on site:NAME`` run on the agent and survive the laptop's
processes and the agent's own SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from tests.integration.conftest import Dtn, MiB, labferry, sha256_of, write_random


def _on(dtn: Dtn, *args: str, home: Path, timeout: float = 60):
    return labferry(*args, "--on", "site:dtn", "--agent-command", str(dtn.command), env_home=home, timeout=timeout)


def _queue(dtn: Dtn, home: Path) -> list[dict]:
    proc = _on(dtn, "queue", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def _wait_done(dtn: Dtn, home: Path, job: int, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = next(j for j in _queue(dtn, home) if j["id"] == job)
        if found["state"] in ("done", "failed", "cancelled"):
            return found
        time.sleep(0.5)
    raise AssertionError(f"job {job} still {found['state']} on the agent: {found}")


def _send(dtn: Dtn, nginx, home: Path, name: str, mib: int, rate: str) -> tuple[dict, str, Path]:
    """``copy --on site:dtn`` of a new file on nginx into a new folder of the DTN: (the job, its digest, the
    folder)."""
    digest = write_random(nginx.data / name, mib * MiB, seed=sum(name.encode()))
    dest = dtn.home.parent / name.removesuffix(".bin")
    dest.mkdir()
    proc = _on(dtn, "copy", nginx.url(name), f"{dest}/", "--ca-file", nginx.ca_file, "--limit-rate", rate,
               "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), digest, dest


def test_a_job_sent_to_the_agent_goes_on_without_the_laptop(dtn, nginx, ferry_home):
    job, digest, dest = _send(dtn, nginx, ferry_home, "agent-source.bin", 24, "8M")
    assert job["state"] in ("queued", "running")
    assert dtn.agent_pid() is not None  # started on demand by the first --stdio
    # nothing of the laptop's runs now (the copy --on process has exited): the agent alone carries the job
    done = _wait_done(dtn, ferry_home, job["id"])
    assert done["state"] == "done", done["error"]
    assert sha256_of(dest / "agent-source.bin") == digest


def test_an_agent_killed_mid_job_resumes_it_when_reached_again(dtn, nginx, ferry_home):
    sent, digest, dest = _send(dtn, nginx, ferry_home, "agent-resume.bin", 48, "8M")
    job = sent["id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # well into the file, past a record of what is here
        running = next(j for j in _queue(dtn, ferry_home) if j["id"] == job)
        if running["bytes_done"] > 20 * MiB:
            break
        time.sleep(0.3)
    assert running["bytes_done"] > 20 * MiB, running
    first = dtn.agent_pid()
    os.kill(first, signal.SIGKILL)
    time.sleep(0.5)
    done = _wait_done(dtn, ferry_home, job)  # this --stdio starts a new agent, which resumes the job
    assert dtn.agent_pid() not in (None, first)
    assert done["state"] == "done", done["error"]
    assert sha256_of(dest / "agent-resume.bin") == digest
    assert done["result"] and done["result"].get("resumed_from", 0) > 0


def test_pause_resume_and_cancel_a_job_on_the_agent(dtn, nginx, ferry_home):
    job = _send(dtn, nginx, ferry_home, "agent-pause.bin", 32, "4M")[0]["id"]
    paused = _on(dtn, "pause", str(job), home=ferry_home)
    assert paused.returncode == 0 and "paused" in paused.stdout, paused.stderr
    assert _on(dtn, "resume", str(job), home=ferry_home).returncode == 0
    cancelled = _on(dtn, "cancel", str(job), home=ferry_home)
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout, cancelled.stdout + cancelled.stderr


def test_no_ferry_on_the_host_is_said_in_one_sentence(dtn, ferry_home):
    proc = labferry("queue", "--on", "site:dtn", "--agent-command", "/nonexistent/labferry", env_home=ferry_home)
    assert proc.returncode != 0
    assert "There is no Ferry on 127.0.0.1" in proc.stderr and "Traceback" not in proc.stderr


def test_a_socket_others_may_open_is_refused(dtn, ferry_home):
    assert _on(dtn, "queue", home=ferry_home).returncode == 0  # the agent runs, its socket 0600 in a 0700 folder
    socket_file = dtn.home / "agent" / "agent.sock"
    assert oct(socket_file.stat().st_mode & 0o777) == "0o600"
    assert oct(socket_file.parent.stat().st_mode & 0o777) == "0o700"
    socket_file.chmod(0o666)
    proc = _on(dtn, "queue", home=ferry_home)
    assert proc.returncode != 0
    assert "may be opened by other users" in proc.stderr and "Traceback" not in proc.stderr


def test_an_agent_of_another_version_is_refused_naming_both(dtn, ferry_home):
    """A real agent process that says it is another Ferry (its version string changed before it starts, as an
    older install on the DTN would say)."""
    import subprocess

    from app import __version__

    code = ("import sys, app; app.__version__ = '0.0.1'; sys.argv = ['labferry', 'agent', '--serve', "
            "'--idle-minutes', '1']; from app.cli import console; console()")
    older = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, LABFERRY_HOME=str(dtn.home)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not (dtn.home / "agent" / "agent.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        proc = _on(dtn, "queue", home=ferry_home)
        assert proc.returncode != 0
        assert "Ferry 0.0.1" in proc.stderr and f"Ferry {__version__}" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    finally:
        older.kill()
        older.wait()


def test_a_windows_laptop_sends_a_job_and_reads_the_queue(dtn, nginx, ferry_home):
    """The laptop's side of the agent as Windows' Python has it (tests/other_os.py): no ``AF_UNIX``, no pipe
    polled by the event loop, no ControlMaster. It reaches the agent over the SSH login's own stdio."""
    import subprocess

    from tests.integration.test_other_os import ROOT

    digest = write_random(nginx.data / "agent-windows.bin", 6 * MiB, seed=478)
    dest = dtn.home.parent / "agent-windows"
    dest.mkdir()
    on = ["--on", "site:dtn", "--agent-command", str(dtn.command)]

    def as_windows(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tests.other_os", "windows", *args, *on], cwd=ROOT,
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, LABFERRY_HOME=str(ferry_home)))

    proc = as_windows("copy", nginx.url("agent-windows.bin"), f"{dest}/", "--ca-file", nginx.ca_file, "--json")
    assert proc.returncode == 0, proc.stderr
    job = json.loads(proc.stdout.splitlines()[-1])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        proc = as_windows("queue", "--json")
        assert proc.returncode == 0, proc.stderr
        rows = [json.loads(line) for line in proc.stdout.splitlines()[1:] if line.strip()]
        found = next(r for r in rows if r["id"] == job["id"])
        if found["state"] in ("done", "failed", "cancelled"):
            break
        time.sleep(0.5)
    assert found["state"] == "done", found
    assert sha256_of(dest / "agent-windows.bin") == digest
