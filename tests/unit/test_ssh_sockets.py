"""OpenSSH control-socket folders: a job's folder survives the jobs that start beside it; leftovers do not."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from backends.core.errors import NotFound, Transient
from backends.ssh.address import parse_target
from backends.ssh.openssh import _remove_socket_folder, _socket_folder, ssh_error
from backends.ssh.options import SshOptions


def test_folders_made_by_this_process_survive_the_next_one_and_leftovers_go():
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text()) if Path("/proc/sys/kernel/pid_max").exists() \
        else 1 << 22
    temp = Path(tempfile.gettempdir())
    dead = temp / f"ferry-ssh-{pid_max + 7}-leftover"  # no process can have that id
    reused = temp / f"ferry-ssh-{os.getpid()}-leftover"  # an earlier process that had this one's id
    for old in (dead, reused):
        old.mkdir()
        (old / "m1").write_text("")
    first = _socket_folder()
    (first / "m1").write_text("")  # stands for a live master's socket
    second = _socket_folder()
    try:
        assert first.is_dir() and (first / "m1").exists() and second.is_dir() and first != second
        assert not dead.exists() and not reused.exists()
        _remove_socket_folder(first)
        assert not first.exists()
    finally:
        for folder in (first, second):
            _remove_socket_folder(folder)


def test_a_failing_local_control_socket_is_not_called_a_missing_remote_file():
    target = parse_target("sftp://alice@example.org/data/run1.bam", SshOptions())
    error = ssh_error("unix_listener: cannot bind to path /tmp/ferry-ssh-1-x/m3.abc: No such file or directory",
                      target)
    assert isinstance(error, Transient) and not isinstance(error, NotFound)
    assert "local SSH control socket" in str(error) and tempfile.gettempdir() in str(error)
    mux = ssh_error("Control socket connect(/tmp/ferry-ssh-1-x/m3): No such file or directory", target)
    assert isinstance(mux, Transient)
    assert isinstance(ssh_error("scp: /data/run1.bam: No such file or directory", target), NotFound)


def test_jobs_to_one_server_share_its_handshake_slots(monkeypatch):
    # sshd's MaxStartups drops unauthenticated connections past ten, whichever job opened them
    from backends.ssh import openssh

    running, peak = set(), []

    async def start(self):
        running.add(self)
        peak.append(len(running))
        await asyncio.sleep(0.02)
        running.discard(self)

    monkeypatch.setattr(openssh.Master, "start", start)

    async def main():
        options = SshOptions(max_handshakes=4)
        jobs = [openssh.OpenSsh(parse_target("sftp://alice@example.org/x", options), options, client="ssh")
                for _ in range(3)]
        other = openssh.OpenSsh(parse_target("sftp://alice@example.net/x", options), options, client="ssh")
        for ssh in (*jobs, other):
            ssh.handshake_done(), ssh.handshake_done()  # no control login, no probe: each job alone may use 4
        masters = await asyncio.gather(*(ssh._connect() for ssh in jobs for _ in range(4)))
        assert len(masters) == 12 and max(peak) == 4
        peak.clear()
        await asyncio.gather(*(ssh._connect() for ssh in (jobs[0], other) for _ in range(4)))
        assert max(peak) == 8  # another server has slots of its own
        for ssh in (*jobs, other):
            await ssh.cleanup()

    asyncio.run(main())
