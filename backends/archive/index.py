"""The index an archive carries as its last member: every member's name, kind, offsets, size, mode, time and
SHA-256 (and a large file's pieces' SHA-256s), one JSON line each.

``ls`` and ``unpack --only`` read it from the end (the last ``TAIL`` bytes name where it starts) and then only
the members asked for. Its last line holds its own offset, length and SHA-256, so an index that was cut or
changed is refused, never trusted. GNU tar and bsdtar see it as a file named ``INDEX_NAME``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

from ..core.errors import Corrupt
from ..host import portable
from .layout import BLOCK, Layout, Member, padded

INDEX_NAME = ".labferry-index"
MAGIC = "labferry-index 1"
#: what is read from the end of an archive to find the index: its last line, its padding, the two zero
#: blocks that end a tar and the record padding after them (at most 10 KiB)
TAIL = 16 << 10
_FOOTER = re.compile(rb"labferry-index-end (\d{1,20}) (\d{1,20}) ([0-9a-f]{64})\n")
#: the longest index line read (a name is at most a few KiB; a large file lists a digest per 64 MiB piece)
LONGEST_LINE = 1 << 22


def head(member: Member) -> str:
    """A member's index line without its digests (made once a member, before the pack starts)."""
    line = {"n": member.name, "k": member.kind, "o": member.offset, "d": member.data, "s": member.size,
            "m": member.mode, "t": member.mtime_ns}
    if member.linkname:
        line["l"] = member.linkname
    return json.dumps(line, ensure_ascii=True)


def line(first: str, sha256: str | None, pieces: list[str] | None = None, piece: int = 0) -> str:
    """``first`` (``head``) with the member's SHA-256, and a large file's pieces' and the size they were cut at."""
    tail = f', "h": "{sha256}"' if sha256 else ""
    if pieces:
        tail += f', "p": {json.dumps(pieces)}, "q": {piece}'
    return first[:-1] + tail + "}\n"


def encode(lines: list[str], data_offset: int) -> bytes:
    """The index member's data: the lines, then the footer that points back at them."""
    body = (MAGIC + "\n" + "".join(lines)).encode("ascii")
    return body + f"labferry-index-end {data_offset} {len(body)} {hashlib.sha256(body).hexdigest()}\n".encode()


def member_for(data: bytes, mtime_ns: int) -> Member:
    return Member(INDEX_NAME, "file", len(data), 0o644, mtime_ns)


def trailer(size: int) -> bytes:
    """What follows the index data: its padding, the two zero blocks, and padding to tar's 10 KiB record."""
    end = padded(size) + 2 * BLOCK
    return bytes(padded(size) - size + 2 * BLOCK + (-end % (20 * BLOCK)))


def read(fd: int, total: int, where: str, read_at=None) -> list[Member | dict] | None:
    """The index's lines, or None when the archive has none (a tar made elsewhere). Raises ``Corrupt`` when it
    has one that was cut or changed. ``read_at(offset, length)``: the tar's bytes (decoded from zstd frames);
    by default the file's own, and ``total`` the tar's length."""
    read_at = read_at or (lambda offset, length: _read_all(fd, length, offset))
    tail = read_at(max(0, total - TAIL), min(TAIL, total))
    found = list(_FOOTER.finditer(tail))
    if not found:
        return None
    start, length, digest = int(found[-1].group(1)), int(found[-1].group(2)), found[-1].group(3).decode()
    if start + length > total or length > total:
        raise Corrupt(f"{where}'s index points past its end; the archive was cut or changed. Unpack it without "
                      "the index: labferry unpack --scan.")
    body = read_at(start, length)
    if hashlib.sha256(body).hexdigest() != digest or not body.startswith(MAGIC.encode() + b"\n"):
        raise Corrupt(f"{where}'s index does not match its checksum; the archive was changed. Unpack it without "
                      "the index: labferry unpack --scan.")
    lines = []
    decode = json.JSONDecoder().raw_decode
    try:
        text = body.decode("ascii")  # Ferry writes its index in ASCII (``ensure_ascii``)
    except UnicodeDecodeError:
        raise Corrupt(f"{where}'s index holds bytes Ferry never writes there. Unpack it without the index: "
                      "labferry unpack --scan.") from None
    for number, raw in enumerate(text.split("\n")[1:], start=2):
        if raw:
            if len(raw) > LONGEST_LINE:
                raise Corrupt(f"{where}'s index has a line longer than {LONGEST_LINE} bytes.")
            lines.append(_checked(decode, raw, number, where))
    return lines


