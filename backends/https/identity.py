"""Which file are we fetching? The identity every range response must agree with.

The first usable answer fixes the file's size, ETag and Last-Modified; every
later response is compared with them (and carries ``If-Range``), so a file that
is replaced on the server mid-transfer raises ``RemoteChanged`` instead of
producing a spliced file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.base import RemoteInfo
from ..core.errors import RemoteChanged, Transient, WebPage
from ..core.urls import redact, remote_name
from ..streams.parallel import Fatal

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_UNSATISFIED = re.compile(r"bytes \*/(\d+)")


class RangesIgnored(Fatal):
    """The server answered a Range request with the whole file (HTTP 200)."""


WEB_PAGE_TYPES = ("text/html", "application/xhtml+xml")
HTML_NAMES = (".html", ".htm", ".xhtml", ".shtml")


def refuse_web_page(headers, url: str, allowed: bool) -> None:
    """An HTML answer to an address that does not name an HTML file is not saved as data silently."""
    media = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if allowed or media not in WEB_PAGE_TYPES or remote_name(url).lower().endswith(HTML_NAMES):
        return
    shown = redact(url)
    raise WebPage(f"{shown} is a web page ({media}), not a file: often a login, error or download page in front "
                  "of the data. Open it in a browser to find the file's own address; give --web-page to save the "
                  "page itself.", url=url)


#: a content-coding that is the file's own format when its name says so (``reads.fq.gz`` sent with
#: ``Content-Encoding: gzip`` by Apache's ``AddEncoding``): then the bytes are kept as they are
OWN_FORMAT = {"gzip": (".gz", ".tgz", ".bgz", ".gzip"), "x-gzip": (".gz", ".tgz", ".bgz", ".gzip"),
              "br": (".br",), "zstd": (".zst",), "deflate": (".zz",)}


def transport_coding(headers, url: str) -> str | None:
    """The coding a server put on the body although Ferry asked for the file as is (``Accept-Encoding:
    identity``), to be undone here; None when there is none, or when the URL names a file of that format."""
    coding = headers.get("Content-Encoding", "").strip().lower()
    if coding in ("", "identity") or remote_name(url).lower().endswith(OWN_FORMAT.get(coding, ())):
        return None
    return coding


def same_etag(a: str | None, b: str | None) -> bool:
    """Whether two ETags name the same version: equal, or equal but for a weak ``W/`` prefix. Apache marks the
    ETag of a file changed within the last second weak and the same tag strong a second later (its tag is
    inode, size and time), so a kill in that second, or a download that crosses it, saw a "different" file.
    Size and Last-Modified are compared beside it, so a weak tag alone never vouches for the bytes."""
    if a is None or b is None:
        return a == b
    return a.removeprefix("W/") == b.removeprefix("W/")


@dataclass
class Validators:
    size: int | None
    etag: str | None
    last_modified: str | None
    decoded: str | None = None  # the server's coding, undone while the file came (``transport_coding``)

    @classmethod
    def of(cls, info: RemoteInfo) -> Validators:
        return cls(info.size, info.etag, info.last_modified)

    @classmethod
    def from_partial(cls, headers) -> Validators:
        """From a 206 answer: the total after the slash of Content-Range is the file's size."""
        first, _, full = content_range(headers, url="")
        return cls(int(full) if full != "*" else None, headers.get("ETag"), headers.get("Last-Modified"))

    @property
    def if_range(self) -> str | None:
        """A strong ETag, else nothing: a weak one never matches, and Apache takes a Last-Modified of the current
        second as weak too (a file written a moment ago), answering 200 to every range. Without If-Range every
        206 is still compared with the validators (``check_partial``), which catches the same changes."""
        if self.etag and not self.etag.startswith("W/"):
            return self.etag
        return None

    def check(self, headers, url: str) -> None:
        etag, modified = headers.get("ETag"), headers.get("Last-Modified")
        if self.etag and etag and not same_etag(etag, self.etag):
            raise RemoteChanged(
                f"The file at {redact(url)} changed on the server (ETag {self.etag} → {etag}); starting again."
            )
        if self.last_modified and modified and modified != self.last_modified:
            raise RemoteChanged(
                f"The file at {redact(url)} changed on the server (modified {modified}); starting again."
            )

    def check_partial(self, headers, url: str, offset: int) -> None:
        """A 206 answer for a request starting at ``offset``."""
        self.check(headers, url)
        first, _, full = content_range(headers, url)
        if full != "*" and self.size is not None and int(full) != self.size:
            raise RemoteChanged(
                f"The file at {redact(url)} changed size on the server ({self.size} → {full} bytes); starting again."
            )
        if first != offset:
            raise Transient(f"The server sent bytes from {first} when asked for {offset}; retrying that range.")


def content_range(headers, url: str) -> tuple[int, int, str]:
    match = _CONTENT_RANGE.fullmatch(headers.get("Content-Range", "").strip())
    if not match:
        raise Transient(f"The server sent a partial answer without a usable Content-Range for {redact(url)}.")
    return int(match.group(1)), int(match.group(2)), match.group(3)


def unsatisfied_size(headers) -> int | None:
    """The size a 416 answer reports (``Content-Range: bytes */SIZE``)."""
    match = _UNSATISFIED.fullmatch(headers.get("Content-Range", "").strip())
    return int(match.group(1)) if match else None
