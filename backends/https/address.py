"""An http(s) address checked, and whether the environment names a proxy for it, without importing aiohttp (~0.2 s)."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..core.errors import BadRequest, Transient


def validate_url(url: str) -> tuple[str, int]:
    """(host, port) of an http(s) URL; a sentence naming what is wrong otherwise."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadRequest(f"'{url}' is not a valid URL ({exc}). Check it and try again.") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise BadRequest(f"'{url}' is not an http:// or https:// URL.")
    if not parts.hostname:
        raise BadRequest(f"'{url}' has no host name. Write it as https://host/path/file.")
    if any(c in url for c in " \t\r\n"):
        raise BadRequest(f"'{url}' contains spaces or line breaks; encode them as %20 or quote the URL.")
    return parts.hostname, port or (443 if parts.scheme.lower() == "https" else 80)


def environment_names_a_proxy() -> bool:
    """Whether the environment (or, on Windows and macOS, the system's settings) names an HTTP(S) proxy.

    Only then is aiohttp's ``trust_env`` on (``session.py``) and the lean path off (``lean.py``). With it on,
    aiohttp looks up the proxy for every request in a worker thread, and reads the netrc file in another: two
    thread hand-overs a request, a tenth of a study of a thousand small runs. Ferry's own login middleware
    (``login.py``) reads ``~/.netrc`` for the address's host, as curl does."""
    from urllib.request import getproxies

    return any(scheme in ("http", "https") for scheme in getproxies())


def where(url: str) -> str:
    """``host:port`` of ``url`` (the host alone on the scheme's own port), as error sentences name a server."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return f"{parts.hostname}:{port}" if port else str(parts.hostname)


def stalled(url: str) -> Transient:
    """A server silent for longer than ``--stall-timeout``, in one sentence for the full client and the lean path."""
    return Transient(f"{where(url)} sent no data for longer than the stall timeout (--stall-timeout); "
                     "Ferry will retry.")
