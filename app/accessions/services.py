"""Asking the archives' public services (ENA's Portal API, NCBI's E-utilities), a few times before giving up.

Both answer 5xx and reset connections now and then; a 4xx is the question's fault and is not asked again.
Every failure ends in one sentence naming the service and what to do, never a traceback.
"""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request

from backends.core.errors import NotFound, Transient, Unreachable

TRIES = 4


def ask(url: str, service: str, about: str, mirror_variable: str, *, ca_file: str | None = None,
        sleep=time.sleep) -> bytes | None:
    """The body ``url`` answers (None for ``204 No Content``: nothing matches). ``service`` names it in
    sentences, ``about`` is what was asked (an accession), ``mirror_variable`` the setting that points
    Ferry elsewhere."""
    context = ssl.create_default_context(cafile=ca_file) if url.startswith("https:") else None
    last: Exception | None = None
    for attempt in range(TRIES):
        try:
            with urllib.request.urlopen(url, timeout=60, context=context) as answer:
                return None if answer.status == 204 else answer.read()
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code not in (408, 429):
                raise NotFound(f"{service} refused the query for {about} (HTTP {exc.code}). Check the "
                               "accession.") from None
            last = exc
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        if attempt < TRIES - 1:
            sleep(2 ** attempt)
    base = url.split("?", 1)[0].rsplit("/", 1)[0]
    if isinstance(last, urllib.error.HTTPError):
        raise Transient(f"{service} at {base} kept failing (HTTP {last.code}) after {TRIES} tries. Try again "
                        "later.")
    reason = getattr(last, "reason", None) or last
    raise Unreachable(f"{service} at {base} could not be reached ({reason}) after {TRIES} tries. Check the "
                      f"network, or set {mirror_variable} to a mirror.")
