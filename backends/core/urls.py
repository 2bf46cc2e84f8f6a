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


def reads_as_option(value: str) -> bool:
    """Whether a host or user name begins with ``-`` or holds a space or a control character: no real one does,
    and a command built from it would take it for an option or end a line early (``check_authority``)."""
    return value.startswith("-") or any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value)


def check_authority(url: str) -> None:
    """Refuse (``BadRequest``, exit 2) an address whose host or user begins with ``-`` or holds a space or a
    control character, before any command is built from it: ``ssh -oProxyCommand=…`` is an option, not a host,
    and a line break in a user name ends an FTP command. Real host and user names never hold these."""
    from .errors import BadRequest

    try:
        parts = urlsplit(url)
        host, user = parts.hostname, parts.username
    except ValueError:
        return  # each backend says in its own words why the address is not one
    for what, value in (("host name", host), ("user name", user)):
        value = unquote(value) if value else value
        if value and reads_as_option(value):
            raise BadRequest(f"{value!r} in {redact(url)} is not a {what}: it begins with '-' or holds a space or "
                             "a control character. Check the address.")


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


def local_path_of(location: str) -> str:
    """A ``file:`` URL as the local path it names, on any OS (``file:///C:/data/x`` → ``C:/data/x``,
    ``file://server/share/x`` → ``//server/share/x``, a UNC path); anything else as given. What a browser's
    address bar, a Finder "copy as pathname" or Windows' "copy as path" gives is then a local path, never an
    address Ferry has no backend for. Windows paths (``C:\\data``, ``C:/data``, ``\\\\server\\share``) have no
    ``://`` and stay local paths as they are."""
    if not location[:7].lower() == "file://":
        return location
    parts = urlsplit(location)
    path = unquote(parts.path)
    if len(path) >= 3 and path[0] == "/" and path[1].isalpha() and path[2] == ":":
        path = path[1:]  # /C:/data → C:/data
    if parts.netloc and parts.netloc.lower() != "localhost":
        return f"//{parts.netloc}{path}"
    return path or "/"
