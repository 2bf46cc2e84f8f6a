"""SIGINT and SIGTERM for every command: each ends the command within seconds with the exit status the README
gives (130 for Ctrl-C, 143 for SIGTERM: 128 + the signal), a summary of what was done, and no traceback.

``install`` makes SIGTERM (and Windows' Ctrl-Break) raise ``Terminated`` in the main thread, as Python makes
SIGINT raise ``KeyboardInterrupt``; both derive from ``BaseException`` so that no ``except Exception`` on the
way up swallows them. A command that can say more (``copy``: what is kept for the resume) catches ``STOPS``
itself; ``app.cli.main`` catches whatever is left.
"""

from __future__ import annotations

import signal
import threading


class Terminated(BaseException):
    """SIGTERM (a batch system's kill, ``kill PID``) arrived."""


#: what a signal raises in the main thread
STOPS = (KeyboardInterrupt, Terminated)


def _terminated(signum, frame) -> None:
    raise Terminated()


def install() -> None:
    """SIGTERM (and SIGBREAK, Windows' Ctrl-Break) as ``Terminated``; the main thread only (signal's rule)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGBREAK"):
        number = getattr(signal, name, None)
        if number is not None:
            try:
                signal.signal(number, _terminated)
            except (OSError, ValueError):
                pass


def status(stop: BaseException) -> int:
    """128 + the signal's number, as shells report it: 143 for SIGTERM, 130 for Ctrl-C."""
    return 143 if isinstance(stop, Terminated) else 130


def said(stop: BaseException) -> str:
    """How the stop is named in a sentence."""
    return "stopped (SIGTERM)" if isinstance(stop, Terminated) else "stopped (Ctrl-C)"
