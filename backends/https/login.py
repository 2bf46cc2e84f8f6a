"""HTTP logins (Basic and Digest) sent on every request to the URL's own origin, never to another host.

The user and password come from the URL (``https://user:pass@host/…``, a site profile's keyring secret put
there in memory by the front door). aiohttp sends URL credentials only with the request that carries them:
the ranges after the first answer, the retries and the final check went without and got 401. Here the
credentials leave the URL, and a client middleware adds them to every request whose origin is the URL's
own: Basic pre-emptively once the server has asked for it, Digest through aiohttp's own middleware (which
answers each challenge with a fresh nonce count). A redirect to another host gets nothing.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit, urlunsplit

import aiohttp
from aiohttp import hdrs
from yarl import URL

from ..core.netrc import netrc_login


def split_login(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user and password, and those (decoded); None when it names no user."""
    parts = urlsplit(url)
    if not parts.username:
        return url, netrc_login(parts.hostname or "")  # the user's ~/.netrc, as curl --netrc-optional reads it
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    user = unquote(parts.username)
    if parts.password is None and (found := netrc_login(parts.hostname or "", user)):
        return urlunsplit(parts._replace(netloc=netloc)), found
    return urlunsplit(parts._replace(netloc=netloc)), (user, unquote(parts.password or ""))


class Login:
    """A client middleware: the login for one origin, Basic or Digest as the server asks."""

    def __init__(self, url: str, user: str, password: str) -> None:
        self.origin = URL(url).origin()
        self.user, self.password = user, password
        self.scheme: str | None = None  # "basic" or "digest", once the server has said which
        self._digest = aiohttp.DigestAuthMiddleware(user, password, preemptive=True)

    async def __call__(self, request: aiohttp.ClientRequest, handler) -> aiohttp.ClientResponse:
        if request.url.origin() != self.origin:
            return await handler(request)  # another host (a redirect to a mirror or a CDN): no credentials
        if self.scheme == "digest":
            return await self._digest(request, handler)
        if self.scheme == "basic":
            request.headers[hdrs.AUTHORIZATION] = aiohttp.BasicAuth(self.user, self.password).encode()
            return await handler(request)
        response = await handler(request)
        if response.status != 401:
            return response
        challenge = response.headers.get(hdrs.WWW_AUTHENTICATE, "").strip().lower()
        if challenge.startswith("digest"):
            self.scheme = "digest"
        elif challenge.startswith("basic"):
            self.scheme = "basic"
        else:
            return response  # a login Ferry does not speak (Negotiate, a form): the 401 says so
        response.release()
        return await self(request, handler)
