"""GSI credentials for a real globus-gridftp-server on gsiftp://: a test CA, the server's certificate, a user's
proxy, and a grid-mapfile. gsiftp:// is the only scheme on which ``globus-url-copy -udt`` asks for UDT.

The CA goes into a trusted-certificates folder under both of OpenSSL's hash names, each with the signing policy
Globus checks; the server's certificate is named after the address the client dials (GSI's default check
expects ``/CN=127.0.0.1``); the user's DN maps to ``nobody`` (the server refuses to map to root); the proxy
comes from ``grid-proxy-init`` (Debian's globus-proxy-utils), as a user's would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ORG = "FerryTest"


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def _signed(root: Path, name: str, subject: str) -> tuple[Path, Path]:
    key, csr, cert = root / f"{name}.key", root / f"{name}.csr", root / f"{name}.pem"
    _run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", subject)
    _run("openssl", "x509", "-req", "-in", str(csr), "-CA", str(root / "ca.pem"), "-CAkey", str(root / "ca.key"),
         "-CAcreateserial", "-out", str(cert), "-days", "7")
    os.chmod(key, 0o600)
    return cert, key


@dataclass
class GsiCredentials:
    root: Path
    host: str = "127.0.0.1"

    def make(self) -> GsiCredentials:
        if not shutil.which("grid-proxy-init"):
            raise RuntimeError("grid-proxy-init is missing: install globus-proxy-utils (tests/system-deps.sh).")
        root = self.root
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o755)
        _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(root / "ca.key"), "-out",
             str(root / "ca.pem"), "-subj", f"/O={ORG}/CN=Ferry Test CA", "-days", "7")
        self.certs = root / "certificates"
        self.certs.mkdir(exist_ok=True)
        policy = (f"access_id_CA X509 '/O={ORG}/CN=Ferry Test CA'\npos_rights globus CA:sign\n"
                  f"cond_subjects globus '\"/O={ORG}/*\"'\n")
        for option in ("-hash", "-subject_hash_old"):
            name = _run("openssl", "x509", "-in", str(root / "ca.pem"), "-noout", option).strip()
            shutil.copyfile(root / "ca.pem", self.certs / f"{name}.0")
            (self.certs / f"{name}.signing_policy").write_text(policy)
        self.host_cert, self.host_key = _signed(root, "host", f"/O={ORG}/CN={self.host}")
        user_cert, user_key = _signed(root, "user", f"/O={ORG}/CN=ferry user")
        self.gridmap = root / "grid-mapfile"
        self.gridmap.write_text(f'"/O={ORG}/CN=ferry user" nobody\n')
        self.proxy = root / "proxy"
        subprocess.run(["grid-proxy-init", "-cert", str(user_cert), "-key", str(user_key), "-out", str(self.proxy),
                        "-hours", "12"], check=True, capture_output=True, env=dict(os.environ, X509_CERT_DIR=str(
                            self.certs)))
        return self

    def server_env(self) -> dict[str, str]:
        return {"X509_CERT_DIR": str(self.certs), "X509_USER_CERT": str(self.host_cert),
                "X509_USER_KEY": str(self.host_key), "GRIDMAP": str(self.gridmap)}

    def client_env(self) -> dict[str, str]:
        """What a user's shell holds after ``grid-proxy-init``: Ferry's globus-url-copy inherits it."""
        return {"X509_CERT_DIR": str(self.certs), "X509_USER_PROXY": str(self.proxy)}
