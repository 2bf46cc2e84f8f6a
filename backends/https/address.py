"""An http(s) address checked without importing aiohttp (~0.2 s): submitting a job only needs this."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..core.errors import BadRequest


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
