"""A real HTTP proxy on 127.0.0.1 (tinyproxy, as an institution's web proxy): plain requests forwarded, HTTPS
tunnelled with CONNECT, every request logged (``requests()``)."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

from .nginx import free_port, start_foreground, stop_process


class Tinyproxy:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log = root / "tinyproxy.log"
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Tinyproxy:
        program = shutil.which("tinyproxy")
        if program is None:
            raise RuntimeError("tinyproxy is not installed; run tests/system-deps.sh as root")
        run_as = ""
        if os.geteuid() == 0:  # it drops to this user: its log must stay writable by it
            nobody = pwd.getpwnam("nobody")
            self.log.touch()
            os.chown(self.log, nobody.pw_uid, nobody.pw_gid)
            os.chmod(self.root, 0o755)
            run_as = "User nobody\nGroup nogroup\n"
        conf = self.root / "tinyproxy.conf"
        conf.write_text(f"{run_as}Port {self.port}\nListen 127.0.0.1\nBind 127.0.0.1\nTimeout 120\n"
                        f"LogFile \"{self.log}\"\nLogLevel Connect\nMaxClients 200\nAllow 127.0.0.1\n"
                        "DisableViaHeader Yes\n")
        self.proc = start_foreground([program, "-d", "-c", str(conf)], self.port, "tinyproxy")
        return self

    def requests(self) -> list[str]:
        """What clients asked it so far: ``CONNECT 127.0.0.1:PORT`` or ``GET http://…`` lines."""
        if not self.log.exists():
            return []
        return [line.split("Request (file descriptor", 1)[-1].split("): ", 1)[-1].strip()
                for line in self.log.read_text(errors="replace").splitlines() if "Request (file descriptor" in line]

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None
