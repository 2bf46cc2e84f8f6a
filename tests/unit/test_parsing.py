"""What people type: rates, checksums, sidecar files, destinations, URLs."""

from __future__ import annotations

import pytest

from app.routes import resolve_destination
from app.units import format_bytes, format_duration, format_ms, format_rate, parse_rate
from backends.core.checksums import parse_checksum, parse_sidecar
from backends.core.errors import BadRequest
from backends.core.urls import redact, remote_name
from backends.https.address import validate_url

HEX = "ab" * 32


@pytest.mark.parametrize(("text", "value"), [
    ("50M", 50 * 2**20), ("50MB/s", 50 * 2**20), ("800K", 800 * 1024), ("400Mbit", 50_000_000),
    ("1Gbps", 125_000_000), ("100Mb/s", 12_500_000), ("1.5G", int(1.5 * 2**30)), ("5", 5),
])
def test_parse_rate(text, value):
    assert parse_rate(text) == value


@pytest.mark.parametrize("text", ["fast", "", "-5M", "0", "10X"])
def test_parse_rate_rejects(text):
    with pytest.raises(BadRequest):
        parse_rate(text)


def test_parse_checksum():
    assert parse_checksum(f"sha256:{HEX.upper()}").hexdigest == HEX
    assert parse_checksum("md5:" + "0" * 32).algorithm == "md5"
    assert parse_checksum(f"SHA-256:{HEX}").algorithm == "sha256"
    for bad in ("sha256:123", f"crc32:{HEX}", HEX, "sha256:" + "g" * 64):
        with pytest.raises(BadRequest):
            parse_checksum(bad)


def test_parse_sidecar_formats():
    assert parse_sidecar(f"{HEX}  sample.bam\n", "sha256", "sample.bam") == HEX
    assert parse_sidecar(f"{HEX} *sample.bam\n", "sha256", "sample.bam") == HEX
    assert parse_sidecar(f"{HEX}\n", "sha256", "sample.bam") == HEX
    assert parse_sidecar(f"SHA256 (sample.bam) = {HEX}\n", "sha256", "sample.bam") == HEX
    many = f"{'cd' * 32}  other.bam\n{HEX}  ./sample.bam\n"
    assert parse_sidecar(many, "sha256", "sample.bam") == HEX
    assert parse_sidecar(f"{'cd' * 32}  other.bam\n{'ef' * 32}  third.bam\n", "sha256", "sample.bam") is None
    assert parse_sidecar("<html>not found</html>", "sha256", "sample.bam") is None
    assert parse_sidecar(f"{HEX}  sample.bam", "md5", "sample.bam") is None


def test_a_file_given_as_a_folder_is_named_as_a_file(tmp_path):
    existing = tmp_path / "notes.txt"
    existing.write_text("x")
    with pytest.raises(BadRequest, match="is a file, not a folder"):
        resolve_destination("https://h/a/reads.fq", f"{existing}/")


def test_resolve_destination(tmp_path):
    assert resolve_destination("https://h/a/b/reads%201.fq.gz", tmp_path) == str(tmp_path / "reads 1.fq.gz")
    assert resolve_destination("https://h/a/x.bin?sig=1", str(tmp_path / "y.bin")) == str(tmp_path / "y.bin")
    missing = str(tmp_path / "nope") + "/"
    assert resolve_destination("https://h/x.bin", missing) == str(tmp_path / "nope" / "x.bin")
    assert resolve_destination("sftp://h/data/run1/", tmp_path) == str(tmp_path / "run1")
    assert resolve_destination("/local/run1", "sftp://h/data/") == "sftp://h/data/"  # uploads: the server decides
    with pytest.raises(BadRequest):
        resolve_destination("https://h/", tmp_path)
    # server to server: left to the backend (GridFTP can, SSH and HTTPS refuse in their check())
    assert resolve_destination("gsiftp://a/x", "gsiftp://b/y/") == "gsiftp://b/y/"


def test_urls():
    assert redact("https://alice:pw@h:1/x") == "https://alice:***@h:1/x"
    assert redact("https://h/x") == "https://h/x"
    assert remote_name("https://h/a/b.bin") == "b.bin" and remote_name("https://h/a/") == ""
    assert validate_url("https://h/x") == ("h", 443)
    assert validate_url("http://h:8080/x") == ("h", 8080)
    for bad in ("https://", "https://h:99999/x", "ftp://h/x", "https://a b/x"):
        with pytest.raises(BadRequest):
            validate_url(bad)


def test_formatting():
    assert format_bytes(1536) == "1.5 KiB" and format_bytes(None) == "?"
    assert format_rate(125e6) == "1.00 Gbit/s" and format_rate(12.5e6) == "100 Mbit/s"
    assert format_duration(59) == "59s" and format_duration(3700) == "1h01m" and format_duration(None) == "--"


def test_round_trips_read_as_people_expect_on_a_wan_and_a_lan():
    assert format_ms(48.7) == "49 ms" and format_ms(2.44) == "2.4 ms" and format_ms(None) == "?"
    assert format_ms(0.004) == "0.004 ms" and format_ms(0.0412) == "0.041 ms"  # never "0.0 ms" on loopback
