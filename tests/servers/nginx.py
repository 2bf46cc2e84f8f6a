"""A real nginx with TLS on 127.0.0.1, for tests and benchmarks.

The fixture makes its own certificate authority and two server certificates
(one for 127.0.0.1/localhost, one for a name that does not match), writes a
config with random free ports, and runs ``nginx`` in the foreground under a temp
prefix. Locations:

* ``/``           the data folder (byte ranges, sendfile)
* ``/slow/``      the same files at ``slow_rate`` per connection (for kills and pauses)
* ``/norange/``   the same files with byte ranges disabled (``max_ranges 0``)
* ``/forbidden/`` always 403
* ``/login/``     the same files behind a Basic login (``LOGIN_USER`` / ``LOGIN_PASSWORD``)
* ``wrong_port``  the same data behind a certificate for another name
* ``expired_port``  the same data behind a certificate that expired yesterday
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

LOGIN_USER, LOGIN_PASSWORD = "reader", "nginx-secret"
#: ... $msec (when the request ended) and $request_time (how long it took) give each request's span in time
ACCESS_FORMAT = '$request_method $uri $status $body_bytes_sent "$http_range" $msec $request_time $connection'


#: each pytest-xdist worker hands out ports from its own block, below the kernel's ephemeral range (32768 and up,
#: where clients' ports come from): a server a test stops and starts again on its port (an outage) finds it
#: free, never taken meanwhile by a server the other worker started (once, a download then reached the other
#: worker's nginx and got its files)
PORT_BLOCK, FIRST_PORT = 3000, 10000
_BLOCKS = {"": 0, "gw0": 1, "gw1": 2, "gw2": 3, "gw3": 4, "gw4": 5, "gwx11": 6}
_cursor = random.randrange(PORT_BLOCK)


def free_port() -> int:
    """A port nothing listens on, from this worker's block, the next one each call (a port comes round again
    only after the whole block)."""
    global _cursor
    low = FIRST_PORT + PORT_BLOCK * _BLOCKS.get(os.environ.get("PYTEST_XDIST_WORKER", ""), 6)
    for _ in range(PORT_BLOCK):
        _cursor = (_cursor + 1) % PORT_BLOCK
        port = low + _cursor
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port from {low} to {low + PORT_BLOCK - 1}")


def wait_for_port(port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout} s")


def stop_process(proc: subprocess.Popen | None) -> None:
    """SIGTERM a server started in the foreground, SIGKILL after 10 s, and reap it."""
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_foreground(argv: list[str], port: int, what: str, env: dict | None = None) -> subprocess.Popen:
    """Start a server that stays in the foreground and wait until it listens on 127.0.0.1:``port``; if it does
    not, stop it and say what it printed."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        wait_for_port(port)
    except RuntimeError:
        err = proc.stderr.read().decode() if proc.poll() is not None else ""
        stop_process(proc)
        raise RuntimeError(f"{what} did not start: {err}") from None
    return proc


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certificates(folder: Path, names: tuple[str, ...] = ("DNS:localhost", "IP:127.0.0.1")) -> dict[str, Path]:
    """A CA, a server certificate for ``names`` and one for ``wrong.example``, all signed by the CA."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", "ca.key", "-out", "ca.pem",
             "-subj", "/CN=Ferry Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=folder)
    for stem, san in (("server", ",".join(names)), ("wrong", "DNS:wrong.example")):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{stem}.key", "-out", f"{stem}.csr",
                 "-subj", f"/CN={stem}", cwd=folder)
        (folder / f"{stem}.ext").write_text(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n")
        _openssl("x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                 "-days", "2", "-out", f"{stem}.pem", "-extfile", f"{stem}.ext", cwd=folder)
    _expired_certificate(folder, names)
    return {name: folder / f"{name}.pem" for name in ("ca", "server", "wrong", "expired")} | {
        "server_key": folder / "server.key", "wrong_key": folder / "wrong.key", "expired_key": folder / "server.key"}


def _expired_certificate(folder: Path, names: tuple[str, ...]) -> None:
    """``expired.pem``: the server's key and names, signed by the CA, valid from three days ago until yesterday
    (openssl 3.0's ``x509`` cannot date a certificate in the past)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    ca_key = serialization.load_pem_private_key((folder / "ca.key").read_bytes(), None)
    ca = x509.load_pem_x509_certificate((folder / "ca.pem").read_bytes())
    key = serialization.load_pem_private_key((folder / "server.key").read_bytes(), None)
    alt = [x509.IPAddress(ipaddress.ip_address(n[3:])) if n.startswith("IP:") else x509.DNSName(n[4:]) for n in names]
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "expired")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=3)).not_valid_after(now - datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .sign(ca_key, hashes.SHA256()))
    (folder / "expired.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))


class Nginx:
    def __init__(self, prefix: Path, data: Path, *, listen: str = "127.0.0.1", slow_rate: str = "2m",
                 certs: dict[str, Path] | None = None) -> None:
        self.prefix, self.data, self.listen, self.slow_rate = prefix, data, listen, slow_rate
        self.prefix.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self.certs = certs or make_certificates(prefix / "tls")
        self.port, self.http_port, self.wrong_port = free_port(), free_port(), free_port()
        self.expired_port = free_port()
        self.access_log = prefix / "access.log"
        self.proc: subprocess.Popen | None = None

    @property
    def ca_file(self) -> str:
        return str(self.certs["ca"])

    def url(self, path: str, *, scheme: str = "https", host: str | None = None) -> str:
        port = self.port if scheme == "https" else self.http_port
        return f"{scheme}://{host or self.listen}:{port}/{path.lstrip('/')}"

    def config(self) -> str:
        (self.prefix / "htpasswd").write_text(f"{LOGIN_USER}:{{PLAIN}}{LOGIN_PASSWORD}\n")
        user = "user root root;" if os.geteuid() == 0 else ""
        p, d = self.prefix, self.data
        tls = (f"ssl_certificate {self.certs['server']}; ssl_certificate_key {self.certs['server_key']};"
               " ssl_protocols TLSv1.2 TLSv1.3;")
        locations = f"""
            root {d};
            autoindex on;
            location /slow/ {{ alias {d}/; limit_rate {self.slow_rate}; }}
            location /norange/ {{ alias {d}/; max_ranges 0; }}
            location /forbidden/ {{ deny all; }}
            location /login/ {{ alias {d}/; auth_basic "Ferry tests"; auth_basic_user_file {p}/htpasswd; }}
        """
        return f"""
daemon off;
{user}
worker_processes 1;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    types {{ application/octet-stream bin; text/plain txt sha256 md5; }}
    default_type application/octet-stream;
    log_format ferry '{ACCESS_FORMAT}';
    access_log {self.access_log} ferry;
    client_body_temp_path {p}/tmp_body; proxy_temp_path {p}/tmp_proxy; fastcgi_temp_path {p}/tmp_fcgi;
    uwsgi_temp_path {p}/tmp_uwsgi; scgi_temp_path {p}/tmp_scgi;
    sendfile on; tcp_nopush on; keepalive_requests 100000; keepalive_timeout 120s;
    server {{ listen {self.listen}:{self.port} ssl; {tls} {locations} {self.downgrades()} }}
    server {{ listen {self.listen}:{self.http_port}; {locations} }}
    server {{ listen {self.listen}:{self.wrong_port} ssl;
             ssl_certificate {self.certs['wrong']}; ssl_certificate_key {self.certs['wrong_key']};
             root {d}; }}
    server {{ listen {self.listen}:{self.expired_port} ssl;
             ssl_certificate {self.certs['expired']}; ssl_certificate_key {self.certs['expired_key']};
             root {d}; }}
}}
"""

    def downgrades(self) -> str:
        """On the TLS server only: /downgrade/X redirects to X on the plain http port, /downgrade-login/X to the
        plain port's /login/X (a downgrade: docs/security.md)."""
        plain = f"http://{self.listen}:{self.http_port}"
        return (f"location /downgrade/ {{ rewrite ^/downgrade/(.*)$ {plain}/$1 redirect; }} "
                f"location /downgrade-login/ {{ rewrite ^/downgrade-login/(.*)$ {plain}/login/$1 redirect; }}")

    def start(self, argv_prefix: tuple[str, ...] = ()) -> Nginx:
        conf = self.prefix / "nginx.conf"
        conf.write_text(self.config())
        self.proc = subprocess.Popen([*argv_prefix, "nginx", "-p", str(self.prefix), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            if not argv_prefix:
                wait_for_port(self.port, self.listen)
            else:
                time.sleep(0.5)
        except RuntimeError:
            self.stop()
            raise
        if self.proc.poll() is not None:
            raise RuntimeError(f"nginx did not start: {self.proc.stderr.read().decode()}")
        return self

    def stop(self) -> None:
        stop_process(self.proc)  # SIGTERM is nginx's fast shutdown: open connections are cut
        self.proc = None

    def restart(self, pause: float = 0.0) -> None:
        self.stop()
        time.sleep(pause)
        self.start()

    def body_bytes(self, uri: str) -> int:
        """Bytes nginx sent in bodies for GETs of ``uri`` so far, from its access log."""
        total = 0
        for line in self.access_log.read_text().splitlines():
            fields = line.split(" ")
            if len(fields) >= 4 and fields[0] == "GET" and fields[1] == uri:
                total += int(fields[3])
        return total
