"""Logins from the user's netrc file, as curl, wget and aria2c read them: ``machine HOST login USER password
SECRET`` lines in ``$NETRC``, else ``~/.netrc``, else (Windows' name for it) ``~/_netrc``. An address that
names no user gets the file's login for its host (or its ``default`` entry); one that names a user and no
password gets that user's password there. A file that cannot be read or parsed gives nothing, never an error:
the server's refusal then says what is missing."""

from __future__ import annotations

import logging
import netrc
import os
from pathlib import Path

log = logging.getLogger(__name__)


def netrc_path() -> Path | None:
    named = os.environ.get("NETRC")
    if named:
        return Path(named).expanduser()
    home = Path.home()
    for name in (".netrc", "_netrc"):
        if (home / name).is_file():
            return home / name
    return None


def netrc_login(host: str, user: str | None = None) -> tuple[str, str] | None:
    """(login, password) for ``host`` (and ``user``, when the address names one), or None."""
    path = netrc_path()
    if path is None or not host:
        return None
    try:
        entry = netrc.netrc(str(path)).authenticators(host)
    except (OSError, netrc.NetrcParseError) as exc:
        log.info("netrc %s not used: %s", path, exc)
        return None
    if not entry:
        return None
    login, _, password = entry
    if not login or password is None or (user and login != user):
        return None
    return login, password
