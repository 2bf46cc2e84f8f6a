"""The one progress line every command shows (copy, a study by accession, torrent create and seed).

On a terminal it rewrites itself in place. Where stderr is not a terminal (a batch job's log, ``2> log``,
``| tee``) it prints one plain line every ``LOG_EVERY`` seconds instead of a carriage-return storm, as curl and
rclone do for logs; the first comes after that long, so a command that ends sooner leaves only its summary (a
failure stays one sentence on stderr). ``--quiet`` shows none. Sentences (notes, retries) go on their own
lines either way. No colours are used, so ``NO_COLOR`` holds; with ``TERM=dumb`` the line is a log's.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

#: seconds between lines in a log (``LABFERRY_PROGRESS_EVERY`` sets another)
LOG_EVERY = 10.0


def _log_every() -> float:
    try:
        return max(0.1, float(os.environ.get("LABFERRY_PROGRESS_EVERY", LOG_EVERY)))
    except ValueError:
        return LOG_EVERY


class ProgressLine:
    def __init__(self, enabled: bool = True, stream: TextIO | None = None, every: float | None = None) -> None:
        self.stream = stream or sys.stderr
        tty = _is_tty(self.stream)
        self.mode = "off" if not enabled else "tty" if tty else "log"
        self.every = every if every is not None else _log_every()
        self.width = 0
        self._last = time.monotonic()  # a log's first line after ``every`` seconds: a quick end says nothing more
        self._pending = ""

    def show(self, text: str) -> None:
        """The line now (a terminal), or when ``every`` seconds have passed since the last one (a log)."""
        if self.mode == "tty":
            self.stream.write("\r" + text.ljust(self.width))
            self.stream.flush()
            self.width = len(text)
        elif self.mode == "log":
            self._pending = text
            now = time.monotonic()
            if now - self._last >= self.every:
                self._last = now
                self.stream.write(text + "\n")
                self.stream.flush()
                self._pending = ""

    def say(self, message: str) -> None:
        """A sentence on its own line (the progress line comes back with the next ``show``)."""
        self.clear()
        print(message, file=self.stream)

    def clear(self) -> None:
        if self.mode == "tty" and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0

    def done(self) -> None:
        """The end: a terminal's line cleared; a log keeps nothing half-said (the summary follows)."""
        self.clear()
        self._pending = ""


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False
