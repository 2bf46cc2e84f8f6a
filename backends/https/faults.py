"""HTTP answers and client faults as Ferry's sentences (what happened, what to do).

Everything that turns an aiohttp exception or an HTTP status into one of Ferry's error sentences is here, so
the fetch logic reads as fetch logic.
"""

from __future__ import annotations

import asyncio
import errno
import ssl
from urllib.parse import urlsplit

import aiohttp
from aiohttp import hdrs

from ..core.errors import (
    AuthError,
    BadAddress,
    BadAnswer,
    BadRequest,
    NotFound,
    PermissionDenied,
    TlsError,
    TransferError,
    Transient,
    Unreachable,
    certificate_error,
)
from ..core.urls import redact
from .address import stalled
from .address import where as where_of

#: redirects followed before "redirect loop" (curl's and aiohttp's default is about the same)
MAX_REDIRECTS = 10


def answer_error(resp: aiohttp.ClientResponse, url: str) -> TransferError:
    """The status of ``resp`` as a sentence; a 401 says whether a login was sent with the request."""
    sent = hdrs.AUTHORIZATION in resp.request_info.headers
    return status_error(resp.status, url, resp.reason or "", login_sent=sent)


def status_error(status: int, url: str, reason: str = "", *, login_sent: bool = False) -> TransferError:
    """An HTTP status that is not the data we asked for, as a sentence."""
    shown = redact(url)
    if status in (404, 410):
        return NotFound(f"The server has no file at {shown} (HTTP {status}). Check the address.")
    if status == 401 and login_sent:
        return AuthError(f"Wrong user or password for {shown}: the server refused the login (HTTP 401). Check "
                         "them (labferry sites add … --ask-secret stores the password in the keyring).")
    if status == 401:
        return AuthError(
            f"The server wants a login for {shown} (HTTP 401). Give the user in the address "
            "(https://USER@host/…; Ferry asks for the password) or use a site profile with a saved password."
        )
    if status == 403:
        return PermissionDenied(f"The server refused access to {shown} (HTTP 403): no access for "
                                f"{'this login' if login_sent else 'anonymous readers'}. Ask its owner for access.")
    answer = f"HTTP {status} {reason}".strip()
    if status in (408, 425, 429) or status >= 500:
        return Transient(f"The server answered {answer} for {shown}; Ferry will retry.")
    return TransferError(f"The server answered {answer} for {shown}, which Ferry cannot use.")


def _tls_error(exc: BaseException, url: str) -> TlsError:
    cert_exc = getattr(exc, "certificate_error", None) or exc
    return certificate_error(urlsplit(url).hostname, str(getattr(cert_exc, "verify_message", "") or cert_exc))


def map_error(exc: BaseException, url: str, *, started: bool = False) -> TransferError:
    """Translate a client exception into Ferry's hierarchy.

    ``started``: bytes already flowed, so a refused or reset connection is the
    server restarting (retry), not a wrong address (fail fast).
    """
    if isinstance(exc, TransferError):
        return exc
    where = where_of(url)
    if isinstance(exc, aiohttp.RedirectClientError):
        to = str(getattr(exc, "url", "") or exc)
        return BadAnswer(f"{redact(url)} redirects to {redact(to)[:200]}, which is not a web address Ferry follows "
                         "(only http and https); Ferry stopped. Ask the server's owner for the file's own address.")
    if isinstance(exc, aiohttp.ClientResponseError) and not isinstance(exc, aiohttp.TooManyRedirects) \
            and exc.status == 400 and not exc.headers:
        said = " ".join(str(exc.message).split())[:80]  # aiohttp's message may quote the bytes over lines
        return BadAnswer(f"The answer of {where} for {redact(url)} is not HTTP Ferry can read ({said}"
                         "): a header block or line beyond any sane size, or malformed. Ferry stopped; asking again "
                         "would get the same answer.")
    if isinstance(exc, (aiohttp.InvalidURL, ValueError)) and not isinstance(exc, ssl.SSLError):
        return BadRequest(f"'{redact(url)}' is not a valid URL ({exc}). Check it and try again.")
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, ssl.SSLCertVerificationError)):
        return _tls_error(exc, url)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        host = urlsplit(url).hostname
        msg = f"Could not find the host {host} (name lookup failed). Check the spelling and your network."
        return Transient(msg) if started else Unreachable(msg)
    if isinstance(exc, aiohttp.ClientConnectorSSLError) or isinstance(exc, ssl.SSLError):
        return TlsError(f"The TLS handshake with {where} failed ({exc}). Is it an https server on that port?")
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_err = getattr(exc, "os_error", None)
        if isinstance(os_err, ConnectionRefusedError) or getattr(os_err, "errno", None) == errno.ECONNREFUSED:
            msg = f"The server at {where} refused the connection. Check the port, or whether the server is running."
        else:
            msg = f"Could not connect to {where} ({os_err or exc}). Check the address and your network."
        return Transient(msg) if started else Unreachable(msg)
    if isinstance(exc, aiohttp.TooManyRedirects):
        hops = [str(r.url) for r in exc.history] or [str(exc.request_info.url)]
        seen = [hop for hop in hops if hops.count(hop) > 1]
        at = redact(seen[0] if seen else hops[-1])
        what = "Redirect loop" if seen else f"More than {MAX_REDIRECTS} redirects"
        start = "" if at == redact(url) else f", reached from {redact(url)}"
        return BadAddress(f"{what} at {at}{start}: the server sends Ferry round in circles. Ask its owner to fix "
                          "the address, or use the final address of the file.")
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return stalled(url)
    if isinstance(exc, (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
        return Transient(f"The connection to {where} broke ({type(exc).__name__}); Ferry will retry.")
    if isinstance(exc, aiohttp.ClientError):
        return Transient(f"The connection to {where} failed ({exc}); Ferry will retry.")
    if isinstance(exc, OSError):
        return Transient(f"Network error talking to {where}: {exc.strerror or exc}.")
    return TransferError(f"Unexpected error talking to {where}: {exc}.")
