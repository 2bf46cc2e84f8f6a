"""An archive made on demand, never written here: ``labferry copy FOLDER URL/NAME.tar --pack``.

The layout is computed whole first (``layout.plan``), so every byte's place is known before the first is sent
and any range can be made when an upload stream asks for it: headers from the members, data from the source
files (each read checked against the walk, as ``pack`` checks it), zeros for padding. The bytes are those
``labferry pack`` writes for the same sources, so ``ls``, ``unpack`` and any tar read the file that arrives.

Only the index, the last member, waits: it holds every member's SHA-256, so it exists once one pass has read
the sources in order. That pass is the upload's own whole-file SHA-256 (``sha256``), run beside the streams;
a stream that reaches the index first waits for it. A resume keys on the plan (``resume.plan_key``): the same
unchanged sources make the same bytes, so a range already on the server is not sent again.
"""

from __future__ import annotations

import bisect
import hashlib
import threading

from .index import IndexWriter, assembled, pieces_per_member
from .layout import PIECE, Layout, Member, plan
from .resume import plan_key
from .workers import CHUNK, read_source


class ArchiveImage:
    """The tar of ``layout`` as a file made on demand (``backends.core.made.Made``)."""

    mode = 0o100644

    def __init__(self, layout: Layout, name: str, piece: int = PIECE) -> None:
        self.layout, self.name, self.piece = layout, name, piece
        newest = max((m.mtime_ns for m in layout.members), default=0)
        self.writer = IndexWriter(layout, piece, newest)  # the index's time from the sources: same plan, same bytes
        self.size = self.writer.total
        self.mtime = newest / 1e9
        self.key = f"archive {plan_key(layout, piece)}"
        self._offsets = [m.offset for m in layout.members]
        self._lock = threading.Lock()
        self._tail: bytes | None = None
        self._whole: str | None = None

    @classmethod
    def of(cls, sources: list[str], name: str, *, dereference: bool = False, piece: int = PIECE) -> ArchiveImage:
        return cls(plan(sources, dereference=dereference, piece=piece), name, piece)

    def __str__(self) -> str:
        return f"{self.name} (packed as it is sent)"

    def pread(self, length: int, offset: int) -> bytes:
        """The archive's bytes from ``offset``: ``length`` of them, fewer only at its end."""
        end = min(offset + length, self.size)
        out, at = [], offset
        while at < end:
            if at >= self.layout.end:
                out.append(self._index_tail()[at - self.layout.end:end - self.layout.end])
                break
            m = self.layout.members[bisect.bisect_right(self._offsets, at) - 1]
            data_end = m.data + (m.size if m.kind == "file" else 0)
            if at < m.data:
                stop = min(end, m.data)
                out.append(_header(m)[at - m.offset:stop - m.offset])
            elif at < data_end:
                stop = min(end, data_end)
                out.append(read_source(m.source, m.identity, at - m.data, stop - at))
            else:
                stop = min(end, m.end)
                out.append(bytes(stop - at))
            at = stop
        return b"".join(out)

    def sha256(self, halt: threading.Event | None = None) -> str:
        """The whole archive's SHA-256, read in order; the members' digests for the index come with it. ""
        once ``halt`` is set (the upload stopped)."""
        try:
            self._index_tail(halt)
        except _Halted:
            return ""
        return self._whole or ""

    def _index_tail(self, halt: threading.Event | None = None) -> bytes:
        """The index member and the tar's end. A second caller waits on the lock while the first reads: the
        pass is bounded by the layout, and it is the wait the user sees as "verifying"."""
        with self._lock:
            if self._tail is None:
                self._tail, self._whole = self._read_in_order(halt)
            return self._tail

    def _read_in_order(self, halt: threading.Event | None) -> tuple[bytes, str]:
        layout = self.layout
        whole = hashlib.sha256()
        by_piece: dict[int, str] = {}
        wholes: dict[int, str] = {}
        counts = pieces_per_member(layout)
        own: hashlib._Hash | None = None
        for number, piece in enumerate(layout.pieces):
            if halt is not None and halt.is_set():
                raise _Halted()
            m = layout.members[piece.member]
            if piece.first:
                whole.update(_header(m))
                own = hashlib.sha256() if counts[piece.member] > 1 else None
            part = hashlib.sha256()
            for start in range(piece.start, piece.start + piece.length, CHUNK):
                data = read_source(m.source, m.identity, start, min(CHUNK, piece.start + piece.length - start))
                whole.update(data)
                part.update(data)
                if own is not None:
                    own.update(data)
            by_piece[number] = part.hexdigest()
            if m.kind == "file" and piece.start + piece.length == m.size:
                whole.update(bytes(m.end - m.data - m.size))
                if own is not None:
                    wholes[piece.member] = own.hexdigest()
        tail = self.writer.tail(assembled(layout, by_piece, wholes))
        whole.update(tail)
        return tail, whole.hexdigest()


class _Halted(Exception):
    """The in-order pass was asked to stop (the upload stopped)."""


def _header(m: Member) -> bytes:
    header = m.header
    if len(header) != m.data - m.offset:
        raise RuntimeError(f"the header of {m.name} came out another length than planned")
    return header


def image_of(source: str, name: str) -> ArchiveImage:
    """The archive ``--pack`` sends for the folder or file ``source``, named ``name`` on the far side."""
    return ArchiveImage.of([source], name)
