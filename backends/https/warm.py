"""Connections opened ahead for the lean path's lanes (``lean.py``), and the TLS context they share.

A list job's catalogue is asked first (ENA's portal: two round trips); the lanes' TCP and TLS handshakes (two
more) can happen meanwhile. ``warm`` opens them on daemon threads; a lane takes one (``take_warm``), and while
some are still being opened it waits for the first of them rather than opening its own, which would take the
whole two round trips again. Each waiting lane claims one connection being opened, so lanes beyond those open
their own at once.

While the catalogue's answer is still arriving (a report of a thousand runs takes two more round trips on a
long path), its first files are asked for on the connections ready, or on each as it becomes ready
(``ask_ahead``: one each, small files only):
their answers start coming, and the connections' windows opening, before the job exists. The lane that fetches
such a file takes the connection it was asked on (``take_asked``) and reads the answer as its own; no other lane
is handed that connection (``take_warm``), and one left unclaimed (its run filtered out, a study refused) closes
unread with the others. A lane holding an idle connection of its own gives it back for the one asked on.
"""

from __future__ import annotations

import ssl
import threading
import time
from urllib.parse import urlsplit

from ..core.netrc import netrc_login
from .address import environment_names_a_proxy
from .pieces import PIECE_LEAST
from .plainhttp import PlainConnection, request_target

#: connections opened ahead wait this long for a lane, then close
WARM_SECONDS = 20.0
_warm: dict[tuple, list[tuple[float, PlainConnection]]] = {}
_opening: dict[tuple, int] = {}  # connections still being opened, by key
_claimed: dict[tuple, int] = {}  # ... that a lane waits for
_plain_hosts: dict[str, bool] = {}  # host → no login for it in ~/.netrc (the lean path takes it)
_wanted: dict[tuple, list[str]] = {}  # targets to ask for on the next connections ready, by key
_taken: set[tuple] = set()  # keys a lane has taken connections for: too late to ask ahead
#: files asked for ahead are of less than this: never cut in pieces (``pieces.py``), never the full client's
AHEAD_BELOW = 2 * PIECE_LEAST
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

    # the lean path's own rule (``LeanGetter.takes``), read again for each job's warm-up: ~/.netrc may have changed
    _plain_hosts[parts.hostname] = netrc_login(parts.hostname) is None

    def one() -> None:
        conn = None
        try:
            conn = PlainConnection(key[0], context, connect_seconds, stall_seconds)
        except (OSError, ValueError):
            pass
        with _changed:
            _opening[key] -= 1
            wanted = _wanted.get(key)
            if conn is not None and wanted and key not in _taken and not _send_ahead(conn, wanted.pop(0)):
                conn = None
            if conn is not None:
                _warm.setdefault(key, []).append((time.monotonic(), conn))
            _changed.notify_all()

    with _changed:
        _opening[key] = _opening.get(key, 0) + count
        _taken.discard(key)  # a new job's catalogue: its files may be asked for ahead
    for _ in range(count):
        threading.Thread(target=one, name="ferry-warm", daemon=True).start()
    closer = threading.Timer(WARM_SECONDS + connect_seconds, _close_stale)
    closer.daemon = True
    closer.start()


def take_warm(key: tuple, wait: float) -> PlainConnection | None:
    """A connection opened ahead for ``key`` (``(scheme, host, port), ca_file``) and not asked anything; when none
    is ready but one is being opened that no other lane waits for, that one, waiting at most ``wait`` seconds;
    else None."""
    _close_stale()
    with _changed:
        _lanes_began(key)
        if _unasked(key) is None and _opening.get(key, 0) > _claimed.get(key, 0):
            _claimed[key] = _claimed.get(key, 0) + 1
            try:
                _changed.wait_for(lambda: _unasked(key) is not None or not _opening.get(key, 0), timeout=wait)
            finally:
                _claimed[key] -= 1
        at = _unasked(key)
        return _warm[key].pop(at)[1] if at is not None else None


def _unasked(key: tuple) -> int | None:
    """Where the last ready connection for ``key`` not asked anything is in its list (with ``_changed`` held)."""
    ready = _warm.get(key, [])
    return next((i for i in range(len(ready) - 1, -1, -1) if ready[i][1].ahead is None), None)


def ask_ahead(address: str, ca_file: str | None, size: int) -> bool:
    """Ask for ``address`` (``size`` bytes) on a ready connection opened ahead that nothing was asked on, or on
    the next one to be ready (its answer then comes while the catalogue's still arrives). False, nothing asked,
    when no connection is ready or being opened for it, the lanes have begun, the file is not small, or the
    lean path would not take it."""
    parts = urlsplit(address)
    target = request_target(address)
    if target is None or size >= AHEAD_BELOW or not _plain_hosts.get(parts.hostname or "", False):
        return False
    key = ((parts.scheme, parts.hostname, parts.port), ca_file)
    with _changed:
        if key in _taken:
            return False
        at = _unasked(key)
        if at is not None:
            if _send_ahead(_warm[key][at][1], target):
                return True
            _warm[key].pop(at)  # closed: it failed
            return False
        if _opening.get(key, 0) > len(_wanted.get(key, [])):
            _wanted.setdefault(key, []).append(target)  # asked on the next connection ready
            return True
        return False


def _send_ahead(conn: PlainConnection, target: str) -> bool:
    """The GET of ``target`` on ``conn``, fresh (with ``_changed`` held: a lane sees it asked or not, never
    half-way; a request of a few hundred bytes on an idle connection does not wait); closed if it fails."""
    try:
        conn.send_get(target)
    except OSError:
        conn.close()
        return False
    conn.ahead = target
    return True


def _lanes_began(key: tuple) -> None:
    """From the first lane on, nothing more is asked ahead for ``key`` (with ``_changed`` held)."""
    _taken.add(key)
    _wanted.pop(key, None)


def asked_ahead(key: tuple, target: str) -> bool:
    """Whether ``target`` was asked for on a connection opened ahead that no lane has taken yet."""
    with _changed:
        return any(conn.ahead == target for _, conn in _warm.get(key, []))


def take_asked(key: tuple, target: str) -> PlainConnection | None:
    """The ready connection ``target`` was asked for on (``ask_ahead``), its answer unread; else None."""
    with _changed:
        _lanes_began(key)
        ready = _warm.get(key, [])
        at = next((i for i, (_, conn) in enumerate(ready) if conn.ahead == target), None)
        return ready.pop(at)[1] if at is not None else None


def give_back(key: tuple, conn: PlainConnection) -> None:
    """A lane's idle connection (nothing asked on it), for another lane, as one opened ahead; closed if unused."""
    with _changed:
        _warm.setdefault(key, []).append((time.monotonic(), conn))
        _changed.notify_all()
    closer = threading.Timer(WARM_SECONDS + 1, _close_stale)
    closer.daemon = True
    closer.start()


def _close_stale() -> None:
    now, stale = time.monotonic(), []
    with _changed:
        for key, ready in list(_warm.items()):
            stale += [conn for opened, conn in ready if now - opened > WARM_SECONDS]
            _warm[key] = [(opened, conn) for opened, conn in ready if now - opened <= WARM_SECONDS]
    for conn in stale:
        conn.close()
