"""The servers the conformance suite runs every case against, behind one small interface.

Each ``Target`` is one way a researcher reaches data: HTTPS (nginx), SFTP and SCP (OpenSSH), an SFTP-only
account (no shell), GridFTP over ftp:// (globus-gridftp-server), BitTorrent (a ``labferry seed``). A case asks
a target to put files where its server serves them, for the URL of a path, and for the CLI arguments that
reach it (a CA, a key, known_hosts). Every case works in a folder of its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
import uuid
from pathlib import Path

from tests.integration.conftest import sha256_of


class Target:
    name = ""
    uploads = True
    folders = True
    #: Ferry's --limit-rate slows its transfers from this server, so a case can act while one is under way
    capped = True

    def __init__(self, server) -> None:
        self.server = server
        self.root = self.data_dir() / f"conf-{uuid.uuid4().hex[:10]}"
        self.root.mkdir(parents=True)
        self.hand_over(self.root)

    # -- what each server type fills in --------------------------------------------------------------
    def data_dir(self) -> Path:
        raise NotImplementedError

    def url_of(self, path: Path, folder: bool) -> str:
        raise NotImplementedError

    def args(self) -> list[str]:
        return []

    def hand_over(self, path: Path) -> None:
        """Let the server's account read and write ``path`` (as root the servers run as other users)."""

    # -- what cases use ------------------------------------------------------------------------------
    def url(self, rel: str = "", folder: bool = False) -> str:
        return self.url_of(self.root / rel if rel else self.root, folder)

    def path(self, rel: str) -> Path:
        return self.root / rel

    def put(self, rel: str, data: bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.hand_over(self.root)
        return path

    def put_file(self, rel: str, source: Path) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, path)
        self.hand_over(self.root)
        return path

    def digest(self, rel: str) -> str:
        return sha256_of(self.root / rel)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def crash(self) -> None:
        """The server and every connection it serves die at once (SIGKILL to the whole tree)."""
        kill_tree(self.server.proc.pid)
        self.server.proc.wait()
        self.server.proc = None

    def start_again(self) -> None:
        self.server.start()

    def cut_connections(self) -> int:
        """Every connection the server holds dies at once while its listener stays: SIGKILL to every process
        below the server's own (its forked sessions; nginx's workers, which its master starts again)."""
        return signal_tree(self.server.proc.pid, signal.SIGKILL, below=True)

    def hold_when(self, part: Path, at: int, timeout: float = 60) -> None:
        """A server Ferry cannot slow: freeze it (SIGSTOP to it and its sessions) once ``part`` holds ``at``
        bytes, so a case acts while the transfer is under way; ``go_on`` thaws it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if part.stat().st_size >= at:
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.001)
        signal_tree(self.server.proc.pid, signal.SIGSTOP)

    def go_on(self) -> None:
        if self.server.proc is not None:
            signal_tree(self.server.proc.pid, signal.SIGCONT)


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it (a server's forked sessions), found through /proc."""
    signal_tree(pid, signal.SIGKILL)


def signal_tree(pid: int, signum: int, *, below: bool = False) -> int:
    """Send ``signum`` to ``pid`` (unless only those ``below`` it) and every process below it, found through
    /proc; returns how many processes got it."""
    order = tree(pid)
    sent = 0
    for victim in order[1:] if below else order:
        try:
            os.kill(victim, signum)
            sent += 1
        except ProcessLookupError:
            pass
    return sent


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it, parents first."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    order, todo = [], [pid]
    while todo:
        current = todo.pop()
        order.append(current)
        todo.extend(children.get(current, []))
    return order


class Https(Target):
    name = "https"
    uploads = False
    folders = True

    def data_dir(self) -> Path:
        return self.server.data

    def url_of(self, path: Path, folder: bool) -> str:
        rel = path.relative_to(self.server.data).as_posix()
        return self.server.url(rel + ("/" if folder else ""))

    def args(self) -> list[str]:
        return ["--ca-file", self.server.ca_file]

    def forbidden_url(self, rel: str) -> str:
        return self.server.url("forbidden/" + (self.root / rel).relative_to(self.server.data).as_posix())

    def wrong_login(self, rel: str, tmp_path: Path) -> tuple[str, list[str]]:
        """An address with a password the server does not accept, and the arguments to go with it."""
        from tests.servers.nginx import LOGIN_USER

        url = self.server.url("login/" + (self.root / rel).relative_to(self.server.data).as_posix())
        return url.replace("https://", f"https://{LOGIN_USER}:not-it@"), self.args()


