"""lighttpd on 127.0.0.1 with directory listings on (``dir-listing.activate``), its config in a temporary folder:
the third web server a sequencing core may run, with its own listing page and its own ETags."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .nginx import free_port, start_foreground, stop_process


def lighttpd_binary() -> str:
    for path in ("/usr/sbin/lighttpd", "/usr/local/sbin/lighttpd"):
        if os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("lighttpd")


class Lighttpd:
    def __init__(self, root: Path, data: Path) -> None:
        self.root, self.data = root, data
        for folder in (root, data):
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o755)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def config(self) -> str:
        user = 'server.username = "nobody"\nserver.groupname = "nogroup"' if os.geteuid() == 0 else ""
        return f"""
server.document-root = "{self.data}"
server.bind = "127.0.0.1"
server.port = {self.port}
server.errorlog = "{self.root}/error.log"
{user}
server.modules += ("mod_dirlisting", "mod_accesslog")
accesslog.filename = "{self.root}/access.log"
dir-listing.activate = "enable"
index-file.names = ()
mimetype.assign = (".txt" => "text/plain", ".html" => "text/html", "" => "application/octet-stream")
"""

    def start(self) -> Lighttpd:
        conf = self.root / "lighttpd.conf"
        conf.write_text(self.config())
        if os.geteuid() == 0:  # it opens its logs as the user it runs as
            import pwd

            nobody = pwd.getpwnam("nobody")
            for log in ("error.log", "access.log"):
                (self.root / log).touch()
                os.chown(self.root / log, nobody.pw_uid, nobody.pw_gid)
        self.proc = start_foreground([lighttpd_binary(), "-D", "-f", str(conf)], self.port, "lighttpd")
        return self

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None
