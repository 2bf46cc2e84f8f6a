"""Asking the server about a file: HEAD (or a one-byte GET), and published checksum sidecars."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

import aiohttp

from ..core.base import Checksum, RemoteInfo
from ..core.checksums import SIDECARS, parse_sidecar
from ..core.errors import TransferError
from ..core.urls import remote_name
from .faults import answer_error, map_error
from .session import read_up_to

SIDECAR_LIMIT = 64 * 1024


async def head(session: aiohttp.ClientSession, url: str) -> tuple[RemoteInfo, float]:
    """Size, validators and range support of ``url``; plus the request's latency."""
    began = time.monotonic()
    try:
        async with session.head(url, allow_redirects=True) as resp:
            if resp.status in (405, 501):
                return await _range_probe(session, url, began)
            if resp.status >= 400:
                raise answer_error(resp, url)
            length = resp.headers.get("Content-Length")
            info = RemoteInfo(
                url=str(resp.url),
                size=int(length) if length and length.isdigit() else None,
                etag=resp.headers.get("ETag"),
                last_modified=resp.headers.get("Last-Modified"),
                accepts_ranges="bytes" in resp.headers.get("Accept-Ranges", "").lower(),
                name=served_name(resp),
            )
    except (TransferError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise map_error(exc, url) from exc
    return info, time.monotonic() - began


async def _range_probe(session: aiohttp.ClientSession, url: str, began: float) -> tuple[RemoteInfo, float]:
    """For servers that refuse HEAD: a one-byte ranged GET tells the same."""
    async with session.get(url, headers={"Range": "bytes=0-0"}) as resp:
        if resp.status not in (200, 206):
            raise answer_error(resp, url)
        full = resp.headers.get("Content-Range", "").rpartition("/")[2]
        length = resp.headers.get("Content-Length")
        size = int(full) if full.isdigit() else (int(length) if resp.status == 200 and length else None)
        info = RemoteInfo(
            url=str(resp.url),
            size=size,
            etag=resp.headers.get("ETag"),
            last_modified=resp.headers.get("Last-Modified"),
            accepts_ranges=resp.status == 206,
            name=served_name(resp),
        )
        resp.close()
    return info, time.monotonic() - began


def served_name(resp: aiohttp.ClientResponse) -> str | None:
    """The file name in ``Content-Disposition`` (``filename*`` first, RFC 6266), as the server gave it: the
    caller keeps its last part and makes it safe (``destination.names``)."""
    try:
        disposition = resp.content_disposition
    except (ValueError, UnicodeError):
        return None
    return (disposition.filename if disposition else None) or None


async def find_sidecar(session: aiohttp.ClientSession, url: str) -> Checksum | None:
    """A ``FILE.sha256`` (or ``.md5``) published next to the file, if any."""
    parts = urlsplit(url)
    if parts.query:
        return None  # signed URLs: a sibling address would not be signed
    name = remote_name(url)
    for algorithm, suffix in SIDECARS:
        sidecar_url = parts._replace(path=parts.path + suffix).geturl()
        try:
            async with session.get(sidecar_url) as resp:
                if resp.status != 200 or (resp.content_length or 0) > SIDECAR_LIMIT:
                    continue
                text = (await read_up_to(resp, SIDECAR_LIMIT)).decode("utf-8", "replace")
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            continue
        digest = parse_sidecar(text, algorithm, name)
        if digest:
            return Checksum(algorithm, digest, source=f"the server's {name}{suffix}")
    return None
