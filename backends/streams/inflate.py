"""Bodies a server compressed unasked (``Content-Encoding: gzip`` on a file Ferry asked for as it is), undone
here with bounds: memory and disk stay bounded whatever the compressed bytes claim.

A gzip bomb is a few MiB that inflate to GiB of zeros. So the output is produced in pieces of at most
``PIECE`` bytes (never one call that inflates a whole chunk at once), and it may never pass what was promised:
the file's announced size when a listing or report gave one, else ``MAX_INFLATION`` times the compressed bytes
read so far. Real data sent so (text, FASTQ) inflates 3 to 10 times; past that, the server's answer can never
become the file and the copy stops in one sentence (``BadAnswer``), never retried.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from ..core.errors import BadAnswer, Corrupt, Transient
from ..core.urls import redact
from ..core.words import human_size

#: the most a compressed body may inflate, when no size was announced for what it inflates to
MAX_INFLATION = 100
#: allowed above the ratio, so a small file of one repeated line is not refused
SLACK = 1 << 20
#: the most bytes one step of inflating produces
PIECE = 4 << 20


class Inflater:
    """gzip or zlib (told by the header), bounded; ``feed`` yields the plain bytes a compressed chunk holds."""

    def __init__(self, url: str, expected: int | None = None) -> None:
        self.url, self.expected = url, expected
        self._z = zlib.decompressobj(wbits=47)
        self.wire = 0
        self.out = 0

    def _bound(self) -> int:
        return self.expected if self.expected is not None else MAX_INFLATION * self.wire + SLACK

    def _piece(self, data: bytes) -> bytes:
        try:
            piece = self._z.decompress(data, PIECE)
        except zlib.error as exc:
            raise Corrupt(f"The server's compressed copy of {redact(self.url)} is damaged ({exc}). Run the transfer "
                          "again; if it fails again, ask the server's owner.") from None
        self.out += len(piece)
        if self.out > self._bound():
            raise self._bomb()
        return piece

    def _bomb(self) -> BadAnswer:
        if self.expected is not None:
            return BadAnswer(f"The server's compressed copy of {redact(self.url)} inflates past the "
                             f"{human_size(self.expected)} announced for it; Ferry stopped and kept nothing under its "
                             "name. Ask the server's owner.")
        return BadAnswer(f"The server compressed {redact(self.url)} although Ferry asked for it as it is, and it "
                         f"inflates more than {MAX_INFLATION} times ({human_size(self.wire)} to over "
                         f"{human_size(self.out)}): a decompression bomb or a broken server. Ferry stopped and kept "
                         "nothing under its name; ask the server's owner to serve the file as it is.")

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The plain bytes of ``data``, piece by piece (each at most ``PIECE``)."""
        self.wire += len(data)
        piece = self._piece(data)
        while True:
            if piece:
                yield piece
            tail = self._z.unconsumed_tail
            if not tail:
                return
            piece = self._piece(tail)

    def end(self) -> bytes:
        """What is left at the end of the body; a body cut before its end marker is a fault to retry."""
        try:
            rest = self._z.flush()
        except zlib.error as exc:
            raise Corrupt(f"The server's compressed copy of {redact(self.url)} is damaged ({exc}).") from None
        self.out += len(rest)
        if self.out > self._bound():
            raise self._bomb()
        if not self._z.eof:
            raise Transient(f"The compressed copy of {redact(self.url)} ended before its end marker; Ferry will "
                            "retry.")
        return rest
