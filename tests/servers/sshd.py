"""A real OpenSSH sshd on 127.0.0.1 for tests and benchmarks: own config, host key,
authorized keys, all in a temp folder.

As root it serves an unprivileged user made for the tests (so permission checks mean
something, and password logins can be tried); otherwise it serves the current user.
``sftp_only=True`` starts one that forces ``internal-sftp`` (an SFTP-only account).
"""

from __future__ import annotations

import contextlib
import getpass
import itertools
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from .nginx import free_port, wait_for_port

# one user per pytest-xdist worker and per server: each sets its user's home and ends its user's sessions
TEST_USER = "ferrytest" + os.environ.get("PYTEST_XDIST_WORKER", "").removeprefix("gw")
_users_made = itertools.count()
TEST_PASSWORD = "ferry-test-password"
USERS_LOCK = Path("/run/lock/labferry-tests-users.lock")


@contextlib.contextmanager
def users_locked() -> Iterator[None]:
    """useradd, chpasswd and usermod lock /etc/passwd and /etc/shadow and fail at once when another holds
    them: the workers take turns."""
    import fcntl

    USERS_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with USERS_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_test_user(home: Path) -> str:
    """The user the tests log in as (created when running as root). Each server gets a user of its own: a
    second server in the same worker (another folder's session fixture) must not move the first one's "~"."""
    if os.geteuid() != 0:
        return getpass.getuser()
    made = next(_users_made)
    user = TEST_USER if made == 0 else f"{TEST_USER}s{made}"
    with users_locked():
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", user], check=True)
        subprocess.run(["chpasswd"], input=f"{user}:{TEST_PASSWORD}", text=True, check=True)
        subprocess.run(["pkill", "-u", user], capture_output=True)  # sessions left by an earlier run
        time.sleep(0.2)
        # its home, and /bin/sh again: an earlier run's login-shell case may have left it bash or tcsh
        subprocess.run(["usermod", "--home", str(home), "--shell", "/bin/sh", user], check=True, capture_output=True)
    home.mkdir(parents=True, exist_ok=True)
    shutil.chown(home, user, user)
    return user


def keygen(path: Path) -> Path:
    if path.exists():
        return path
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path


class Sshd:
    def __init__(self, root: Path, *, listen: str = "127.0.0.1", sftp_only: bool = False, user: str | None = None,
                 host_key: Path | None = None, client_key: Path | None = None, max_startups: str | None = None,
                 env_path: str | None = None, subsystem: str = "internal-sftp") -> None:
        self.root, self.listen, self.sftp_only, self.max_startups = root, listen, sftp_only, max_startups
        #: how sshd serves SFTP: in-process (internal-sftp), or Debian's sftp-server, which the login's shell starts
        self.subsystem = subsystem
        self.env_path = env_path  # the PATH its sessions get (sshd's SetEnv): a server without a tool, or a faulty one
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)
        self.home = root / "home"
        self.user = user or ensure_test_user(self.home)
        self.home.mkdir(exist_ok=True)
        self.host_key = host_key or keygen(root / "host_ed25519")
        self.key = client_key or keygen(root / "client_ed25519")
        self.port = free_port()
        keys = root / "authorized_keys"
        keys.mkdir(exist_ok=True)
        os.chmod(keys, 0o755)
        (keys / self.user).write_text(Path(str(self.key) + ".pub").read_text())
        os.chmod(keys / self.user, 0o644)
        host_pub = Path(str(self.host_key) + ".pub").read_text().split()
        self.host_key_line = f"[{listen}]:{self.port} {host_pub[0]} {host_pub[1]}\n"
        self.known_hosts = root / "known_hosts"
        self.known_hosts.write_text(self.host_key_line)
        self.proc: subprocess.Popen | None = None

    def config(self) -> str:
        lines = [
            f"Port {self.port}", f"ListenAddress {self.listen}", f"HostKey {self.host_key}",
            f"PidFile {self.root}/sshd.pid", f"AuthorizedKeysFile {self.root}/authorized_keys/%u",
            "StrictModes no", "UsePAM no", "PasswordAuthentication yes", "KbdInteractiveAuthentication no",
            "PermitRootLogin yes", f"Subsystem sftp {self.subsystem}", "LogLevel ERROR", "PrintMotd no",
        ]
        if self.max_startups:  # else sshd's default, 10:30:100, as on most servers
            lines.append(f"MaxStartups {self.max_startups}")
        if self.sftp_only:
            lines.append("ForceCommand internal-sftp")
        if self.env_path:
            lines.append(f"SetEnv PATH={self.env_path}")
        return "\n".join(lines) + "\n"

    def start(self, argv_prefix: tuple[str, ...] = ()) -> Sshd:
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        conf = self.root / "sshd_config"
        conf.write_text(self.config())
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        self.proc = subprocess.Popen([*argv_prefix, sshd, "-D", "-e", "-f", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if argv_prefix:
            time.sleep(0.5)
        else:
            wait_for_port(self.port, self.listen)
        if self.proc.poll() is not None:
            raise RuntimeError(f"sshd did not start: {self.proc.stderr.read().decode()}")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None

    def url(self, path: str, scheme: str = "sftp") -> str:
        from urllib.parse import quote

        return f"{scheme}://{self.user}@{self.listen}:{self.port}{quote(path)}"

    def args(self) -> list[str]:
        return ["--identity", str(self.key), "--known-hosts", str(self.known_hosts)]

    def login_shell(self, shell: str, startup: dict[str, str]) -> None:
        """The test user's login shell (as root) and its start-up files in its home (name → text), as an HPC
        account has them: a ``.bashrc`` that prints, a csh ``.cshrc``."""
        subprocess.run(["usermod", "--shell", shutil.which(shell) or shell, self.user], check=True,
                       capture_output=True)
        for name, text in startup.items():
            (self.home / name).write_text(text)
        self.give(self.home)

    def give(self, path: Path) -> None:
        """Hand a file or folder to the test user (as root), so the server may read or write it."""
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{self.user}:", str(path)], check=True)
