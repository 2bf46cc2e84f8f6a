"""A real globus-gridftp-server on 127.0.0.1 in anonymous mode, for tests and benchmarks.

Runs in the foreground in its own process group (it forks one process per session, so
``kill()`` takes the whole group down, like a crashed server), anonymous logins mapped to
``nobody`` when started as root. ``restart()`` starts it again on the same port, which
is how the tests interrupt a transfer mid-way.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .nginx import free_port, wait_for_port


class GridftpServer:
    def __init__(self, root: Path, *, listen: str = "127.0.0.1", port: int | None = None,
                 argv_prefix: tuple[str, ...] = (), gsi=None, udt: bool = False) -> None:
        """``argv_prefix`` runs the server elsewhere (``wanem exec LINK b --`` in the benchmarks). ``gsi``
        (``tests.servers.gsi.GsiCredentials``): gsiftp:// with those credentials instead of anonymous ftp://;
        ``udt``: the data channel may be UDT (``-allow-udt``)."""
        self.root, self.listen, self.argv_prefix, self.gsi, self.udt = root, listen, argv_prefix, gsi, udt
        self.data = root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.log = root / "gridftp.log"
        self.proc: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        args = [shutil.which("globus-gridftp-server") or "/usr/sbin/globus-gridftp-server",
                *([] if self.gsi else ["-aa"]), "-p", str(self.port), "-control-interface", self.listen,
                "-data-interface", self.listen, "-d", "all" if self.gsi else "error,warn", "-l", str(self.log)]
        if self.udt:  # SETNETSTACK asks for "udt,gsi": both drivers must be on the list
            args += ["-threads", "2", "-allow-udt", "-dc-whitelist", "udt,gsi,tcp"]
        if os.geteuid() == 0 and not self.gsi:
            args += ["-anonymous-user", "nobody"]
        return [*self.argv_prefix, *args]

    def url(self, path: Path | str, *, folder: bool = False) -> str:
        text = str(path)
        scheme = "gsiftp" if self.gsi else "ftp"
        return f"{scheme}://{self.listen}:{self.port}{text}{'/' if folder and not text.endswith('/') else ''}"

    def start(self) -> GridftpServer:
        env = dict(os.environ, **self.gsi.server_env()) if self.gsi else None
        self.proc = subprocess.Popen(self.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True, env=env)
        try:
            if self.argv_prefix:
                time.sleep(0.5)  # in another network namespace: its port cannot be polled from here
                if self.proc.poll() is not None:
                    raise RuntimeError
            else:
                wait_for_port(self.port, self.listen)
        except RuntimeError:
            proc = self.proc
            self.stop()
            err = proc.stderr.read().decode() if proc and proc.stderr else ""
            raise RuntimeError(f"globus-gridftp-server did not start: {err}") from None
        return self

    def kill(self) -> None:
        """Die like a crashed server: SIGKILL to the server and every session it forked."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc = None

    def restart(self) -> GridftpServer:
        self.kill()
        return self.start()

    def stop(self) -> None:
        self.kill()

    def give(self, path: Path) -> None:
        """Let the anonymous user (``nobody``) read and write ``path``."""
        if os.geteuid() == 0:
            for folder in (path, *path.parents):
                if folder == Path("/"):
                    break
                mode = folder.stat().st_mode
                os.chmod(folder, mode | 0o005 | (0o001 if folder.is_dir() else 0))
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