#: an index line's fields and their types (``l``, ``h``, ``p`` and ``q`` only where they apply)
_NEEDED = {"n": str, "k": str, "o": int, "d": int, "s": int, "m": int, "t": int}
_OPTIONAL = {"l": str, "h": str, "p": list, "q": int}
_KINDS = ("file", "dir", "symlink", "hardlink")


def _checked(decode, raw: str, number: int, where: str) -> dict:
    """One line as one JSON object with the fields Ferry writes, of their types; anything else (an index another
    program wrote, or damage its own checksum could not see) is refused in a sentence, never half-read."""
    why = ""
    try:
        line, end = decode(raw)
    except ValueError as exc:
        line, end, why = None, 0, f"not JSON: {exc.msg}"
    if not why and end != len(raw):
        why = "more than one value on it"
    elif not why and not isinstance(line, dict):
        why = "not a JSON object"
    elif not why:
        wrong = [k for k, kind in _NEEDED.items() if type(line.get(k)) is not kind]
        wrong += [k for k, kind in _OPTIONAL.items() if k in line and type(line[k]) is not kind]
        if wrong:
            why = f"its field {wrong[0]!r} is missing or of another type"
        elif line["k"] not in _KINDS or min(line["o"], line["d"], line["s"]) < 0:
            why = "its kind or an offset is not one Ferry writes"
        elif not all(isinstance(x, str) for x in line.get("p", [])):
            why = "its pieces' checksums are not text"
    if why:
        raise Corrupt(f"{where}'s index line {number} is not one Ferry writes ({why}). Unpack it without the index: "
                      "labferry unpack --scan.")
    return line


def _read_all(fd: int, length: int, offset: int) -> bytes:
    parts, done = [], 0
    while done < length:
        chunk = portable.pread(fd, min(8 << 20, length - done), offset + done)
        if not chunk:
            break
        parts.append(chunk)
        done += len(chunk)
    return b"".join(parts)


def as_member(line: dict) -> Member:
    """An index line as the member it describes (its header is not needed: the line says it all)."""
    m = Member(line["n"], line["k"], int(line["s"]), int(line["m"]), int(line["t"]), line.get("l", ""))
    m.offset, m.data = int(line["o"]), int(line["d"])
    return m


def assembled(layout: Layout, by_piece: dict[int, str], wholes: dict[int, str]) -> dict[int, list[str]]:
    """Each member's digests: one, or the file's own and then each piece's."""
    digests: dict[int, list[str]] = {}
    for number, piece in enumerate(layout.pieces):
        digests.setdefault(piece.member, []).append(by_piece[number])
    for i, digest in wholes.items():
        digests[i] = [digest, *digests[i]]
    return digests


def pieces_per_member(layout: Layout) -> dict[int, int]:
    counts: dict[int, int] = {}
    for piece in layout.pieces:
        counts[piece.member] = counts.get(piece.member, 0) + 1
    return counts


class IndexWriter:
    """The index member: its size known before the pack starts (digests have a fixed length, and its header is
    one plain block: a short name, whole seconds), written last."""

    def __init__(self, layout: Layout, piece: int, stamp_ns: int | None = None) -> None:
        self.layout, self.piece = layout, piece
        stamp_ns = time.time_ns() if stamp_ns is None else stamp_ns
        self.stamp = stamp_ns // 1_000_000_000 * 1_000_000_000
        self.data_offset = layout.end + BLOCK
        self.heads = [head(m) for m in layout.members]
        counts = pieces_per_member(layout)
        blank = {i: ["0" * 64] * (n + 1 if n > 1 else n) for i, n in counts.items()}
        self.size = len(self._data(blank))
        self.total = self.data_offset + self.size + len(trailer(self.size))

    def _data(self, digests: dict[int, list[str]]) -> bytes:
        lines = []
        for i, m in enumerate(self.layout.members):
            found = digests.get(i, [])
            whole = found[0] if m.kind == "file" else None
            lines.append(line(self.heads[i], whole, found[1:] if len(found) > 1 else None, self.piece))
        return encode(lines, self.data_offset)

    def tail(self, digests: dict[int, list[str]]) -> bytes:
        """The index member as the tar's last bytes: its header, its data, the end blocks and the padding."""
        data = self._data(digests)
        header = member_for(data, self.stamp).header
        if len(data) != self.size or len(header) != BLOCK:
            raise RuntimeError("the index came out another size than planned")
        return header + data + trailer(len(data))


def size_of(fd: int) -> int:
    return os.fstat(fd).st_size
