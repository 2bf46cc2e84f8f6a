"""Logins whose shell start-up files print, and csh and fish logins, as HPC accounts have them: a real sshd, its
user's login shell bash, tcsh or fish, a ``.bashrc``/``.cshrc``/``config.fish`` that echoes a line even for
non-interactive logins.

Before, a file download failed after retries blaming "the server and the network", a folder with tar's "does not
look like a tar archive", and an upload with "internal error (SFTPError: Garbage packet received)". Now Ferry
goes over SFTP where sshd serves it in-process (``internal-sftp``, which no shell starts), and where sshd starts
``sftp-server`` through the same shell, it says in one sentence what the login printed and what to change."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from tests.servers.sshd import Sshd

from .conftest import ferry, files_below

MiB = 1024 * 1024
SFTP_SERVER = "/usr/lib/openssh/sftp-server"
BASHRC = 'echo "Welcome to the cluster, $USER!"\n'
CSHRC = 'echo "Welcome (csh) to the cluster"\n'


FISH = 'echo "Welcome (fish) to the cluster"\n'
#: where each shell reads its start-up file for a non-interactive login
STARTUP = {"bash": ".bashrc", "tcsh": ".cshrc", "fish": ".config/fish/config.fish"}


@pytest.fixture(scope="module", params=[("bash", BASHRC, SFTP_SERVER), ("bash", BASHRC, "internal-sftp"),
                                        ("tcsh", CSHRC, SFTP_SERVER), ("tcsh", "set quiet = 1\n", SFTP_SERVER),
                                        ("fish", FISH, SFTP_SERVER), ("fish", "set -g quiet 1\n", SFTP_SERVER)],
                ids=["bash-prints", "bash-prints-internal-sftp", "tcsh-prints", "tcsh-quiet", "fish-prints",
                     "fish-quiet"])
def login(request, tmp_path_factory):
    shell, startup, subsystem = request.param
    root = tmp_path_factory.mktemp(f"sshd-{shell}")
    os.chmod(root, 0o755)
    server = Sshd(root, subsystem=subsystem).start()
    (server.home / ".config" / "fish").mkdir(parents=True, exist_ok=True)
    server.login_shell(shell, {STARTUP[shell]: startup})
    server.prints = "echo" in startup
    server.shell_sftp = subsystem != "internal-sftp"
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _says_what_it_printed(login, ran) -> None:
    assert ran.returncode == 3, (ran.returncode, ran.stderr)
    sentence = ran.said[-1]
    assert "prints 'Welcome" in sentence and "internal-sftp" in sentence and "*i*" in sentence, sentence
    assert ran.seconds < 60


def test_a_file_download(login, tmp_path, ferry_home):
    source = login.home / f"reads-{tmp_path.name}.fq"
    source.write_bytes(os.urandom(24 * MiB))
    login.give(source)
    ran = ferry("copy", login.url(str(source)), f"{tmp_path}/", *login.args(), "--retries", "1", home=ferry_home)
    if login.prints and login.shell_sftp:
        _says_what_it_printed(login, ran)
        assert files_below(tmp_path) == {}
        return
    assert ran.returncode == 0, ran.stderr
    assert _sha(tmp_path / source.name) == _sha(source)


def test_a_folder_download(login, tmp_path, ferry_home):
    folder = login.home / f"run-{tmp_path.name}"
    (folder / "qc").mkdir(parents=True)
    for i in range(12):
        (folder / ("qc" if i % 3 else ".") / f"s{i}.txt").write_bytes(os.urandom(2000 + i))
    (folder / "big.bam").write_bytes(os.urandom(9 * MiB))
    login.give(folder)
    ran = ferry("copy", login.url(str(folder)) + "/", f"{tmp_path}/", *login.args(), "--retries", "1",
                home=ferry_home)
    if login.prints and login.shell_sftp:
        _says_what_it_printed(login, ran)
        assert not [p for p in tmp_path.rglob("*") if p.is_file()]
        return
    assert ran.returncode == 0, ran.stderr
    got = {str(p.relative_to(tmp_path / folder.name)): _sha(p) for p in (tmp_path / folder.name).rglob("*")
           if p.is_file()}
    assert got == {str(p.relative_to(folder)): _sha(p) for p in folder.rglob("*") if p.is_file()}


def test_an_upload(login, tmp_path, ferry_home):
    local = tmp_path / "up.bam"
    local.write_bytes(os.urandom(12 * MiB))
    ran = ferry("copy", str(local), login.url(str(login.home)) + "/", *login.args(), "--retries", "1", "--json",
                home=ferry_home)
    if login.prints and login.shell_sftp:
        _says_what_it_printed(login, ran)
        assert not (login.home / "up.bam").exists()
        return
    assert ran.returncode == 0, ran.stderr
    assert _sha(login.home / "up.bam") == _sha(local)
    (login.home / "up.bam").unlink()
