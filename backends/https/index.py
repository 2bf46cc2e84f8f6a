"""Web folders: a directory listing (Apache, nginx, lighttpd autoindex) read as a folder of files.

A listing is recognised by its title ("Index of /path", or Python's "Directory listing for"), never guessed
from any HTML page. Its links are followed only below the start address, as ``wget -r -np`` does: links with
a query (Apache's sort links), to another host, to the parent or outside the start folder are not files of
the folder. Names come from the link's path, percent-decoded to bytes, so a name that is not UTF-8 lands
byte for byte as it is on the server; a name that would lead out of the destination stops the job.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote, unquote, unquote_to_bytes, urljoin, urlsplit

import aiohttp

from ..core.depth import MAX_DEPTH, too_deep
from ..core.errors import BadRequest, TransferError
from ..core.urls import redact
from ..core.words import counted
from ..destination.names import Renamed, one_part
from .faults import answer_error, map_error
from .session import read_up_to
from .whole import inflater_for

PAGE_LIMIT = 32 * 1024 * 1024  # a listing of ~200,000 names
MAX_FILES = 1_000_000
MAX_LISTINGS = 100_000  # folders read in one walk
PAGES_AT_ONCE = 8
INDEX_TITLES = ("index of ", "directory listing for ")


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.tails: list[str] = []  # the text after each link up to the next one: a listing's date and size
        self.title = ""
        self._in_title = self._in_link = False

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)
                self.tails.append("")
            self._in_link = True
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag == "a":
            self._in_link = False
        elif tag in ("td", "tr") and self.tails:
            self.tails[-1] += " "  # table cells (Apache, lighttpd) stay apart as words

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif self.tails and not self._in_link:
            self.tails[-1] += data


@dataclass
class Listing:
    url: str  # the folder's own address (where redirects ended, with its trailing slash)
    files: list[tuple[str, str]]  # (name, URL)
    folders: list[tuple[str, str]]
    tails: dict[str, str] = field(default_factory=dict)  # name → the text the page shows after its link
    #: names that held a separator, kept one name (``%2F``) and reported
    renamed: list[Renamed] = field(default_factory=list)

    def signature(self) -> tuple:
        """What the listing holds: names, kinds and the size and date the page shows after each. Only a listing
        the same as one above it in all of them is an alias; a real ``run/run/`` beside its parent's
        ``reads.txt`` differs at least in a date or a size."""
        return (tuple((name, " ".join(self.tails.get(name, "").split())) for name, _ in self.files),
                tuple((name, " ".join(self.tails.get(name, "").split())) for name, _ in self.folders))


def read_listing(html: str, url: str) -> Listing | None:
    """The files and sub-folders an index page at ``url`` links to; None when the page is no listing."""
    parser = _Links()
    parser.feed(html)
    parser.close()
    if not parser.title.strip().lower().startswith(INDEX_TITLES):
        return None
    base = urlsplit(url)
    files: dict[str, str] = {}
    folders: dict[str, str] = {}
    tails: dict[str, str] = {}
    renamed: list[Renamed] = []
    for href, tail in zip(parser.hrefs, parser.tails, strict=True):
        target = urlsplit(urljoin(url, href))
        if target.query or (target.scheme, target.netloc) != (base.scheme, base.netloc):
            continue
        if not target.path.startswith(base.path) or len(target.path) <= len(base.path):
            continue  # the parent, the folder itself, or somewhere else on the server
        below = target.path[len(base.path):]
        is_folder = below.endswith("/")
        if "/" in below.rstrip("/"):
            continue  # a link further down than one level is not an entry of this folder
        name, changed = one_part(os.fsdecode(unquote_to_bytes(below.rstrip("/"))))
        if name in ("", ".", ".."):
            continue  # the folder itself or its parent, spelt another way
        if changed:
            renamed.append(changed)
        (folders if is_folder else files)[name] = target._replace(fragment="").geturl()
        tails[name] = tail
    return Listing(url, sorted(files.items()), sorted(folders.items()), tails, renamed)


async def fetch_listing(session: aiohttp.ClientSession, url: str) -> Listing | None:
    """GET ``url``: its listing, or None when the answer is not a directory listing."""
    try:
        async with session.get(url) as resp:
            if resp.status != 200:
                raise answer_error(resp, url)
            media = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if media not in ("text/html", "application/xhtml+xml"):
                return None
            inflater = inflater_for(resp.headers, str(resp.url), PAGE_LIMIT + 1)
            body = await read_up_to(resp, PAGE_LIMIT)
            if inflater is not None:
                body = b"".join(inflater.feed(body)) + inflater.end()
            final = str(resp.url)
            charset = resp.charset or "utf-8"
    except (TransferError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_error(exc, url) from exc
    if len(body) > PAGE_LIMIT:
        raise BadRequest(f"The listing at {redact(url)} is larger than {PAGE_LIMIT >> 20} MiB; Ferry does not read "
                         "it as a folder. Copy its sub-folders one by one.")
    try:
        text = body.decode(charset, "surrogateescape")
    except LookupError:
        text = body.decode("utf-8", "surrogateescape")
    return read_listing(text, final)


@dataclass
class Found:
    rel: str
    url: str


@dataclass
class Walked:
    """A web folder read to its end: its files and sub-folders, and what was left out as a loop."""

    files: list[Found] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    #: folders whose address was seen already, or whose listing repeats one above them (a link back)
    skipped: list[str] = field(default_factory=list)
    renamed: list[Renamed] = field(default_factory=list)
    listings: int = 0

    def skipped_note(self) -> str | None:
        if not self.skipped:
            return None
        count = len(self.skipped)
        shown = ", ".join(self.skipped[:3]) + (f" and {count - 3} more" if count > 3 else "")
        verb = "it links" if count == 1 else "they link"
        return (f"{counted(count, 'folder')} left out: {verb} back to a folder already copied (the same address, or "
                f"the same listing as a folder above): {shown}.")


def normalized(url: str) -> str:
    """One spelling of a folder's address: scheme and host in lower case, the default port dropped, the path's
    percent-escapes decoded and re-encoded one way, ``//`` and ``/./`` folded."""
    parts = urlsplit(url)
    port = parts.port
    netloc = (parts.hostname or "").lower() + (f":{port}" if port and port not in (80, 443) else "")
    path = quote(unquote(parts.path), safe="/")
    while "//" in path or "/./" in path:
        path = path.replace("//", "/").replace("/./", "/")
    return f"{parts.scheme.lower()}://{netloc}{path}"


