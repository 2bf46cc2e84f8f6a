"""Connections opened ahead for the lean path's lanes (``lean.py``), and the TLS context they share.

A list job's catalogue is asked first (ENA's portal: two round trips); the lanes' TCP and TLS handshakes (two
more) can happen meanwhile. ``warm`` opens them on daemon threads; a lane takes one (``take_warm``), and while
some are still being opened it waits for the first of them rather than opening its own, which would take the
whole two round trips again. Each waiting lane claims one connection being opened, so lanes beyond those open
their own at once.
"""

from __future__ import annotations

import ssl
import threading
import time
from urllib.parse import urlsplit

from .address import environment_names_a_proxy
from .plainhttp import PlainConnection

#: connections opened ahead wait this long for a lane, then close
WARM_SECONDS = 20.0
_warm: dict[tuple, list[tuple[float, PlainConnection]]] = {}
_opening: dict[tuple, int] = {}  # connections still being opened, by key
_claimed: dict[tuple, int] = {}  # ... that a lane waits for
_changed = threading.Condition()


def lean_context(ca_file: str | None, insecure: bool, proxy: str | None, limited: bool) -> ssl.SSLContext | None:
    """The lean path's TLS context, or None where the lean path does not apply: TLS checks off, a proxy (named or
    in the environment), a rate limit, or a CA file that cannot be read (the full client says so)."""
    if insecure or proxy or limited or environment_names_a_proxy():
        return None
    from .trust import verified_context

    try:
        context = verified_context(ca_file)
    except (OSError, ssl.SSLError):
        return None
    context.set_alpn_protocols(["http/1.1"])
    return context


def warm(address: str, ca_file: str | None, insecure: bool, proxy: str | None, limited: bool, count: int,
         stall_seconds: float, connect_seconds: float) -> None:
    """Open ``count`` connections to ``address``'s host on daemon threads, for the lanes of a list job that will
    soon fetch from it: a study's small runs, while ENA's portal is asked. Only where the lean path would run;
    what fails to connect is let go (the lanes connect and say why); what is not taken within ``WARM_SECONDS``
    is closed."""
    parts = urlsplit(address)
    context = lean_context(ca_file, insecure, proxy, limited)
    if context is None or parts.scheme not in ("http", "https") or not parts.hostname or count <= 0:
        return
    key = ((parts.scheme, parts.hostname, parts.port), ca_file)

    def one() -> None:
        conn = None
        try:
            conn = PlainConnection(key[0], context, connect_seconds, stall_seconds)
        except (OSError, ValueError):
            pass
        with _changed:
            _opening[key] -= 1
            if conn is not None:
                _warm.setdefault(key, []).append((time.monotonic(), conn))
            _changed.notify_all()

    with _changed:
        _opening[key] = _opening.get(key, 0) + count
    for _ in range(count):
        threading.Thread(target=one, name="ferry-warm", daemon=True).start()
    closer = threading.Timer(WARM_SECONDS + connect_seconds, _close_stale)
    closer.daemon = True
    closer.start()


def take_warm(key: tuple, wait: float) -> PlainConnection | None:
    """A connection opened ahead for ``key`` (``(scheme, host, port), ca_file``); when none is ready but one is
    being opened that no other lane waits for, that one, waiting at most ``wait`` seconds; else None."""
    _close_stale()
    with _changed:
        if not _warm.get(key) and _opening.get(key, 0) > _claimed.get(key, 0):
            _claimed[key] = _claimed.get(key, 0) + 1
            try:
                _changed.wait_for(lambda: _warm.get(key) or not _opening.get(key, 0), timeout=wait)
            finally:
                _claimed[key] -= 1
        ready = _warm.get(key)
        return ready.pop()[1] if ready else None


def _close_stale() -> None:
    now, stale = time.monotonic(), []
    with _changed:
        for key, ready in list(_warm.items()):
            stale += [conn for opened, conn in ready if now - opened > WARM_SECONDS]
            _warm[key] = [(opened, conn) for opened, conn in ready if now - opened <= WARM_SECONDS]
    for conn in stale:
        conn.close()
