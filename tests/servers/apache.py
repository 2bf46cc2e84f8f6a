"""A real Apache httpd on 127.0.0.1 with its config in a temporary folder, for tests and benchmarks.

Debian's ``apache2`` binary is run directly (no ``apache2ctl``, no /etc/apache2): the config loads the
modules it needs from ``/usr/lib/apache2/modules``. Locations:

* ``/``         the data folder, as a sequencing core's web server serves it (ranges, ETag, Last-Modified,
                autoindex listings of folders)
* ``/novalid/`` the same files with no ETag and no Last-Modified (a dynamic front end, an old proxy): a client
                cannot tell a changed file from the one it began
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from .nginx import free_port, stop_process, wait_for_port

MODULES = ("mpm_event", "authz_core", "authz_host", "alias", "dir", "autoindex", "mime", "headers")


def apache_binary() -> str:
    for path in ("/usr/sbin/apache2", "/usr/sbin/httpd"):
        if os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("apache2")


class Apache:
    def __init__(self, root: Path, data: Path, *, modules_dir: str = "/usr/lib/apache2/modules") -> None:
        self.root, self.data, self.modules_dir = root, data, modules_dir
        self.root.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def config(self) -> str:
        r, d = self.root, self.data
        modules = "\n".join(f"LoadModule {m}_module {self.modules_dir}/mod_{m}.so" for m in MODULES)
        user = "User nobody\nGroup nogroup" if os.geteuid() == 0 else ""
        return f"""
ServerRoot {r}
ServerName 127.0.0.1
Listen 127.0.0.1:{self.port}
PidFile {r}/httpd.pid
ErrorLog {r}/error.log
LogLevel warn
{modules}
{user}
LogFormat "%r %>s %B" ferry
CustomLog {r}/access.log ferry
TypesConfig /dev/null
AddType application/octet-stream .bin
AddType text/plain .txt .sha256 .md5
KeepAlive On
MaxKeepAliveRequests 0
DocumentRoot {d}
<Directory />
    Require all granted
    Options +Indexes
</Directory>
Alias /novalid/ {d}/
<Location /novalid/>
    FileETag None
    Header unset ETag
    Header unset Last-Modified
</Location>
"""

    def start(self) -> Apache:
        conf = self.root / "httpd.conf"
        conf.write_text(self.config())
        self.proc = subprocess.Popen([apache_binary(), "-f", str(conf), "-DFOREGROUND"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=dict(os.environ, APACHE_RUN_DIR=str(self.root)))
        try:
            wait_for_port(self.port)
        except RuntimeError:
            err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
            self.stop()
            raise RuntimeError(f"apache2 did not start: {err}") from None
        return self

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def restart(self, pause: float = 0.0) -> None:
        self.stop()
        time.sleep(pause)
        self.start()
