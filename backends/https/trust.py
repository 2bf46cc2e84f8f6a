"""The system's CA store, read only when a certificate chain needs it.

``ssl.create_default_context()`` parses the whole system bundle (150 certificates on Debian)
into every context it makes: 45 ms each on this machine with OpenSSL 3. aiohttp builds two
such contexts when it is imported, and ``--ca-file`` needed a third, so an HTTPS job spent
~0.14 s before its first request on certificates it never looks at (a 1 MiB copy over the
loopback: 0.46 s, 0.32 s without). Where OpenSSL's default folder holds the same
certificates under hashed names (``c_rehash``/``update-ca-certificates``, as on Debian,
Ubuntu and Alpine), pointing a context at that folder gives the same trust, and OpenSSL
reads a certificate from it only when it looks for that issuer (1.7 ms per context).

Where that cannot be shown (no hashed folder, a bundle with more certificates than the
folder has names, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` naming other places than OpenSSL's defaults,
Windows' and macOS's own stores), nothing changes: contexts load the default paths as Python does.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import ssl
import sys

_HASHED_NAME = re.compile(r"[0-9a-f]{8}\.\d+")
_BEGIN = b"-----BEGIN CERTIFICATE-----"


@functools.lru_cache(maxsize=1)
def lazy_system_folder() -> str | None:
    """OpenSSL's default CA folder when it alone trusts what the default paths trust, else None."""
    paths = ssl.get_default_verify_paths()  # SSL_CERT_FILE and SSL_CERT_DIR already applied
    if not (_same(paths.cafile, paths.openssl_cafile) and _same(paths.capath, paths.openssl_capath)):
        return None  # pointed at another bundle or folder (a proxy's CA, say): read what was named, as Python does
    return covering_folder(paths.capath, paths.cafile)


def _same(effective: str | None, default: str) -> bool:
    """Whether the path in effect is OpenSSL's own default (None: the default does not exist either)."""
    if effective is None:
        return not os.path.exists(default)
    return os.path.realpath(effective) == os.path.realpath(default)


def covering_folder(folder: str | None, bundle: str | None) -> str | None:
    """``folder`` if it holds hashed names for at least as many certificates as ``bundle`` has."""
    if not folder:
        return None
    try:
        hashed = sum(1 for entry in os.scandir(folder) if _HASHED_NAME.fullmatch(entry.name))
    except OSError:
        return None
    try:
        with open(bundle, "rb") as fh:  # type: ignore[arg-type]  # None: no bundle, caught below
            in_bundle = fh.read().count(_BEGIN)
    except (OSError, TypeError):
        in_bundle = 0
    return folder if hashed and hashed >= in_bundle else None


def verified_context(ca_file: str | None = None) -> ssl.SSLContext:
    """What ``ssl.create_default_context(cafile=ca_file)`` plus the system store gives, built cheaply.

    Raises ``OSError``/``ssl.SSLError`` when ``ca_file`` cannot be read as certificates.
    """
    folder = lazy_system_folder()
    if folder is None:
        ctx = ssl.create_default_context()
        if ca_file:
            ctx.load_verify_locations(cafile=ca_file)
        return ctx
    # with a file or folder given, create_default_context loads those instead of the default paths
    return ssl.create_default_context(cafile=ca_file or None, capath=folder)


def _lazy_default_paths(self: ssl.SSLContext) -> None:
    self.load_verify_locations(capath=lazy_system_folder())


@contextlib.contextmanager
def _default_paths_lazy():
    """While aiohttp is imported, ``set_default_verify_paths`` reads the folder lazily (its two module-level
    contexts: ~90 ms otherwise). Same trust; only the moment certificates are read differs."""
    name = "set_default_verify_paths"
    own = ssl.SSLContext.__dict__.get(name)  # normally None: the method is _ssl._SSLContext's
    setattr(ssl.SSLContext, name, _lazy_default_paths)
    try:
        yield
    finally:
        if own is None:
            delattr(ssl.SSLContext, name)
        else:
            setattr(ssl.SSLContext, name, own)


def import_aiohttp() -> None:
    """Import aiohttp (once), its import-time TLS contexts built over the lazy folder where there is one."""
    if "aiohttp" in sys.modules or lazy_system_folder() is None:
        return
    with _default_paths_lazy():
        import aiohttp  # noqa: F401
