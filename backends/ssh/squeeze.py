"""On-the-fly zstd for SSH ranges (``--compress auto|zstd|off``): whether a file is worth it, and the frames.

Uncompressed FASTQ, SAM, VCF and FASTA shrink about 3× under zstd's fastest level at ~230 MB/s of one core
(measured on simulated Illumina reads, docs/benchmarks.md), so on a path slower than the compressor the same
wire carries three times the data. Each range is its own zstd frame with zstd's content checksum, so parallel
streams compress independently, resume and range stealing keep working, and a frame cut or damaged on the way
is caught at its end and the range is fetched (or sent) again; the file's SHA-256 is still of the original
bytes, compared end to end as without compression.

The server runs the ``zstd`` binary (``scripts.READ_RANGES`` with a ``Z`` flag, ``scripts.WRITE_RANGE_Z``);
this side uses the ``zstandard`` package, so Ferry needs no binary of its own on macOS or Windows.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Literal

from ..core.errors import Transient
from ..core.formats import compressed_already
from ..core.made import open_local

Mode = Literal["auto", "zstd", "off"]
LEVEL = 1  # zstd -1: 3.1× on FASTQ at ~230 MB/s a core; -3 gains 2 % for 15 % more CPU
SAMPLE_BYTES = 2 * 1024 * 1024  # ~10 ms of zstd: the streams wait for the choice
#: ``auto`` looks only at files this large: below it the sample and the server's zstd start cost more than
#: the bytes saved (a folder's small files go as one tar stream anyway)
AUTO_MIN_BYTES = 32 * 1024 * 1024
#: ``auto`` compresses only what shrinks at least this much (the issue's figure: below it the CPU buys little)
MIN_RATIO = 1.3
#: the most streams a compressed file opens (``--max-streams`` still caps it lower)
MAX_STREAMS = 16
_THREAD_MIN = 256 * 1024  # pieces at least this large are (de)compressed off the loop, in parallel with it


@dataclass(frozen=True)
class Sample:
    """What compressing the start of a file showed: its ratio, and how fast one core compressed it."""

    ratio: float
    bytes_per_s: float | None  # None: the server's clock could not say
    cores: int = 1


@dataclass(frozen=True)
class Choice:
    on: bool
    why: str  # a sentence for the job's notes


known_compressed = compressed_already  # the name the SSH backend's callers use


def decide(mode: Mode, name: str, size: int, sample: Sample | None, path_rate: int | None,
           server_has_zstd: bool) -> Choice:
    """Whether ``name`` travels compressed.

    ``zstd`` always (where the server can), ``off`` never; ``auto`` when the file is large, not of a compressed
    type, shrinks by ``MIN_RATIO`` and the compressing side (all its cores) keeps ahead of ``path_rate`` (the
    path's measured rate in bytes/s: a recent preflight's or transfer's; unknown, the ratio decides alone)."""
    if mode == "off" or mode == "auto" and size < AUTO_MIN_BYTES:
        return Choice(False, "")
    if mode == "auto" and known_compressed(name):
        return Choice(False, f"{name} went uncompressed: its type is compressed already.")
    if not server_has_zstd:
        return Choice(False, f"{name} went uncompressed: the server has no zstd command and no Ferry (labferry) "
                             "to compress with (install the zstd package there, or Ferry, to let Ferry compress).")
    if mode == "zstd":
        return Choice(True, f"{name} travelled compressed (zstd -{LEVEL}, as asked).")
    if sample is None:
        return Choice(False, "")
    if sample.ratio < MIN_RATIO:
        return Choice(False, f"{name} went uncompressed: its start shrank only {sample.ratio:.2f}× under zstd "
                             f"(Ferry compresses from {MIN_RATIO}×).")
    speed = sample.bytes_per_s * sample.cores if sample.bytes_per_s else None
    if speed is not None and path_rate and speed < path_rate:
        return Choice(False, f"{name} went uncompressed: zstd compresses {_mbit(speed)} here, slower than this "
                             f"path's measured {_mbit(path_rate)}.")
    return Choice(True, f"{name} travelled compressed (zstd -{LEVEL}: its start shrank {sample.ratio:.1f}×).")


def _mbit(bytes_per_s: float) -> str:
    return f"{bytes_per_s * 8 / 1e6:,.0f} Mbit/s"


def sample_local(local) -> Sample:
    """Compress the start of a local file (or one made on demand: ``core.made``) as a range would be
    (blocking: run it in a thread)."""
    return sample_files([local])


def sample_files(paths: list) -> Sample:
    """Compress the start of these files, read one after another up to ``SAMPLE_BYTES`` (a tar stream of small
    files begins so), as this side would: its ratio, and one core's speed."""
    import zstandard

    data = bytearray()
    for path in paths:
        with open_local(path) as fh:
            data += fh.read(SAMPLE_BYTES - len(data))
        if len(data) >= SAMPLE_BYTES:
            break
    if not data:
        return Sample(1.0, None)
    began = time.perf_counter()
    packed = zstandard.ZstdCompressor(level=LEVEL).compress(bytes(data))
    seconds = time.perf_counter() - began
    return Sample(len(data) / max(1, len(packed)), len(data) / seconds if seconds > 0 else None,
                  os.cpu_count() or 1)


#: said after "… travelled compressed" where the server's Ferry compressed, for want of a zstd command
BY_FERRY = "The server has no zstd command, so its Ferry (labferry zstd, the zstandard package) did the work there."


def by_ferry(answer: bytes) -> bool:
    """Whether ``scripts.ZSTD_SAMPLE`` found Ferry, not zstd, to compress with on the server."""
    return answer.startswith(b"ferry")


def remote_sample(answer: bytes) -> tuple[bool, Sample | None]:
    """``scripts.ZSTD_SAMPLE``'s answer: whether the server has zstd, and what its sample showed."""
    fields = answer.decode("ascii", "replace").split()
    if not fields or fields[0] not in ("zstd", "ferry"):
        return False, None
    numbers = [int(f) for f in fields[1:] if f.isdigit()]
    if len(numbers) < 3:
        return True, None
    cores, sent, packed = numbers[:3]
    nanos = numbers[3] if len(numbers) > 3 else 0
    if sent == 0:
        return True, None
    return True, Sample(sent / max(1, packed), sent / (nanos / 1e9) if nanos > 0 else None, max(1, cores))


class Packer:
    """One range as one zstd frame with its checksum, compressed piece by piece as it is read."""

    def __init__(self, length: int) -> None:
        import zstandard

        self._obj = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compressobj(size=length)

    async def pack(self, data: bytes) -> bytes:
        if len(data) >= _THREAD_MIN:
            return await asyncio.to_thread(self._obj.compress, data)
        return self._obj.compress(data)

    def end(self) -> bytes:
        return self._obj.flush()


class StreamPacker:
    """A file-like writer that sends what tar writes as one zstd frame (an upload's tar stream)."""

    def __init__(self, sink) -> None:
        import zstandard

        self._obj = zstandard.ZstdCompressor(level=LEVEL, write_checksum=True).compressobj()
        self._sink = sink
        self.wire = 0

    def write(self, data: bytes) -> int:
        out = self._obj.compress(bytes(data))
        if out:
            self._sink.write(out)
            self.wire += len(out)
        return len(data)

    def flush(self) -> None:
        return None

    def end(self) -> None:
        tail = self._obj.flush()
        self._sink.write(tail)
        self.wire += len(tail)


class StreamUnpacker:
    """A tar stream's zstd frame, unpacked as it arrives (in the thread that pumps it into tar)."""

    def __init__(self, what: str) -> None:
        import zstandard

        self._obj = zstandard.ZstdDecompressor().decompressobj()
        self._error = zstandard.ZstdError
        self.what = what
        self.wire = 0  # compressed bytes read

    def unpack(self, data: bytes) -> bytes:
        self.wire += len(data)
        try:
            return self._obj.decompress(data)
        except self._error as exc:
            raise Transient(f"The compressed tar stream of {self.what} arrived damaged ({exc}); Ferry fetches "
                            "those files again.") from None

    def check_end(self) -> None:
        if not self._obj.eof:
            raise Transient(f"The compressed tar stream of {self.what} ended before its frame did; Ferry fetches "
                            "those files again.")


class Unpacker:
    """One range's zstd frame, fed as it arrives; ``done`` once the frame (and its checksum) has ended."""

    def __init__(self, what: str) -> None:
        import zstandard

        self._obj = zstandard.ZstdDecompressor().decompressobj()
        self._error = zstandard.ZstdError
        self.what = what

    async def unpack(self, data: bytes) -> bytes:
        try:
            if len(data) >= _THREAD_MIN:
                return await asyncio.to_thread(self._obj.decompress, data)
            return self._obj.decompress(data)
        except self._error as exc:
            raise Transient(f"A compressed range of {self.what} arrived damaged ({exc}); Ferry fetches it "
                            "again.") from None

    @property
    def done(self) -> bool:
        return self._obj.eof

    @property
    def rest(self) -> bytes:
        """Bytes after the frame's end (the stream's framing that follows it)."""
        return self._obj.unused_data