async def walk(session: aiohttp.ClientSession, top: Listing, max_depth: int = MAX_DEPTH) -> Walked:
    """Every file below ``top`` (its sub-folders' listings read ``PAGES_AT_ONCE`` at a time). Every walk ends: a
    folder is visited once by its normalized address, a listing that repeats one of its ancestors' is a link back
    (servers alias folders, so addresses differ), and the depth, the listings read and the files found are
    bounded."""
    walked = Walked(renamed=list(top.renamed))
    gate = asyncio.Semaphore(PAGES_AT_ONCE)
    seen = {normalized(top.url)}

    def bounded(depth: int) -> None:
        if len(walked.files) > MAX_FILES:
            raise BadRequest(f"{redact(top.url)} lists more than {MAX_FILES:,} files; Ferry stopped. Copy its "
                             "sub-folders one by one.")
        if walked.listings > MAX_LISTINGS:
            raise BadRequest(f"{redact(top.url)} has more than {MAX_LISTINGS:,} folders; Ferry stopped. Copy its "
                             "sub-folders one by one.")
        if depth >= max_depth:
            raise too_deep(redact(top.url), max_depth)

    async def visit(listing: Listing, prefix: str, depth: int, above: tuple) -> None:
        walked.files.extend(Found(prefix + name, url) for name, url in listing.files)
        bounded(0)
        children = []
        for name, url in listing.folders:
            key = normalized(url)
            if key in seen:
                walked.skipped.append(prefix + name)
                continue
            seen.add(key)
            children.append(_child(url, prefix + name, depth, above + (listing.signature(),)))
        await asyncio.gather(*children)

    async def _child(url: str, rel: str, depth: int, above: tuple) -> None:
        async with gate:
            walked.listings += 1
            bounded(depth)
            listing = await fetch_listing(session, url)
        if listing is None:
            raise BadRequest(f"{redact(url)} looked like a sub-folder in the listing but is not a listing itself; "
                             "Ferry stopped rather than copy part of the folder.")
        if listing.signature() in above:
            walked.skipped.append(rel)
            return
        walked.folders.append(rel)
        walked.renamed.extend(listing.renamed)
        await visit(listing, rel + "/", depth + 1, above)

    await visit(top, "", 0, ())
    return walked
