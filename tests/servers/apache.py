"""A real Apache httpd on 127.0.0.1 with its config in a temporary folder, for tests and benchmarks.

Debian's ``apache2`` binary is run directly (no ``apache2ctl``, no /etc/apache2): the config loads the
modules it needs from ``/usr/lib/apache2/modules``. Locations:

* ``/``         the data folder, as a sequencing core's web server serves it (ranges, ETag, Last-Modified,
                autoindex listings of folders)
* ``/novalid/`` the same files with no ETag and no Last-Modified (a dynamic front end, an old proxy): a client
                cannot tell a changed file from the one it began
* ``/dynamic/`` the same files with an ETag that changes on every request (some front ends do)
* ``/basic/``, ``/digest/`` the same files behind a Basic or a Digest login (``USER`` / ``PASSWORD``)
* ``/loop/a``   redirects to ``/loop/b``, which redirects back; ``/latest`` redirects to ``/sample2.fastq``
* ``/download?id=N`` the file ``sampleN.fastq`` named by ``Content-Disposition`` (a LIMS or portal link)
* ``/gzip/``    the same files gzip-compressed on the fly whatever the client asked (mod_deflate, force-gzip)
* ``/gzfile/``  ``.gz`` files sent with ``Content-Encoding: gzip`` (``AddEncoding``, as many servers are set up)
* ``/stream/NAME`` the file through a CGI script: chunked, no Content-Length, no ranges

All of it also over TLS (mod_ssl) on ``tls_port`` (``https_url``), with a certificate from a CA of its own
(``ca_file``).
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import time
from pathlib import Path

from .nginx import free_port, make_certificates, start_foreground, stop_process

MODULES = ("mpm_event", "authz_core", "authz_host", "alias", "dir", "autoindex", "mime", "headers", "auth_basic",
           "auth_digest", "authn_core", "authn_file", "authz_user", "rewrite", "cgid", "env", "deflate", "ssl",
           "socache_shmcb")
USER, PASSWORD, REALM = "reader", "s3cret pass", "Sequencing core"


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
        self.tls_port = free_port()  # the same site over TLS (mod_ssl), its certificate from its own CA
        self.certs = make_certificates(root / "tls")
        self.proc: subprocess.Popen | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def https_url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.tls_port}/{path.lstrip('/')}"

    @property
    def ca_file(self) -> str:
        return str(self.certs["ca"])

    def _logins(self) -> None:
        """The password files of the two login areas (Apache's own formats, written without htpasswd)."""
        sha1 = base64.b64encode(hashlib.sha1(PASSWORD.encode()).digest()).decode()
        (self.root / "basic.passwd").write_text(f"{USER}:{{SHA}}{sha1}\n")
        ha1 = hashlib.md5(f"{USER}:{REALM}:{PASSWORD}".encode()).hexdigest()
        (self.root / "digest.passwd").write_text(f"{USER}:{REALM}:{ha1}\n")
        cgi = self.root / "cgi"
        cgi.mkdir(exist_ok=True)
        script = cgi / "stream"
        script.write_text(f"#!/bin/sh\n"
                          f"name=$(basename \"$PATH_INFO\")\n"
                          f"[ -f \"{self.data}/$name\" ] || {{ printf 'Status: 404\\r\\n\\r\\n'; exit 0; }}\n"
                          f"printf 'Content-Type: application/octet-stream\\r\\n\\r\\n'\n"
                          f"exec cat \"{self.data}/$name\"\n")
        script.chmod(0o755)
        for path in (self.root, cgi):
            path.chmod(0o755)

    def config(self) -> str:
        self._logins()
        r, d = self.root, self.data
        modules = "\n".join(f"LoadModule {m}_module {self.modules_dir}/mod_{m}.so" for m in MODULES)
        user = "User nobody\nGroup nogroup" if os.geteuid() == 0 else ""
        return f"""
ServerRoot {r}
ServerName 127.0.0.1
Listen 127.0.0.1:{self.port}
Listen 127.0.0.1:{self.tls_port} https
SSLSessionCache "shmcb:{r}/ssl_scache(512000)"
<VirtualHost 127.0.0.1:{self.tls_port}>
    SSLEngine on
    SSLCertificateFile {self.certs["server"]}
    SSLCertificateKeyFile {self.certs["server_key"]}
</VirtualHost>
PidFile {r}/httpd.pid
ErrorLog {r}/error.log
LogLevel warn
{modules}
{user}
LogFormat "%r %>s %B %u" ferry
CustomLog {r}/access.log ferry
TypesConfig /dev/null
AddType application/octet-stream .bin
AddType text/plain .txt .sha256 .md5
AddType text/html .html
KeepAlive On
MaxKeepAliveRequests 0
DocumentRoot {d}
<Directory />
    Require all granted
    Options +Indexes
</Directory>
Alias /gzip/ {d}/
<Location /gzip/>
    SetOutputFilter DEFLATE
    SetEnv force-gzip 1
</Location>
Alias /gzfile/ {d}/
<Location /gzfile/>
    AddEncoding gzip .gz
</Location>
Alias /novalid/ {d}/
<Location /novalid/>
    FileETag None
    Header unset ETag
    Header unset Last-Modified
</Location>
Alias /dynamic/ {d}/
<Location /dynamic/>
    Header set ETag '"%t"'
</Location>
Alias /basic/ {d}/
<Location /basic/>
    AuthType Basic
    AuthName "{REALM}"
    AuthBasicProvider file
    AuthUserFile {r}/basic.passwd
    Require valid-user
</Location>
Alias /digest/ {d}/
<Location /digest/>
    AuthType Digest
    AuthName "{REALM}"
    AuthDigestProvider file
    AuthUserFile {r}/digest.passwd
    Require valid-user
</Location>
ScriptSock {r}/cgid.sock
ScriptAlias /stream {r}/cgi/stream
RewriteEngine On
RewriteRule ^/loop/a$ /loop/b [R=302,L]
RewriteRule ^/loop/b$ /loop/a [R=302,L]
RewriteRule ^/latest$ /sample2.fastq [R=302,L]
RewriteCond %{{QUERY_STRING}} ^id=([0-9]+)$
RewriteRule ^/download$ /sample%1.fastq [PT,E=DOWNLOAD_NAME:sample%1.fastq]
Header set Content-Disposition 'attachment; filename="%{{DOWNLOAD_NAME}}e"' env=DOWNLOAD_NAME
"""

    def start(self) -> Apache:
        conf = self.root / "httpd.conf"
        conf.write_text(self.config())
        self.proc = start_foreground([apache_binary(), "-f", str(conf), "-DFOREGROUND"], self.port, "apache2",
                                     env=dict(os.environ, APACHE_RUN_DIR=str(self.root)))
        return self

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def requests(self) -> list[str]:
        """The access log so far: one line per request, ``METHOD PATH PROTOCOL STATUS BYTES USER``."""
        log = self.root / "access.log"
        return log.read_text().splitlines() if log.exists() else []

    def restart(self, pause: float = 0.0) -> None:
        self.stop()
        time.sleep(pause)
        self.start()
