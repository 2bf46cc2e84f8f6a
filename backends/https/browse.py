"""A web folder (Apache, nginx or lighttpd autoindex) as the window's read-only folder pane sees it.

The names come from ``index.read_listing`` (the same rules as a folder download). A listing shows each
entry's date and size as text after its link, in each server's own format; a date is read in the three
formats below (as UTC: nginx's default, and what a server without a time zone in its page leaves us). A size
is kept only when the page gives it in bytes (nginx's default ``autoindex_exact_size on``); ``1.2K`` is a
rounded figure, so the pane leaves it blank rather than show a guess as a count of bytes.
"""

from __future__ import annotations

import calendar
import re
import time

from ..core.abilities import EntriesSink, FolderEntry
from ..core.errors import BadRequest
from ..core.urls import redact
from .index import Listing, fetch_listing

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                       "Dec"), 1)}
_DATES = (
    # nginx: 25-Nov-2026 10:00
    (re.compile(r"(?P<d>\d{2})-(?P<mon>[A-Z][a-z]{2})-(?P<y>\d{4}) (?P<H>\d{2}):(?P<M>\d{2})"), "mon"),
    # Apache: 2026-11-25 10:00
    (re.compile(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2})"), "m"),
    # lighttpd: 2026-Nov-25 10:00:00
    (re.compile(r"(?P<y>\d{4})-(?P<mon>[A-Z][a-z]{2})-(?P<d>\d{2}) (?P<H>\d{2}):(?P<M>\d{2}):(?P<S>\d{2})"), "mon"),
)


def date_and_size(tail: str) -> tuple[float | None, int | None]:
    """The date (seconds since the epoch) and exact size in bytes a listing's text after a link shows."""
    for pattern, month in _DATES:
        found = pattern.search(tail)
        if found is None:
            continue
        parts = found.groupdict()
        mon = _MONTHS.get(parts["mon"]) if month == "mon" else int(parts["m"])
        if mon is None:
            continue
        stamp = (int(parts["y"]), mon, int(parts["d"]), int(parts["H"]), int(parts["M"]), int(parts.get("S") or 0))
        try:
            when = float(calendar.timegm(time.struct_time((*stamp, 0, 0, 0))))
        except (OverflowError, ValueError):
            when = None
        words = tail[found.end():].split()
        size = int(words[0]) if words and words[0].isdigit() else None
        return when, size
    return None, None


def entries_of(listing: Listing) -> list[FolderEntry]:
    out = []
    for names, is_dir in ((listing.folders, True), (listing.files, False)):
        for name, _ in names:
            when, size = date_and_size(listing.tails.get(name, ""))
            out.append(FolderEntry(name, is_dir, None if is_dir else size, when))
    return out


async def list_folder(session, url: str, on_entries: EntriesSink | None = None) -> list[FolderEntry]:
    url = url if url.endswith("/") else url + "/"
    listing = await fetch_listing(session, url)
    if listing is None:
        raise BadRequest(f"{redact(url)} is not a folder listing (the server shows no index there), so Ferry "
                         "cannot browse it. Type the address of the file instead.")
    found = entries_of(listing)
    if on_entries is not None and found:
        on_entries(found)
    return found
