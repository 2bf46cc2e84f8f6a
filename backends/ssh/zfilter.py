"""``labferry zstd``: a zstd filter for a server that has Ferry but no ``zstd`` command.

``--compress`` runs ``zstd -1 -cq`` (pack) and ``zstd -dcq`` (unpack) on the server, inside the fixed shell
scripts (``scripts.py``). Where the server has no zstd but has Ferry (an agent's host: a DTN where only
``pip install labferry`` was allowed), the scripts run ``labferry zstd`` with the same flags instead, and this
module does the work with the ``zstandard`` package: the same frames (content checksum on), so either end can
read what the other wrote. A damaged or cut frame ends it with status 1, as zstd does, which the scripts turn
into a range sent again. ``labferry zstd --can`` only answers whether this Ferry can (status 0).

It is started once per range, so ``app.cli.console`` dispatches to it before building its parser.
"""

from __future__ import annotations

import re
import sys

#: read and write in pieces this large: zstd's own CLI works in blocks of about this size
CHUNK = 1 << 20


def main(argv: list[str]) -> int:
    try:
        import zstandard
    except ImportError:
        print("labferry zstd: the zstandard package is not installed with this Ferry.", file=sys.stderr)
        return 2
    if "--can" in argv:
        return 0
    flags = "".join(a[1:] for a in argv if a.startswith("-") and not a.startswith("--"))
    level = re.search(r"\d+", flags)
    source, target = sys.stdin.buffer, sys.stdout.buffer
    try:
        if "d" in flags:
            unpack(zstandard, source, target)
        else:
            pack(zstandard, int(level.group()) if level else 3, source, target)
        target.flush()
    except zstandard.ZstdError as exc:
        print(f"labferry zstd: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    return 0


def pack(zstandard, level: int, source, target) -> None:
    """One frame with its content checksum, as ``zstd -N -c`` writes from a pipe."""
    obj = zstandard.ZstdCompressor(level=level, write_checksum=True).compressobj()
    while chunk := source.read(CHUNK):
        if out := obj.compress(chunk):
            target.write(out)
    target.write(obj.flush())


def unpack(zstandard, source, target) -> None:
    """Every frame in turn, each checked against its checksum; input that ends inside a frame is an error."""
    dctx = zstandard.ZstdDecompressor()
    obj, inside = dctx.decompressobj(), False
    while chunk := source.read(CHUNK):
        while chunk:
            inside = True
            if out := obj.decompress(chunk):
                target.write(out)
            if not obj.eof:
                break
            chunk, obj, inside = obj.unused_data, dctx.decompressobj(), False
    if inside:
        raise zstandard.ZstdError("the input ended inside a frame (truncated)")
