"""HTTP plumbing for the HTTPS backend: the aiohttp session, TLS, timeouts, no downgrade to plain http
(errors in words: ``faults.py``)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import aiohttp
from aiohttp import hdrs
from yarl import URL

from ..core.errors import (
    BadAnswer,
    BadRequest,
)
from ..core.urls import redact
from .address import environment_names_a_proxy
from .options import CONNECT_SECONDS, STALL_SECONDS, USER_AGENT
from .trust import lazy_system_folder, verified_context


def tls_context(ca_file: str | None, insecure: bool) -> ssl.SSLContext | bool:
    """The system's trust store plus, with ``--ca-file``, a lab's own CA; verification off only when asked."""
    if insecure:
        return False
    if not ca_file and lazy_system_folder() is None:
        return True  # aiohttp's own verified context, built at its import: building another costs ~45 ms
    try:
        ctx = verified_context(ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise BadRequest(f"Could not read the CA file {ca_file} ({exc}). Give a PEM file with the lab's CA.") from None
    ctx.set_alpn_protocols(["http/1.1"])  # as aiohttp's own contexts say: the one protocol it speaks
    return ctx


@dataclass
class HttpTimeouts:
    connect: float = CONNECT_SECONDS
    stall: float = STALL_SECONDS


REDIRECTS = (301, 302, 303, 307, 308)


async def no_downgrade(request: aiohttp.ClientRequest, handler) -> aiohttp.ClientResponse:
    """A client middleware (run for every hop of a redirect chain): an https address that redirects to plain
    http is refused, as curl's ``--proto-redir =https`` and a browser's HSTS would. The file would travel
    readable and changeable by anyone on the path while the user believes it came over TLS."""
    response = await handler(request)
    if response.status in REDIRECTS and request.url.scheme == "https":
        location = response.headers.get(hdrs.LOCATION, "")
        to = request.url.join(URL(location)) if location else None
        if to is not None and to.scheme == "http":
            response.release()
            raise BadAnswer(f"{redact(str(request.url))} redirects to the plain http address {redact(str(to))[:200]}"
                            ", where the file would travel unencrypted; Ferry stopped. Ask the server's owner for an "
                            "https address, or give --allow-downgrade to accept it (no password is sent over http).")
    return response


def open_session(ca_file: str | None, insecure: bool, timeouts: HttpTimeouts | None = None,
                 login=None, proxy: str | None = None, allow_downgrade: bool = False) -> aiohttp.ClientSession:
    """One client session for a job; ``login`` (``login.Login``) adds the user's credentials to every request
    to the URL's own host. ``proxy``: the one the user named; without it an institution's proxy settings in
    the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY) are followed (``trust_env``), as curl and wget do,
    when there are any (``environment_names_a_proxy``). ``allow_downgrade``: follow an https → http redirect
    (``no_downgrade``); a login is never sent over plain http all the same (``login.Login``: one origin)."""
    timeouts = timeouts or HttpTimeouts()
    connector = aiohttp.TCPConnector(
        limit=0,  # our streams are the limit; aiohttp's default of 100 would queue them
        ssl=tls_context(ca_file, insecure),
        ttl_dns_cache=300,
        enable_cleanup_closed=True,
    )
    return aiohttp.ClientSession(
        connector=connector,
        auto_decompress=False,  # ranges address bytes on the wire: never let the server gzip them
        read_bufsize=1 << 20,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeouts.connect, sock_read=timeouts.stall),
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity"},
        middlewares=(*(() if allow_downgrade else (no_downgrade,)), *((login,) if login else ())),
        trust_env=not proxy and environment_names_a_proxy(),
        proxy=proxy or None,
    )


async def read_up_to(resp: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, or its first ``limit`` + 1 bytes (``content.read(n)`` may return after the first chunk)."""
    chunks, size = [], 0
    async for data in resp.content.iter_any():
        chunks.append(data)
        size += len(data)
        if size > limit:
            break
    return b"".join(chunks)[:limit + 1]
