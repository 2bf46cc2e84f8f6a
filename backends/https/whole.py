"""One plain GET from byte 0: for servers without Range support or without a size."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from ..core.base import Sink
from ..core.errors import BadAnswer, TransferError, Transient
from ..core.urls import redact
from ..destination import PartFile
from ..streams.floor import RateFloor
from ..streams.hashing import FollowingHasher
from ..streams.inflate import Inflater
from ..streams.ratelimit import RateLimit, pieces
from .faults import answer_error, map_error
from .identity import Validators, refuse_web_page, transport_coding
from .options import STALL_SECONDS

TICK = 0.1


async def fetch_whole(
    session: aiohttp.ClientSession,
    url: str,
    validators: Validators,
    part: PartFile,
    sink: Sink | None,
    hasher: FollowingHasher | None,
    limiter: RateLimit | None,
    *,
    web_page_ok: bool = False,
    stall_seconds: float = STALL_SECONDS,
) -> int:
    """Stream the whole body into ``part`` in order; returns the bytes written. ``validators`` with no size:
    the body ends where the server ends it (chunked, or the connection closes)."""
    written = 0
    try:
        async with session.get(url) as resp:
            if resp.status != 200:
                raise answer_error(resp, url)
            validators.check(resp.headers, url)
            refuse_web_page(resp.headers, str(resp.url), web_page_ok)
            inflater = inflater_for(resp.headers, str(resp.url))
            if inflater is not None:
                validators.decoded, validators.size = resp.headers["Content-Encoding"].strip().lower(), None
                part.limit = None  # the size said was of the compressed body: the inflater bounds what it becomes
            elif validators.size is None and resp.content_length is not None:
                validators.size = resp.content_length  # a HEAD without a size, a GET with one (empty files)
                part.limit = validators.size
            wire, last = 0, time.monotonic()
            floor = RateFloor(stall_seconds, redact(url))
            async for data in pieces(resp.content, limiter):
                wire += len(data)
                floor.feed(len(data))
                for piece in inflater.feed(data) if inflater is not None else (data,):
                    part.write(piece, written)
                    written += len(piece)
                if limiter:
                    await limiter.consume(len(data))
                now = time.monotonic()
                if now - last >= TICK:
                    last = now
                    if sink:
                        sink.progress(written, validators.size, 1)
                    if hasher:
                        hasher.advance(written)
            if inflater is not None:
                tail = inflater.end()
                part.write(tail, written)
                written += len(tail)
                if resp.content_length is not None and wire != resp.content_length:
                    raise Transient(f"The server sent {wire} of {resp.content_length} compressed bytes and closed; "
                                    "Ferry will retry.")
    except (TransferError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_error(exc, url, started=written > 0) from exc
    if validators.size is not None and written != validators.size:
        raise Transient(f"The server sent {written} of {validators.size} bytes and closed; Ferry will retry.")
    return written


def inflater_for(headers, url: str, expected: int | None = None) -> Inflater | None:
    """A bounded inflater for a body the server compressed on its own (``transport_coding``): gzip and deflate
    (zlib's check of gzip's CRC-32 and length, or zlib's Adler-32, at the end); any other coding is refused, in
    one sentence and for good (asking again gets the same answer)."""
    coding = transport_coding(headers, url)
    if coding is None:
        return None
    if coding in ("gzip", "x-gzip", "deflate"):
        return Inflater(url, expected)
    raise BadAnswer(f"The server compressed {redact(url)} with '{coding}' although Ferry asked for the file as it "
                    "is, and Ferry cannot undo that coding. Ask the server's owner to serve it uncompressed.")


async def probe_whole(session: aiohttp.ClientSession, url: str, seconds: float) -> tuple[int, float]:
    """Read one plain GET for ``seconds`` and drop the data (a preflight on a server without ranges)."""
    moved, first, stop_at = 0, None, 0.0
    try:
        async with session.get(url) as resp:
            if resp.status != 200:
                raise answer_error(resp, url)
            async for data in resp.content.iter_any():
                now = time.monotonic()
                if first is None:
                    first, stop_at = now, now + seconds
                moved += len(data)
                if now >= stop_at:
                    break
    except TransferError:
        raise
    except Exception as exc:
        raise map_error(exc, url, started=moved > 0) from exc
    return moved, (time.monotonic() - first) if first is not None else 0.0
