"""A server path as a site's folder pane holds it: absolute (``/data/collab``) or below the login folder (``~``,
``~/collab``), never relative to the site's default folder — so Up goes above that folder and a typed absolute
path means what it says, as in FileZilla's and Cyberduck's path bars. ``Site.url_of`` turns one into an address
and ``site:NAME//abs`` / ``site:NAME/~/x`` carry one to the front door.
"""

from __future__ import annotations

import posixpath

LOGIN = "~"


def normal(where: str) -> str:
    """``where`` without ``.``, ``..``, doubled or trailing slashes (``..`` never climbs above ``/`` or ``~``)."""
    if where == LOGIN or where.startswith(LOGIN + "/"):
        rest = posixpath.normpath("/" + where[1:].lstrip("/"))
        return LOGIN if rest == "/" else LOGIN + rest
    return posixpath.normpath("/" + where.lstrip("/"))


def join(where: str, name: str) -> str:
    return normal(f"{where}/{name}")


def parent(where: str) -> str | None:
    """The folder above ``where``; None at ``/`` and at ``~``, whose parent only the server knows (``locate``)."""
    if where in ("/", LOGIN):
        return None
    return normal(posixpath.dirname(where))


def typed(text: str, site_name: str, current: str) -> str:
    """What the user typed in a site pane's path bar: ``NAME:`` may lead; an absolute or ``~`` path is taken as
    it is, anything else below the folder shown (as ``cd`` does)."""
    text = text.strip()
    if text.startswith(site_name + ":"):
        text = text[len(site_name) + 1:].strip()
    if not text:
        return current
    if text.startswith("/") or text == LOGIN or text.startswith(LOGIN + "/"):
        return normal(text)
    return join(current, text)


def below(anchor: str, path: str) -> str:
    """A path given to a pane (``show_site``): absolute and ``~`` paths as they are, others below ``anchor``
    (what ``site:NAME/path`` is below: ``Site.anchor``)."""
    if path.startswith("/") or path == LOGIN or path.startswith(LOGIN + "/"):
        return normal(path)
    return join(anchor, path)


def inside(home: str, where: str) -> str | None:
    """``where`` relative to ``home`` ("" for home itself), or None when it is not below it."""
    home, where = normal(home), normal(where)
    if where == home:
        return ""
    prefix = home.rstrip("/") + "/"
    return where[len(prefix):] if where.startswith(prefix) else None
