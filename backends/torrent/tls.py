"""TLS torrents: a lab CA in the torrent, peers that prove themselves with certificates it signed.

libtorrent's SSL torrents carry a CA certificate in the info dictionary; every peer connection is TLS (AES
with the CPU's own instructions, where RC4 "encryption required" cost a quarter of this machine's CPU), and
both ends must present a certificate signed by that CA whose DNS name is the torrent's name or ``*``. A peer
with a certificate from another CA, an expired one, or none fails the handshake (libtorrent refuses it; the
other side sees a TLS alert), and plaintext or RC4 peers cannot even connect: the torrent listens only on TLS.

Ferry keeps a lab CA of its own (``LABFERRY_HOME/tls``, made on first use, the key readable by its owner
only) and issues itself a ``*`` certificate from it, so ``torrent create --tls`` and ``seed`` need no flags on
the machine that holds the CA. A collaborator's Ferry gets a certificate and key made with ``labferry torrent
cert`` and passes them with ``--tls-cert``/``--tls-key`` (or keeps them in its own ``tls`` folder).
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadRequest, LocalError

#: RFC 7919's ffdhe2048 group: libtorrent's TLS context insists on Diffie-Hellman parameters (an empty path or
#: buffer is a torrent error), although the handshakes it makes use ECDHE; a published group, not a secret
FFDHE2048 = """-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
"""
CA_DAYS = 3650
PEER_DAYS = 365
CA_NAME = "lab-ca"
PEER_NAME = "peer"


@dataclass(frozen=True)
class Identity:
    """A certificate and its key, as files (libtorrent reads them itself)."""

    cert: Path
    key: Path


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _write_key(path: Path, key) -> None:
    from cryptography.hazmat.primitives import serialization

    data = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _write_cert(path: Path, cert) -> None:
    from cryptography.hazmat.primitives import serialization

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def make_ca(folder: Path, name: str = "Ferry lab CA") -> Identity:
    """A new CA (EC P-256, ten years) in ``folder``: ``lab-ca.pem`` and ``lab-ca.key``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(_now() - datetime.timedelta(minutes=5))
            .not_valid_after(_now() + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    identity = Identity(folder / f"{CA_NAME}.pem", folder / f"{CA_NAME}.key")
    _write_key(identity.key, key)
    _write_cert(identity.cert, cert)
    return identity


def lab_ca(folder: Path) -> Identity:
    """This installation's lab CA, made on first use; named after this host and a random tag, so that two labs'
    CAs never share a name (a peer would then look for the wrong CA by name before it checks the signature)."""
    import secrets
    import socket

    identity = Identity(folder / f"{CA_NAME}.pem", folder / f"{CA_NAME}.key")
    if identity.cert.is_file() and identity.key.is_file():
        return identity
    return make_ca(folder, f"Ferry lab CA, {socket.gethostname()} {secrets.token_hex(4)}")


def _load_ca(ca: Identity):
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(ca.cert.read_bytes())
        key = serialization.load_pem_private_key(ca.key.read_bytes(), password=None)
    except OSError as exc:
        raise LocalError(f"Cannot read the CA ({exc.strerror}: {exc.filename}). Give --ca and --ca-key.") from None
    except (ValueError, TypeError) as exc:
        raise BadRequest(f"{ca.cert.name} and {ca.key.name} are not a PEM certificate and its unencrypted key "
                         f"({exc}).") from None
    basic = cert.extensions.get_extension_for_class(x509.BasicConstraints).value \
        if any(e.oid == x509.ExtensionOID.BASIC_CONSTRAINTS for e in cert.extensions) else None
    if basic is None or not basic.ca:
        raise BadRequest(f"{ca.cert} is not a CA certificate (it cannot sign others). Give the lab's CA.")
    if cert.public_key().public_numbers() != key.public_key().public_numbers():
        raise BadRequest(f"{ca.key} is not the key of {ca.cert}. Give the CA's own key with --ca-key.")
    return cert, key


def issue(ca: Identity, cert_out: Path, key_out: Path, *, names: tuple[str, ...] = ("*",), days: int = PEER_DAYS,
          start: datetime.datetime | None = None, label: str = "Ferry peer") -> Identity:
    """A peer certificate signed by ``ca`` for torrents named ``names`` (``*``: every torrent of that CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if not names or any(not n for n in names):
        raise BadRequest("A peer certificate needs a torrent name, or * for every torrent of the lab.")
    ca_cert, ca_key = _load_ca(ca)
    key = ec.generate_private_key(ec.SECP256R1())
    begins = start or _now() - datetime.timedelta(minutes=5)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, label)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(begins).not_valid_after(begins + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256()))
    _write_key(key_out, key)
    _write_cert(cert_out, cert)
    return Identity(cert_out, key_out)


def existing_identity(folder: Path) -> Identity | None:
    """This installation's own peer certificate, if it has one (it made a lab CA, or was given one there)."""
    identity = Identity(folder / f"{PEER_NAME}.pem", folder / f"{PEER_NAME}.key")
    return identity if identity.cert.is_file() and identity.key.is_file() else None


def own_identity(folder: Path) -> Identity:
    """This installation's ``*`` certificate from its lab CA, issued on first use."""
    identity = Identity(folder / f"{PEER_NAME}.pem", folder / f"{PEER_NAME}.key")
    if identity.cert.is_file() and identity.key.is_file():
        return identity
    return issue(lab_ca(folder), identity.cert, identity.key)


def creator_ca(folder: Path) -> Identity:
    """The lab CA a TLS torrent made here goes with, and this installation's own certificate from it (issued on
    first use), so that the machine that creates a torrent can seed it without flags."""
    ca = lab_ca(folder)
    own_identity(folder)
    return ca


def root_pem(ca: Identity) -> str:
    """The CA certificate that goes into a TLS torrent."""
    cert, _ = _load_ca(ca)
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def problem_with(identity: Identity, torrent_root: str, torrent_name: str) -> str | None:
    """Why ``identity`` cannot join a torrent whose CA is ``torrent_root`` (a sentence), or None: said here, before
    every peer refuses the handshake with a bare TLS alert."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    try:
        cert = x509.load_pem_x509_certificate(identity.cert.read_bytes())
        identity.key.read_bytes()
    except OSError as exc:
        return f"Cannot read {exc.filename} ({exc.strerror}). Give this peer's certificate and key."
    except ValueError:
        return f"{identity.cert} is not a PEM certificate."
    root = x509.load_pem_x509_certificate(torrent_root.encode())
    try:
        cert.verify_directly_issued_by(root)
        signed = True
    except (InvalidSignature, TypeError, ValueError):
        signed = False
    if not signed:
        return (f"{identity.cert.name} was not issued by this torrent's lab CA ({root.subject.rfc4514_string()}): "
                "its peers would refuse it. Ask the torrent's creator for a certificate (labferry torrent cert).")
    now = _now()
    if cert.not_valid_after_utc < now:
        return (f"{identity.cert.name} expired on {cert.not_valid_after_utc:%Y-%m-%d}: peers refuse it. Ask the "
                "torrent's creator for a new one (labferry torrent cert).")
    if cert.not_valid_before_utc > now:
        return f"{identity.cert.name} is valid only from {cert.not_valid_before_utc:%Y-%m-%d %H:%M} UTC."
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName)
    except x509.ExtensionNotFound:
        names = []
    if "*" not in names and torrent_name not in names:
        return (f"{identity.cert.name} covers {', '.join(names) or 'no torrent'}, not '{torrent_name}': ask for "
                "a certificate for this torrent, or for * (every torrent of the lab).")
    return None
