"""--compress's choice and its frames (backends/ssh/squeeze.py), without a server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
import zstandard

from backends.core.errors import Transient
from backends.ssh import squeeze
from backends.ssh.squeeze import AUTO_MIN_BYTES, Sample, decide

BIG = AUTO_MIN_BYTES * 4
FASTQ = Sample(3.1, 230e6, 2)


def test_off_never_and_zstd_always_where_the_server_can():
    assert not decide("off", "r.fq", BIG, FASTQ, None, True).on
    assert decide("zstd", "r.fq.gz", 10, None, None, True).on
    choice = decide("zstd", "r.fq", BIG, FASTQ, None, False)
    assert not choice.on and "no zstd" in choice.why


def test_auto_skips_small_and_compressed_types_without_sampling():
    assert not decide("auto", "r.fq", AUTO_MIN_BYTES - 1, FASTQ, None, True).on
    for name in ("r.fastq.gz", "a.BAM", "a.cram", "x.zst", "s.sra"):
        choice = decide("auto", name, BIG, None, None, True)
        assert not choice.on and "compressed already" in choice.why


def test_auto_needs_the_ratio_and_a_compressor_ahead_of_the_path():
    assert decide("auto", "r.fq", BIG, FASTQ, None, True).on  # path never measured: the ratio decides
    assert decide("auto", "r.fq", BIG, FASTQ, 100e6, True).on  # 460 MB/s of zstd ahead of 100 MB/s
    slow = decide("auto", "r.fq", BIG, Sample(3.1, 20e6, 1), 100e6, True)
    assert not slow.on and "slower than this path's measured" in slow.why
    flat = decide("auto", "r.bin", BIG, Sample(1.0, 500e6, 2), None, True)
    assert not flat.on and "shrank only 1.00×" in flat.why


def test_the_servers_sample_answer():
    assert squeeze.remote_sample(b"none\n") == (False, None)
    assert squeeze.remote_sample(b"zstd 4\n") == (True, None)
    has, sample = squeeze.remote_sample(b"zstd 4 8388608 2796202 40000000\n")
    assert has and sample.ratio == pytest.approx(3.0, rel=1e-3) and sample.cores == 4
    assert sample.bytes_per_s == pytest.approx(8388608 / 0.04)
    assert squeeze.remote_sample(b"zstd 2 8388608 2796202 \n")[1].bytes_per_s is None  # BSD date: no %N


def test_a_local_sample_of_text_and_of_noise(tmp_path):
    text, noise = tmp_path / "t.fq", tmp_path / "n.bin"
    text.write_bytes(b"@read\nACGTTGCA\n+\nFFFFFFFF\n" * 200_000)
    noise.write_bytes(os.urandom(2 << 20))
    assert squeeze.sample_local(str(text)).ratio > 10
    assert squeeze.sample_local(str(noise)).ratio < 1.01


def test_frames_round_trip_and_a_damaged_one_is_transient():
    async def run():
        data = b"@r\nACGT\n+\nFFFF\n" * 100_000
        packer = squeeze.Packer(len(data))
        frame = await packer.pack(data) + packer.end()
        unpacker = squeeze.Unpacker("r.fq")
        out = await unpacker.unpack(frame + b"FERRY-END\n")
        assert out == data and unpacker.done and unpacker.rest == b"FERRY-END\n"
        bad = bytearray(frame)
        bad[len(bad) // 2] ^= 0x5A
        with pytest.raises(Transient, match="arrived damaged"):
            await squeeze.Unpacker("r.fq").unpack(bytes(bad))
        assert zstandard.get_frame_parameters(frame).has_checksum

    asyncio.run(run())


def test_a_tar_streams_frame_round_trips_and_a_damaged_or_cut_one_is_transient():
    import io

    sink = io.BytesIO()
    packer = squeeze.StreamPacker(sink)
    data = b"@r\nACGT\n+\nFFFF\n" * 50_000
    for i in range(0, len(data), 4096):
        packer.write(data[i:i + 4096])
    packer.end()
    frame = sink.getvalue()
    assert packer.wire == len(frame) < len(data) / 5
    whole = squeeze.StreamUnpacker("x")
    assert whole.unpack(frame) == data
    whole.check_end()
    cut = squeeze.StreamUnpacker("x")
    cut.unpack(frame[: len(frame) // 2])
    with pytest.raises(Transient, match="ended before its frame did"):
        cut.check_end()
    bad = bytearray(frame)
    bad[len(bad) // 2] ^= 0x5A
    with pytest.raises(Transient, match="arrived damaged"):
        squeeze.StreamUnpacker("x").unpack(bytes(bad))


def test_a_server_with_ferry_and_no_zstd_answers_ferry():
    assert squeeze.remote_sample(b"ferry 2\n") == (True, None) and squeeze.by_ferry(b"ferry 2\n")
    has, sample = squeeze.remote_sample(b"ferry 2 8388608 2796202 90000000\n")
    assert has and sample.ratio == pytest.approx(3.0, rel=1e-3) and not squeeze.by_ferry(b"zstd 2\n")


def _filter(args: list[str], data: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "zstd", *args], input=data, capture_output=True)


def test_labferry_zstd_reads_and_writes_what_zstd_does():
    """``labferry zstd`` (a server with Ferry and no zstd) against the real zstd, both ways."""
    data = b"@read/1\nACGTTGCAACGT\n+\nIIIIIIIIIIII\n" * 200_000 + os.urandom(3 << 20)
    packed = _filter(["-1", "-cq"], data)
    assert packed.returncode == 0 and len(packed.stdout) < len(data) / 2
    assert subprocess.run(["zstd", "-dcq"], input=packed.stdout, capture_output=True).stdout == data
    theirs = subprocess.run(["zstd", "-1", "-cq"], input=data, capture_output=True).stdout
    assert _filter(["-dcq"], theirs * 2).stdout == data * 2  # frames one after another, as zstd -d reads them
    damaged = bytearray(theirs)
    damaged[len(damaged) // 3] ^= 0x5A
    for bad in (bytes(damaged), theirs[: len(theirs) // 2]):  # a damaged frame, a cut one: status 1, as zstd
        failed = _filter(["-dcq"], bad)
        assert failed.returncode == 1 and failed.stderr.startswith(b"labferry zstd: ")
    assert _filter(["--can"], b"").returncode == 0
