"""URL helpers every backend and the engine share."""

from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit


def redact(url: str) -> str:
    """The URL without its password, for messages, logs and the store."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None:
        return url
    hostpart = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return parts._replace(netloc=f"{user}:***@{hostpart}" if user else hostpart).geturl()


def host_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def remote_name(url: str) -> str:
    """The file name a URL points at (percent-decoded), or "" when it names a folder."""
    path = unquote(urlsplit(url).path)
    if path.endswith("/"):
        return ""
    return PurePosixPath(path).name


def entry_name(name: str) -> str:
    """``name`` as a new folder's or a renamed entry's name: one path component, or a ``BadRequest`` saying why
    not (a slash would move it elsewhere, ``..`` out of the folder)."""
    from .errors import BadRequest

    name = name.strip()
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise BadRequest(f"'{name}' cannot be a name here: give one name without '/' (and not '.' or '..').")
    return name
