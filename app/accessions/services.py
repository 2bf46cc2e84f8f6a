"""Asking the archives' public services (ENA's Portal API, NCBI's E-utilities), a few times before giving up.

Both answer 5xx and reset connections now and then; a 4xx is the question's fault and is not asked again.
ENA's portal takes minutes to report a large project, so an answer is waited for ``WAIT_SECONDS`` (longer than
its normal worst case), and whoever asked is told it is still waiting (``waiting``) within seconds and then
every ``TELL_EVERY`` seconds, never left at a silent terminal. A 429 or 503 with ``Retry-After`` is waited out
as the service asks. An answer is read up to ``BODY_LIMIT``: memory stays bounded whatever a service sends.
Every failure ends in one sentence naming the service and what to do, never a traceback.
"""

from __future__ import annotations

import contextlib
import contextvars
import email.utils
import http.client
import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from backends.core.errors import BadAnswer, NotFound, Transient, Unreachable

log = logging.getLogger(__name__)

TRIES = 4
#: a read that waits longer than this is a fault (ENA's portal takes minutes for a project of thousands of runs)
WAIT_SECONDS = 300.0
#: the first word that Ferry is still waiting comes after this long, then every TELL_EVERY
FIRST_TELL = 3.0
TELL_EVERY = 10.0
#: the longest Retry-After Ferry waits out
MAX_RETRY_AFTER = 300.0
#: the most an answer may hold (a report of every run of a large project is tens of MiB)
BODY_LIMIT = 512 * 1024 * 1024
#: the most of an answer read at a time when its parts are wanted as they arrive
ARRIVING_PART = 64 * 1024

#: told, from a timer thread, what Ferry is waiting for: "asking ENA's portal about PRJEB1234 (40 s)"
_WAITING: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar("waiting", default=None)
#: run once, as the first question goes out: what is to happen while the services answer
_MEANWHILE: contextvars.ContextVar[list[Callable[[], None]] | None] = contextvars.ContextVar("meanwhile", default=None)


@contextlib.contextmanager
def waiting(tell: Callable[[str], None], meanwhile: Callable[[], None] | None = None):
    """While inside, a question that takes more than a few seconds is told to ``tell`` as it goes on;
    ``meanwhile()`` runs as the first question goes out: what starts then (imports, other connections) does not
    delay that question, which a command needs answered before anything else."""
    token, later = _WAITING.set(tell), _MEANWHILE.set([meanwhile] if meanwhile else [])
    try:
        yield
    finally:
        _WAITING.reset(token)
        _MEANWHILE.reset(later)


class _Teller:
    """Says what is awaited, from a timer thread, until stopped."""

    def __init__(self, what: str) -> None:
        self.what, self.tell = what, _WAITING.get()
        self.began = time.monotonic()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True) if self.tell else None
        if self.thread:
            self.thread.start()

    def _run(self) -> None:
        pause = FIRST_TELL
        while not self.stopped.wait(pause):
            self.tell(f"{self.what} ({time.monotonic() - self.began:.0f} s)…")
            pause = TELL_EVERY

    def stop(self) -> None:
        self.stopped.set()


def _retry_after(exc: urllib.error.HTTPError) -> float | None:
    value = exc.headers.get("Retry-After") if exc.headers else None
    if not value:
        return None
    if value.strip().isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, min(when - time.time(), MAX_RETRY_AFTER))


def _read(url: str, context, arriving: Callable[[bytes], None] | None = None) -> bytes | None:
    with urllib.request.urlopen(url, timeout=WAIT_SECONDS, context=context) as answer:
        if answer.status == 204:
            return None
        if arriving is None:
            body = answer.read(BODY_LIMIT + 1)
        else:
            body = _as_it_arrives(answer, arriving)
        if answer.length and len(body) <= BODY_LIMIT:  # http.client returns a cut answer as if it were whole
            raise ConnectionResetError(f"the answer ended {answer.length} bytes short of its Content-Length")
    if len(body) > BODY_LIMIT:
        raise BadAnswer(f"{url.split('?', 1)[0]} answered with more than {BODY_LIMIT >> 20} MiB; Ferry stopped "
                        "reading. Ask for a smaller part (a study rather than a project).")
    return body


def _as_it_arrives(answer, arriving: Callable[[bytes], None]) -> bytes:
    """The body, each part handed to ``arriving`` as it comes (up to ``BODY_LIMIT`` and a part more). What
    ``arriving`` does is only a head start: its failure is its own, never the question's."""
    parts, held = [], 0
    while held <= BODY_LIMIT:
        part = answer.read1(ARRIVING_PART)
        if not part:
            break
        parts.append(part)
        held += len(part)
        try:
            arriving(part)
        except Exception:  # noqa: BLE001 - asking ahead must never fail the question that matters
            log.debug("the head start on an answer still arriving failed", exc_info=True)
    return b"".join(parts)


def ask(url: str, service: str, about: str, mirror_variable: str, *, ca_file: str | None = None,
        sleep=time.sleep, arriving: Callable[[], Callable[[bytes], None]] | None = None) -> bytes | None:
    """The body ``url`` answers (None for ``204 No Content``: nothing matches). ``service`` names it in
    sentences, ``about`` is what was asked (an accession), ``mirror_variable`` the setting that points
    Ferry elsewhere; ``arriving()`` makes, for each answer (a question asked again is answered from the
    start), what is told the body's parts as they come."""
    context = ssl.create_default_context(cafile=ca_file) if url.startswith("https:") else None
    last: Exception | None = None
    for attempt in range(TRIES):
        teller = _Teller(f"asking {service} about {about}")
        meanwhile = _MEANWHILE.get()
        if meanwhile:
            meanwhile.pop()()
        try:
            return _read(url, context, arriving() if arriving else None)
        except urllib.error.HTTPError as exc:
            if exc.code < 500 and exc.code not in (408, 429):
                raise NotFound(f"{service} refused the query for {about} (HTTP {exc.code}). Check the "
                               "accession.") from None
            last = exc
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:  # reset, cut, garbled
            last = exc
        finally:
            teller.stop()
        if attempt < TRIES - 1:
            asked = _retry_after(last) if isinstance(last, urllib.error.HTTPError) else None
            pause = asked or 2 ** attempt
            if (asked or pause > FIRST_TELL) and (tell := _WAITING.get()):  # a wait the server asked for is said
                tell(f"{service} asks Ferry to wait {pause:.0f} s before asking about {about} again (HTTP "
                     f"{last.code})" if isinstance(last, urllib.error.HTTPError) else
                     f"{service} could not be reached ({getattr(last, 'reason', None) or last}); asking about "
                     f"{about} again in {pause:.0f} s")
            sleep(pause)
    base = url.split("?", 1)[0].rsplit("/", 1)[0]
    if isinstance(last, urllib.error.HTTPError):
        raise Transient(f"{service} at {base} kept failing (HTTP {last.code}) after {TRIES} tries. Try again "
                        "later.")
    reason = getattr(last, "reason", None) or last
    raise Unreachable(f"{service} at {base} could not be reached ({reason}) after {TRIES} tries. Check the "
                      f"network, or set {mirror_variable} to a mirror.")