class Sftp(Target):
    name = "sftp"
    scheme = "sftp"

    def data_dir(self) -> Path:
        return self.server.home

    def url_of(self, path: Path, folder: bool) -> str:
        return self.server.url(str(path) + ("/" if folder else ""), scheme=self.scheme)

    def args(self) -> list[str]:
        return self.server.args()

    def hand_over(self, path: Path) -> None:
        self.server.give(path)


    def wrong_login(self, rel: str, tmp_path: Path) -> tuple[str, list[str]]:
        """An address with a key the server does not accept, and the arguments to go with it."""
        from tests.servers.sshd import keygen

        stranger = keygen(tmp_path / "stranger")
        return self.url(rel), ["--identity", str(stranger), "--known-hosts", str(self.server.known_hosts)]


class Scp(Sftp):
    name = "scp"
    scheme = "scp"


class SftpOnly(Sftp):
    name = "sftp-only"


class Gridftp(Target):
    name = "gridftp"
    capped = False  # globus-url-copy takes no rate cap: cases freeze the server instead (hold_when)

    def data_dir(self) -> Path:
        return self.server.data

    def url_of(self, path: Path, folder: bool) -> str:
        return self.server.url(path, folder=folder)

    def args(self) -> list[str]:
        return ["--backend", "gridftp"]  # a GridFTP server over ftp://, which is the native FTP backend's otherwise

    def hand_over(self, path: Path) -> None:
        self.server.give(path)
        if os.geteuid() == 0:
            for found in path.rglob("*"):
                os.chmod(found, 0o777 if found.is_dir() else 0o666)


class Ftp(Target):
    """A stock vsftpd, its password user's login folder."""

    name = "ftp"
    uploads = True
    folders = True

    def data_dir(self) -> Path:
        return self.server.user_root

    def url_of(self, path: Path, folder: bool) -> str:
        rel = path.relative_to(self.server.user_root).as_posix()
        return self.server.url(rel + ("/" if folder else ""), user=True)

    def hand_over(self, path: Path) -> None:
        self.server.give(path)

    def wrong_login(self, rel: str, tmp_path: Path) -> tuple[str, list[str]]:
        return self.url(rel).replace(f":{self.server.password}@", ":not-it@"), []


class Proftpd(Ftp):
    """ProFTPD, its password user kept in the login folder (``DefaultRoot ~``)."""

    name = "proftpd"


class Ftps(Ftp):
    """vsftpd with explicit FTPS required (AUTH TLS, PROT P, data connections resuming the TLS session)."""

    name = "ftps"

    def args(self) -> list[str]:
        return ["--ca-file", self.server.ca_file]

    def wrong_login(self, rel: str, tmp_path: Path) -> tuple[str, list[str]]:
        return super().wrong_login(rel, tmp_path)[0], self.args()


class Torrent(Target):
    """BitTorrent: the case's files are seeded by a real ``labferry seed`` once a case asks for their URL."""

    name = "torrent"
    uploads = False

    def __init__(self, server) -> None:
        self.seeds: list = []
        super().__init__(server)

    def data_dir(self) -> Path:
        return self.server  # a folder of the suite's own

    def url_of(self, path: Path, folder: bool) -> str:
        from tests.integration.conftest import labferry
        from tests.integration.test_torrent import seeding

        torrent = path.with_name(path.name + ".torrent")
        made = labferry("torrent", "create", str(path), "-o", str(torrent), env_home=self.root)
        assert made.returncode == 0, made.stderr
        holder = seeding(torrent, path.parent, self.root / f"seed-home-{len(self.seeds)}")
        self.seeds.append((holder, holder.__enter__()))
        return str(torrent)

    def args(self) -> list[str]:
        if not self.seeds:
            return []
        return ["--peer", f"127.0.0.1:{self.seeds[-1][1].port}", "--stall-timeout", "20"]

    def cleanup(self) -> None:
        for holder, _ in self.seeds:
            holder.__exit__(None, None, None)
        super().cleanup()
