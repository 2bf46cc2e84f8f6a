"""One plain GET from byte 0: for servers without Range support or without a size."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from ..core.base import Sink
from ..core.errors import TransferError, Transient
from ..streams.hashing import FollowingHasher
from ..streams.partfile import PartFile
from ..streams.ratelimit import RateLimit
from .identity import Validators, refuse_web_page
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
            if validators.size is None and resp.content_length is not None:
                validators.size = resp.content_length  # a HEAD without a size, a GET with one (empty files)
            refuse_web_page(resp.headers, str(resp.url), web_page_ok)
            last = time.monotonic()
            async for data in resp.content.iter_any():
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
    except (TransferError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_error(exc, url, started=written > 0) from exc
    if validators.size is not None and written != validators.size:
        raise Transient(f"The server sent {written} of {validators.size} bytes and closed; Ferry will retry.")
    return written


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
