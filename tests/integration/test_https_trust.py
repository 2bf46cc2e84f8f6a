"""The system CA store read lazily (``backends/https/trust.py``): same trust, checked against nginx over TLS."""

from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from backends.https import trust
from tests.servers.nginx import make_certificates


def hashed_folder(folder: Path, *cas: Path) -> Path:
    """A CA folder as ``update-ca-certificates`` leaves it: each CA under its subject hash, plus the bundle."""
    folder.mkdir(parents=True)
    bundle = b""
    for ca in cas:
        name = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", str(ca)], check=True,
                              capture_output=True, text=True).stdout.strip()
        (folder / f"{name}.0").write_bytes(ca.read_bytes())
        bundle += ca.read_bytes()
    (folder / "ca-certificates.crt").write_bytes(bundle)
    return folder


@pytest.fixture
def system_store(monkeypatch):
    """Point OpenSSL's defaults (as Python reports them) at a folder the test makes."""
    def use(folder: Path, bundle: Path | None = None):
        bundle = bundle or folder / "ca-certificates.crt"
        paths = ssl.DefaultVerifyPaths(str(bundle) if bundle.exists() else None, str(folder), "SSL_CERT_FILE",
                                       str(bundle), "SSL_CERT_DIR", str(folder))
        monkeypatch.setattr(ssl, "get_default_verify_paths", lambda: paths)
        trust.lazy_system_folder.cache_clear()
    yield use
    trust.lazy_system_folder.cache_clear()


def handshake(ctx: ssl.SSLContext, port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.version()


def test_a_lazily_read_folder_trusts_exactly_what_it_holds(nginx, tmp_path, system_store):
    system_store(hashed_folder(tmp_path / "certs", Path(nginx.ca_file)))
    assert trust.lazy_system_folder() == str(tmp_path / "certs")
    ctx = trust.verified_context()
    assert ctx.cert_store_stats()["x509"] == 0  # nothing parsed up front
    handshake(ctx, nginx.port)
    assert ctx.cert_store_stats()["x509_ca"] == 1  # read when the chain needed it

    other = make_certificates(tmp_path / "other")  # a folder without nginx's CA: refused
    system_store(hashed_folder(tmp_path / "other-certs", other["ca"]))
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(trust.verified_context(), nginx.port)
    handshake(trust.verified_context(nginx.ca_file), nginx.port)  # --ca-file adds the lab's CA to it


def test_the_import_time_contexts_use_the_folder_and_ssl_is_left_as_it_was(nginx, tmp_path, system_store):
    system_store(hashed_folder(tmp_path / "certs", Path(nginx.ca_file)))
    with trust._default_paths_lazy():
        ctx = ssl.create_default_context()  # what aiohttp does at its import
    assert "set_default_verify_paths" not in ssl.SSLContext.__dict__
    assert ctx.cert_store_stats()["x509"] == 0
    handshake(ctx, nginx.port)


def test_a_bundle_the_folder_does_not_cover_is_read_as_before(nginx, tmp_path, system_store):
    other = make_certificates(tmp_path / "other")
    folder = hashed_folder(tmp_path / "certs", Path(nginx.ca_file))
    bundle = tmp_path / "bundle.pem"  # one more certificate than the folder has names: an edited bundle
    bundle.write_bytes(Path(nginx.ca_file).read_bytes() + other["ca"].read_bytes())
    system_store(folder, bundle)
    assert trust.lazy_system_folder() is None
    stock = ssl.create_default_context().cert_store_stats()  # OpenSSL's real defaults: the machine's store
    assert trust.verified_context().cert_store_stats() == stock  # parsed up front, as Python does
    handshake(trust.verified_context(nginx.ca_file), nginx.port)


def test_other_paths_than_the_defaults_are_read_as_before(tmp_path, monkeypatch):
    folder = hashed_folder(tmp_path / "certs", make_certificates(tmp_path / "ca")["ca"])
    elsewhere = ssl.DefaultVerifyPaths(str(folder / "ca-certificates.crt"), str(folder), "SSL_CERT_FILE",
                                       "/nonexistent/cert.pem", "SSL_CERT_DIR", "/nonexistent/certs")
    monkeypatch.setattr(ssl, "get_default_verify_paths", lambda: elsewhere)  # SSL_CERT_FILE/DIR set elsewhere
    trust.lazy_system_folder.cache_clear()
    try:
        assert trust.lazy_system_folder() is None
    finally:
        trust.lazy_system_folder.cache_clear()


def test_covering_folder(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    assert trust.covering_folder(str(folder), None) is None  # no hashed names
    (folder / "README").write_text("x")
    (folder / "0a1b2c3d.0").write_text("x")
    (folder / "0a1b2c3d.1").write_text("x")
    bundle = tmp_path / "b.pem"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\n" * 3)
    assert trust.covering_folder(str(folder), str(bundle)) is None  # 2 names, 3 certificates
    (folder / "ffffffff.0").write_text("x")
    assert trust.covering_folder(str(folder), str(bundle)) == str(folder)
    assert trust.covering_folder(str(folder), None) == str(folder)
    assert trust.covering_folder(str(tmp_path / "missing"), str(bundle)) is None
