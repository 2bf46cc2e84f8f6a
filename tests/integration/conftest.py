"""Real servers for the integration tests: started once per session on 127.0.0.1."""

from __future__ import annotations

import getpass
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.nginx import Nginx

MiB = 1024 * 1024
BIG = 200 * MiB


def require(program: str) -> str:
    """A missing server fails the suite (never a skip): CI must install it."""
    path = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    if not path:
        pytest.fail(f"{program} is not installed; run tests/system-deps.sh (as root) or install it.", pytrace=False)
    return path


@dataclass
class DataFile:
    name: str
    path: Path
    sha256: str
    size: int


def write_random(path: Path, size: int, seed: int) -> str:
    """Deterministic random content; returns its sha256."""
    rng = random.Random(seed)
    digest = hashlib.sha256()
    with open(path, "wb") as fh:
        for offset in range(0, size, 8 * MiB):
            chunk = rng.randbytes(min(8 * MiB, size - offset))
            fh.write(chunk)
            digest.update(chunk)
    return digest.hexdigest()


@pytest.fixture(scope="session")
def nginx(tmp_path_factory):
    require("nginx")
    require("openssl")
    root = tmp_path_factory.mktemp("nginx")
    if os.geteuid() == 0:
        os.chmod(root, 0o755)
    server = Nginx(root / "prefix", root / "data").start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def apache(tmp_path_factory):
    """Apache httpd (Debian's apache2 binary, its config in a temporary folder)."""
    from tests.servers.apache import Apache

    require("apache2")
    root = tmp_path_factory.mktemp("apache")
    os.chmod(root, 0o755)
    server = Apache(root / "server", root / "data").start()
    os.chmod(server.data, 0o755)
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@contextmanager
def ftp_server_started(tmp_path_factory, kind: str, folder: str, **settings):
    """A vsftpd or ProFTPD (``kind``) in a fresh folder named ``folder``, stopped on leaving; ``settings`` go to
    its class (``tls``, ``max_per_ip``, ``idle_seconds``). A missing server fails the suite."""
    from tests.servers.ftp import Proftpd, Vsftpd, proftpd_binary

    if kind == "vsftpd":
        require("vsftpd")
    else:
        try:
            proftpd_binary()
        except FileNotFoundError:
            pytest.fail("ProFTPD with mod_tls is not installed; run tests/system-deps.sh as root (it unpacks "
                        "proftpd-core and proftpd-mod-crypto).", pytrace=False)
    root = tmp_path_factory.mktemp(folder)
    os.chmod(root, 0o755)
    server = (Vsftpd if kind == "vsftpd" else Proftpd)(root / "server", **settings).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def vsftpd(tmp_path_factory):
    """A stock vsftpd (Debian's package): anonymous area and a password user, protocol log on."""
    with ftp_server_started(tmp_path_factory, "vsftpd", "vsftpd") as server:
        yield server


@pytest.fixture(scope="session")
def proftpd(tmp_path_factory):
    """ProFTPD (Debian's build, unpacked by tests/system-deps.sh beside vsftpd): MLSD, HASH, anonymous area and a
    password user."""
    with ftp_server_started(tmp_path_factory, "proftpd", "proftpd") as server:
        yield server


@pytest.fixture(params=["vsftpd", "proftpd"])
def ftp_server(request):
    """Each FTP server a researcher meets, in turn."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def vsftpd_tls(tmp_path_factory):
    """The stock vsftpd with explicit FTPS required (AUTH TLS, PROT P, TLS session reuse), its own CA."""
    with ftp_server_started(tmp_path_factory, "vsftpd", "vsftpd-tls", tls=True) as server:
        yield server


@pytest.fixture(scope="session")
def proftpd_tls(tmp_path_factory):
    """ProFTPD with mod_tls and TLSRequired on, its own CA."""
    with ftp_server_started(tmp_path_factory, "proftpd", "proftpd-tls", tls=True) as server:
        yield server


@pytest.fixture(params=["vsftpd_tls", "proftpd_tls"])
def ftps_server(request):
    """Each FTP server with explicit FTPS required, in turn."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def lighttpd(tmp_path_factory):
    """lighttpd with directory listings (dir-listing), its config in a temporary folder."""
    from tests.servers.lighttpd import Lighttpd

    require("lighttpd")
    root = tmp_path_factory.mktemp("lighttpd")
    os.chmod(root, 0o755)
    server = Lighttpd(root / "server", root / "data").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def vsftpd_limited(tmp_path_factory):
    """The same vsftpd with at most 3 connections per client address (a 421 past that)."""
    with ftp_server_started(tmp_path_factory, "vsftpd", "vsftpd-limited", max_per_ip=3) as server:
        yield server


@pytest.fixture(scope="session")
def big_file(nginx) -> DataFile:
    """200 MiB, with a published big.bin.sha256 sidecar."""
    path = nginx.data / "big.bin"
    digest = write_random(path, BIG, seed=1)
    (nginx.data / "big.bin.sha256").write_text(f"{digest}  big.bin\n")
    return DataFile("big.bin", path, digest, BIG)


@pytest.fixture(scope="session")
def plain_file(nginx) -> DataFile:
    """48 MiB without any sidecar."""
    path = nginx.data / "plain.bin"
    digest = write_random(path, 48 * MiB, seed=2)
    return DataFile("plain.bin", path, digest, 48 * MiB)


def tree_digests(root: Path) -> dict[str, str]:
    """Every file below ``root``: its path relative to ``root`` → its sha256 (two trees compare as dicts)."""
    return {p.relative_to(root).as_posix(): sha256_of(p) for p in sorted(root.rglob("*")) if p.is_file()}


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(4 * MiB):
            h.update(block)
    return h.hexdigest()


