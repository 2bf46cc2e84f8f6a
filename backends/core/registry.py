"""Find backends by URL scheme.

Backends are discovered through the ``labferry.backends`` entry-point group, so a
third-party package can add a protocol by declaring, in its own pyproject::

    [project.entry-points."labferry.backends"]
    myproto = "mypackage.module:MyBackend"

Entry points are loaded lazily (the first lookup), so start-up stays cheap.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit

from .abilities import RouteClaimer
from .base import Backend
from .errors import BadRequest

GROUP = "labferry.backends"
log = logging.getLogger(__name__)


class Registry:
    def __init__(self) -> None:
        self._backends: dict[str, Backend] = {}
        self._loaded = False
        self._scanned = False
        self._own_points: list | None = None

    def register(self, backend: Backend) -> None:
        """Add a backend by hand (tests, or a host application)."""
        self._backends[backend.name] = backend

    def _load(self, everything: bool = False) -> None:
        """Ferry's own backends first (reading one distribution's metadata is ~1 ms); every installed
        distribution's entry points (a scan of site-packages, ~40 ms) only when a lookup needs them."""
        if self._loaded and (self._scanned or not everything):
            return
        if not self._loaded:
            self._loaded = True
            own = self._own()
            self._add(own)
            if own and not everything:
                return
        from importlib.metadata import entry_points

        self._scanned = True
        self._add(entry_points(group=GROUP))

    def _own(self) -> list:
        """Ferry's own entry points, read once (importing importlib.metadata is ~9 ms: only when needed)."""
        if self._own_points is None:
            from importlib.metadata import PackageNotFoundError, distribution

            try:
                self._own_points = [ep for ep in distribution("labferry").entry_points if ep.group == GROUP]
            except PackageNotFoundError:
                self._own_points = []
        return self._own_points

    def _first(self, wanted, likely=lambda name: False) -> Backend | None:
        """The first backend ``wanted(backend)`` takes: of those loaded; then of Ferry's own, loaded one at a
        time, those whose entry point's name is ``likely`` first (an https:// lookup loads HTTPS alone, where
        loading all of them put ~25 ms of imports before a study's first connection); then of every installed
        one. ``likely`` only orders the loading: what a backend takes is its own to say."""
        for backend in list(self._backends.values()):
            if wanted(backend):
                return backend
        for ep in sorted(self._own(), key=lambda ep: not likely(ep.name)):
            if ep.name not in self._backends:
                self._add([ep])
                backend = self._backends.get(ep.name)
                if backend is not None and wanted(backend):
                    return backend
        self._load(everything=True)
        return next((backend for backend in self._backends.values() if wanted(backend)), None)

    def _add(self, found) -> None:
        for ep in found:
            if ep.name in self._backends:
                continue
            try:
                factory = ep.load()
                self._backends[ep.name] = factory()
            except Exception as exc:  # a broken plug-in must not take the app down
                log.warning("backend %s could not be loaded: %s", ep.name, exc)

    def loaded(self) -> list[Backend]:
        """The backends already loaded (without scanning for more)."""
        return list(self._backends.values())

    def all(self) -> list[Backend]:
        self._load(everything=True)
        return list(self._backends.values())

    def get(self, name: str) -> Backend:
        """The backend called ``name``: Ferry's own of that name loaded alone (loading all of them, after an
        address had loaded its own, put ~23 ms of imports before a study's first GET), else any installed."""
        if name not in self._backends:
            self._add([ep for ep in self._own() if ep.name == name])
        if name not in self._backends:
            self._load(everything=True)
        try:
            return self._backends[name]
        except KeyError:
            known = ", ".join(sorted(self._backends))
            raise BadRequest(f"There is no backend called '{name}'. Known: {known}.") from None

    def for_route(self, source: str, dest: str, prefer: str | None = None) -> Backend:
        """The backend for a transfer: the source's scheme (downloads) or the destination's (uploads).

        With no scheme on either side, a backend may claim the route by its ``claims(source, dest)``
        (a local .torrent file is BitTorrent's). ``prefer``: the backend the user named (``--backend``).
        """
        if prefer:
            return self.chosen(prefer, source if scheme_of(source) or not scheme_of(dest) else dest)
        if not scheme_of(source) and not scheme_of(dest):
            for everything in (False, True):
                self._load(everything)
                for backend in self._backends.values():
                    if isinstance(backend, RouteClaimer) and backend.claims(source, dest):
                        return backend
        if scheme_of(source) or not scheme_of(dest):
            return self.for_url(source)
        return self.for_url(dest)

    def chosen(self, name: str, url: str) -> Backend:
        """The backend the user named, if it can take ``url``: its own schemes or the ones it takes when asked
        (``also_schemes``: GridFTP for an ftp:// GridFTP server)."""
        backend = self.get(name)
        scheme = scheme_of(url)
        takes = (*backend.schemes, *getattr(backend, "also_schemes", ()))
        if scheme and scheme not in takes:
            raise BadRequest(f"The {name} backend cannot take {scheme}:// addresses; it takes "
                             f"{', '.join(s + '://' for s in takes) or 'none'}.")
        return backend

    def for_url(self, url: str, prefer: str | None = None) -> Backend:
        """The backend that claims the URL's scheme (or the one the user named)."""
        if prefer:
            return self.chosen(prefer, url)
        scheme = scheme_of(url)
        if scheme and "://" in url:
            _check_authority(url)
        if not scheme:
            raise BadRequest(
                f"'{url}' is not a URL Ferry can fetch. Give a full address such as https://host/path/file."
            )
        backend = self._first(lambda backend: scheme in backend.schemes,
                              likely=lambda name: scheme.startswith(name) or name.startswith(scheme))
        if backend is not None:
            return backend
        known = sorted({s for b in self._backends.values() for s in b.schemes})
        raise BadRequest(
            f"Ferry has no backend for '{scheme}://' addresses. Supported: {', '.join(s + '://' for s in known)}."
        )


def scheme_of(url: str) -> str:
    """The lower-case scheme of ``url``, or "" when it has none (a local path).

    Besides ``scheme://`` addresses, opaque ones with a query right after the colon, as in
    ``magnet:?xt=…`` (a local file name with a colon stays a file name).
    """
    if "://" not in url:
        m = _OPAQUE.match(url)
        return m.group(1).lower() if m else ""
    return url.partition("://")[0].lower() if _SCHEME.fullmatch(url.partition("://")[0]) else ""


def _check_authority(url: str) -> None:
    """A sentence, not a traceback, for an address no protocol can reach: a broken IPv6 literal, a port out of
    range, port 0 (which would be read as "refused" after a connection attempt)."""
    try:
        port = urlsplit(url).port
    except ValueError as exc:
        raise BadRequest(f"'{url}' is not a valid address ({exc}). Check it: an IPv6 host is written in brackets "
                         "as https://[2001:db8::1]:8443/path, and a port is a number from 1 to 65535.") from None
    if port == 0:
        raise BadRequest(f"'{url}' names port 0, which no server listens on. Give the server's port (1-65535), "
                         "or leave it out for the protocol's default.")


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_OPAQUE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):\?")


registry = Registry()
