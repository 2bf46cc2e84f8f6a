"""An HTTPS file server started from Python, for the tests that run on every OS (the CI's macOS and Windows
runners have no nginx): aiohttp's static files (ranges, sizes, ETags as a web server sends them) over TLS with a
certificate from a CA made here with ``cryptography``."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 and localhost signed by it: (ca.pem, server.pem, server.key)."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    issuer = _name("Ferry portable test CA")
    ca = (x509.CertificateBuilder().subject_name(issuer).issuer_name(issuer)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    alt = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (x509.CertificateBuilder().subject_name(_name("127.0.0.1")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(alt, critical=False).sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class PythonWeb:
    """``data`` served at https://127.0.0.1:PORT/ from a thread of this process, until ``stop``."""

    def __init__(self, root: Path) -> None:
        self.data = root / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.ca_file, cert, key = (str(p) for p in make_tls(root / "tls"))
        self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._tls.load_cert_chain(cert, key)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="python-web", daemon=True)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def start(self) -> PythonWeb:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the Python HTTPS server did not start within 30 s")
        return self

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_static("/", self.data, show_index=True)
        self._runner = web.AppRunner(app)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, ssl_context=self._tls)
        self._loop.run_until_complete(site.start())
        self._ready.set()
        self._loop.run_forever()

    def stop(self) -> None:
        async def down() -> None:
            await self._runner.cleanup()
            self._loop.stop()

        asyncio.run_coroutine_threadsafe(down(), self._loop)
        self._thread.join(10)