def labferry(*args: str, env_home: Path, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    env = dict(kw.pop("env", os.environ), LABFERRY_HOME=str(env_home))
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, **kw)


def kill_after_progress(proc: subprocess.Popen, state: Path, min_bytes: int, timeout: float = 60) -> int:
    """SIGKILL ``proc`` once its resume record shows ``min_bytes`` done; returns the bytes recorded."""
    import json
    import signal
    import time

    done, deadline = 0, time.monotonic() + timeout
    while time.monotonic() < deadline and done < min_bytes:
        time.sleep(0.2)
        try:
            done = sum(e - s for s, e in json.loads(state.read_text())["done"])
        except (OSError, ValueError):
            pass
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return done


def popen_labferry(*args: str, env_home: Path, env: dict | None = None) -> subprocess.Popen:
    """A Ferry process the test may stop with SIGINT: Ctrl-C's default handling even when the suite runs as a
    shell's background job, whose children inherit SIGINT ignored (a seed then never stopped, and a copy meant to
    be interrupted ran to its end). ``env``: more variables for it."""
    env = dict(os.environ, **(env or {}), LABFERRY_HOME=str(env_home))
    return subprocess.Popen([sys.executable, "-m", "app", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    from tests.servers.sshd import Sshd

    require("sshd")
    require("ssh")
    require("ssh-keygen")
    root = tmp_path_factory.mktemp("sshd")
    server = Sshd(root).start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd_sftp_only(tmp_path_factory, sshd):
    from tests.servers.sshd import Sshd

    root = tmp_path_factory.mktemp("sshd-sftp-only")
    server = Sshd(root, sftp_only=True, user=sshd.user, client_key=sshd.key).start()
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def remote_big(sshd) -> DataFile:
    """200 MiB in the SSH test user's home."""
    path = sshd.home / "big.bin"
    digest = write_random(path, BIG, seed=50)
    sshd.give(path)
    return DataFile("big.bin", path, digest, BIG)


@pytest.fixture(scope="session")
def gridftp(tmp_path_factory):
    from tests.servers.gridftp import GridftpServer

    require("globus-gridftp-server")
    require("globus-url-copy")
    root = tmp_path_factory.mktemp("gridftp")
    server = GridftpServer(root).start()
    server.give(server.data)
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def gridftp_peer(tmp_path_factory, gridftp):
    """A second server, for server-to-server (third-party) transfers."""
    from tests.servers.gridftp import GridftpServer

    root = tmp_path_factory.mktemp("gridftp-peer")
    server = GridftpServer(root).start()
    server.give(server.data)
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def grid_big(gridftp) -> DataFile:
    """200 MiB on the GridFTP server."""
    path = gridftp.data / "big.bin"
    digest = write_random(path, BIG, seed=70)
    gridftp.give(path)
    return DataFile("big.bin", path, digest, BIG)


@pytest.fixture(scope="session")
def secret_service(tmp_path_factory):
    """A real OS keyring: gnome-keyring's Secret Service on a private D-Bus session (``.env`` reaches it)."""
    from tests.servers.secret_service import SecretService

    require("dbus-daemon")
    require("gnome-keyring-daemon")
    service = SecretService(tmp_path_factory.mktemp("secret-service")).start()
    yield service
    service.stop()


# -- Ferry on a DTN: an agent behind a real sshd, with a data folder of its own ---------------------------------

class Dtn:
    def __init__(self, sshd, home: Path, command: Path) -> None:
        self.sshd, self.home, self.command = sshd, home, command

    def agent_pid(self) -> int | None:
        pid = self.home / "agent" / "agent.pid"
        return int(pid.read_text()) if pid.exists() else None


@pytest.fixture
def dtn(tmp_path_factory, ferry_home):
    """An sshd for this user (the agent runs under the user's own account, as on a DTN), a DTN data folder,
    the command that starts Ferry there, and the site "dtn" in the laptop's data folder."""
    from app.sites import Site, SiteBook
    from app.store import Store
    from tests.servers.agent import ferry_command
    from tests.servers.sshd import Sshd

    root = tmp_path_factory.mktemp("dtn")
    os.chmod(root, 0o755)
    server = Sshd(root / "sshd", user=getpass.getuser()).start()
    home = root / "dtn-home"
    command = ferry_command(root / "ferry-on-dtn", home)
    with Store() as store:
        SiteBook(store).save(Site("dtn", "sftp", "127.0.0.1", server.port, server.user, str(root), "auto",
                                  str(server.key), {"known_hosts": str(server.known_hosts)}))
    dtn = Dtn(server, home, command)
    yield dtn
    pid = dtn.agent_pid()
    if pid:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    server.stop()


@pytest.fixture
def collab(tmp_path_factory, dtn):
    """The collaborator's sshd, saved as site "collab" in the DTN's site book (the far side is as the DTN sees
    it), and its folder for uploads."""
    from app.sites import Site, SiteBook
    from app.store import Store
    from tests.servers.sshd import Sshd

    root = tmp_path_factory.mktemp("collab")
    server = Sshd(root / "sshd", user=getpass.getuser()).start()
    inbox = root / "inbox"
    inbox.mkdir()
    with Store(dtn.home / "ferry.sqlite3") as store:
        SiteBook(store).save(Site("collab", "sftp", "127.0.0.1", server.port, server.user, str(inbox), "auto",
                                  str(server.key), {"known_hosts": str(server.known_hosts)}))
    yield inbox
    server.stop()
