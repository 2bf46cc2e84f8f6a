"""A site's password in a real OS keyring: gnome-keyring-daemon's Secret Service on a private D-Bus session
(tests/servers/secret_service.py), as on a researcher's Linux desktop. Saved by ``labferry sites add
--ask-secret``, read back by the keyring's own protocol, used to log in to the test sshd, gone with the site, and
never in Ferry's database."""

from __future__ import annotations

import os
import subprocess
import sys

from .conftest import MiB, sha256_of, write_random


def _run(*args: str, service, home, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``labferry ARGS`` in its own session (no terminal: ``getpass`` reads the standard input)."""
    env = dict(os.environ, LABFERRY_HOME=str(home), **service.env)
    return subprocess.run([sys.executable, "-m", "app", *args], input=stdin, capture_output=True, text=True, env=env,
                          timeout=120, start_new_session=True)


def _stored(service, site: str) -> str | None:
    """What the Secret Service holds for the site, asked by another process through the keyring's protocol."""
    code = f"import keyring; print(keyring.get_password('labferry', 'site:{site}'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env=dict(os.environ, **service.env)).stdout.strip()
    return None if out == "None" else out


def test_a_site_password_is_kept_in_the_secret_service_and_logs_in(secret_service, sshd_sftp_only, tmp_path,
                                                                    ferry_home):
    from tests.servers.sshd import TEST_PASSWORD

    small = sshd_sftp_only.home / "keyring.bin"
    digest = write_random(small, 3 * MiB, seed=91)
    sshd_sftp_only.give(small)
    added = _run("sites", "add", "lab", "--protocol", "sftp", "--host", "127.0.0.1", "--port",
                 str(sshd_sftp_only.port), "--user", sshd_sftp_only.user, "--known-hosts",
                 str(sshd_sftp_only.known_hosts), "--ask-secret", service=secret_service, home=ferry_home,
                 stdin=TEST_PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    assert "secret in the keyring" in added.stdout
    assert _stored(secret_service, "lab") == TEST_PASSWORD
    for path in ferry_home.rglob("*"):  # the database and every file beside it: never the password
        if path.is_file():
            assert TEST_PASSWORD.encode() not in path.read_bytes(), path
    keyrings = list((secret_service.root / "data" / "keyrings").glob("*.keyring"))
    assert keyrings and all(TEST_PASSWORD.encode() not in k.read_bytes() for k in keyrings)  # encrypted there

    copied = _run("copy", f"site:lab{small}", f"{tmp_path}/", "--json", service=secret_service, home=ferry_home)
    assert copied.returncode == 0, copied.stderr
    assert sha256_of(tmp_path / "keyring.bin") == digest
    assert "paramiko" in copied.stderr  # a password login: the secret came from the Secret Service

    removed = _run("sites", "remove", "lab", service=secret_service, home=ferry_home)
    assert removed.returncode == 0, removed.stderr
    assert _stored(secret_service, "lab") is None


def test_a_keyring_that_never_answers_ends_in_a_sentence(secret_service, tmp_path, ferry_home):
    """The Secret Service stopped (SIGSTOP: its bus is there, its answer never comes), as a keyring behind an
    unlock dialog nobody sees: reading a site's secret ends in one sentence, never a hang."""
    import signal

    from app.sites import Site, SiteBook
    from app.store import Store

    with Store() as store:
        SiteBook(store).save(Site("locked", "https", "127.0.0.1", 443, "jdoe", "", "auto", None, {}))
    daemon = secret_service.procs[-1]
    daemon.send_signal(signal.SIGSTOP)
    try:
        env = dict(os.environ, LABFERRY_HOME=str(ferry_home), LABFERRY_KEYRING_WAIT="3", **secret_service.env)
        proc = subprocess.run([sys.executable, "-m", "app", "copy", "site:locked/x.bin", str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=60, start_new_session=True)
    finally:
        daemon.send_signal(signal.SIGCONT)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip() == ("labferry: The OS keyring did not answer within 3 s for site locked's secret. "
                                   "Unlock the keyring (or log in to the desktop session) and try again."), proc.stderr
