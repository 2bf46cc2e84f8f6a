"""zstd's seekable format: independent frames, then a seek table in a skippable frame at the end.

Each frame holds a stretch of the tar that begins and ends where a member or a large file's piece does, so one
member is read by decompressing only the frames that hold it, and workers compress and decompress frames at
once. ``zstd -d < NAME.tar.zst | tar -x`` still works: zstd decodes the frames one after another and skips the
seek table. A frame of members that are compressed already (``.gz``, ``.bam``, ``.cram``…) is stored as raw
blocks: copied, not compressed a second time.
"""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass

from ..core.errors import Corrupt
from ..host import portable

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SKIPPABLE_MAGIC = 0x184D2A5E
SEEKABLE_MAGIC = 0x8F92EAB1
FOOTER = 9
#: the seekable format's limits: frames in a file, bytes a frame decodes to
MOST_FRAMES = 0x8000000
MOST_FRAME_SIZE = 0x40000000
_RAW_BLOCK = 128 << 10


def raw_frame(data: bytes) -> bytes:
    """A zstd frame that stores ``data`` as it is (raw blocks): what already compressed members travel in."""
    out = [ZSTD_MAGIC, bytes([0xE0]), struct.pack("<Q", len(data))]  # single segment, 8-byte content size
    if not data:
        out.append((1).to_bytes(3, "little"))  # one empty last raw block
    for at in range(0, len(data), _RAW_BLOCK):
        block = data[at:at + _RAW_BLOCK]
        last = at + _RAW_BLOCK >= len(data)
        out.append(((len(block) << 3) | int(last)).to_bytes(3, "little"))
        out.append(block)
    return b"".join(out)


def seek_table(frames: list[tuple[int, int]]) -> bytes:
    """The skippable frame that ends the file: each frame's (compressed, decompressed) size, no checksums."""
    entries = b"".join(struct.pack("<II", c, d) for c, d in frames)
    footer = struct.pack("<IBI", len(frames), 0, SEEKABLE_MAGIC)
    return struct.pack("<II", SKIPPABLE_MAGIC, len(entries) + len(footer)) + entries + footer


@dataclass
class FrameMap:
    """Where each frame starts in the file and in the tar it decodes to."""

    starts: list[int]  # in the file
    sizes: list[int]  # compressed
    tar_starts: list[int]  # in the decoded tar
    tar_sizes: list[int]

    @property
    def tar_size(self) -> int:
        return self.tar_starts[-1] + self.tar_sizes[-1] if self.tar_starts else 0

    def frames_for(self, start: int, length: int) -> range:
        """The frames that hold tar bytes ``[start, start + length)``."""
        first = max(0, bisect.bisect_right(self.tar_starts, start) - 1)
        last = max(first, bisect.bisect_right(self.tar_starts, start + max(length, 1) - 1) - 1)
        return range(first, last + 1)


def is_seekable(fd: int) -> bool:
    return portable.pread(fd, 4, 0) == ZSTD_MAGIC


def read_map(fd: int, total: int, where: str) -> FrameMap:
    """The seek table at the end of a ``.tar.zst``; a file without one is refused in a sentence."""
    footer = portable.pread(fd, FOOTER, total - FOOTER) if total >= FOOTER + 8 else b""
    if len(footer) != FOOTER or struct.unpack("<I", footer[5:])[0] != SEEKABLE_MAGIC:
        raise Corrupt(f"{where} is zstd without a seek table (not made by labferry pack --compress zstd, or cut); "
                      "unpack it with: zstd -d < ARCHIVE | tar -x")
    count, descriptor = struct.unpack("<IB", footer[:5])
    size = 12 if descriptor & 0x80 else 8
    if count > MOST_FRAMES or 8 + count * size + FOOTER > total:
        raise Corrupt(f"{where}'s seek table names more frames than the file can hold; it was cut or changed.")
    table = portable.pread(fd, count * size, total - FOOTER - count * size)
    starts, sizes, tar_starts, tar_sizes = [], [], [], []
    at = tar_at = 0
    for i in range(count):
        compressed, decoded = struct.unpack_from("<II", table, i * size)
        if decoded > MOST_FRAME_SIZE:
            raise Corrupt(f"{where}'s seek table has a frame of {decoded:,} bytes, more than the format allows.")
        starts.append(at)
        sizes.append(compressed)
        tar_starts.append(tar_at)
        tar_sizes.append(decoded)
        at += compressed
        tar_at += decoded
    if at + 8 + count * size + FOOTER != total:
        raise Corrupt(f"{where}'s seek table does not add up to the file's length; it was cut or changed.")
    return FrameMap(starts, sizes, tar_starts, tar_sizes)


def decode(fd: int, frames: FrameMap, number: int, where: str) -> bytes:
    """One frame, decoded and checked against the length the table gives it."""
    import zstandard

    data = portable.pread(fd, frames.sizes[number], frames.starts[number])
    try:
        out = zstandard.ZstdDecompressor().decompress(data, max_output_size=frames.tar_sizes[number])
    except zstandard.ZstdError as exc:
        raise Corrupt(f"Frame {number} of {where} does not decode ({exc}); the archive was changed.") from None
    if len(out) != frames.tar_sizes[number]:
        raise Corrupt(f"Frame {number} of {where} decodes to {len(out):,} bytes, not the {frames.tar_sizes[number]:,} "
                      "its seek table says; the archive was changed.")
    return out


def read_range(fd: int, frames: FrameMap, start: int, length: int, where: str) -> bytes:
    """Tar bytes ``[start, start + length)``, decoding only the frames that hold them."""
    parts = []
    for number in frames.frames_for(start, length):
        data = decode(fd, frames, number, where)
        base = frames.tar_starts[number]
        parts.append(data[max(0, start - base):max(0, start + length - base)])
    return b"".join(parts)
