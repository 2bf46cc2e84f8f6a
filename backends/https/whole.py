"""One plain GET from byte 0: for servers without Range support or without a size."""

from __future__ import annotations

import asyncio
import time
import zlib

import aiohttp

from ..core.base import Sink
from ..core.errors import Corrupt, TransferError, Transient
from ..core.urls import redact
from ..streams.hashing import FollowingHasher
from ..streams.partfile import PartFile
from ..streams.ratelimit import RateLimit
from .identity import Validators, refuse_web_page, transport_coding
from .session import answer_error, map_error

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
            decoder = body_decoder(resp.headers, str(resp.url))
            if decoder is not None:
                validators.decoded, validators.size = resp.headers["Content-Encoding"].strip().lower(), None
            elif validators.size is None and resp.content_length is not None:
                validators.size = resp.content_length  # a HEAD without a size, a GET with one (empty files)
            wire, last = 0, time.monotonic()
            async for data in resp.content.iter_any():
                wire += len(data)
                if decoder is not None:
                    data = decode(decoder, data, url)
                part.write(data, written)
                written += len(data)
                if limiter:
                    await limiter.consume(len(data))
                now = time.monotonic()
                if now - last >= TICK:
                    last = now
                    if sink:
                        sink.progress(written, validators.size, 1)
                    if hasher:
                        hasher.advance(written)
            if decoder is not None:
                tail = decode(decoder, b"", url, final=True)
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


def body_decoder(headers, url: str):
    """A decoder for a body the server compressed on its own (``transport_coding``): gzip and deflate (zlib's
    check of gzip's CRC-32 and length, or zlib's Adler-32, at the end); any other coding is refused."""
    coding = transport_coding(headers, url)
    if coding is None:
        return None
    if coding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(wbits=47)  # gzip or zlib, told by the header
    raise TransferError(f"The server compressed {redact(url)} with '{coding}' although Ferry asked for the file "
                        "as it is, and Ferry cannot undo that coding. Ask the server's owner to serve it uncompressed.")


def decode(decoder, data: bytes, url: str, *, final: bool = False) -> bytes:
    try:
        out = decoder.decompress(data) if not final else decoder.flush()
    except zlib.error as exc:
        raise Corrupt(f"The server's compressed copy of {redact(url)} is damaged ({exc}). Run the transfer again; "
                      "if it fails again, ask the server's owner.") from None
    if final and not decoder.eof:
        raise Transient(f"The compressed copy of {redact(url)} ended before its end marker; Ferry will retry.")
    return out


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
