"""The lab CA and peer certificates of TLS torrents (backends/torrent/tls.py), without a network."""

from __future__ import annotations

import datetime

import pytest

from backends.core.errors import BadRequest
from backends.torrent import tls


def test_a_lab_ca_is_made_once_and_its_peer_certificate_covers_every_torrent(tmp_path):
    ca = tls.lab_ca(tmp_path)
    assert tls.lab_ca(tmp_path).cert.read_bytes() == ca.cert.read_bytes()  # kept, not made again
    assert ca.key.stat().st_mode & 0o777 == 0o600
    own = tls.own_identity(tmp_path)
    assert tls.existing_identity(tmp_path) == own
    assert tls.problem_with(own, tls.root_pem(ca), "any torrent") is None


def test_two_labs_never_share_a_ca_name(tmp_path):
    from cryptography import x509

    names = {x509.load_pem_x509_certificate(tls.lab_ca(tmp_path / d).cert.read_bytes()).subject for d in "ab"}
    assert len(names) == 2


def test_what_a_peer_would_refuse_is_said(tmp_path):
    ca, other = tls.lab_ca(tmp_path / "lab"), tls.lab_ca(tmp_path / "other")
    root = tls.root_pem(ca)
    named = tls.issue(ca, tmp_path / "n.pem", tmp_path / "n.key", names=("run42",))
    assert tls.problem_with(named, root, "run42") is None
    assert "not 'run43'" in tls.problem_with(named, root, "run43")
    foreign = tls.issue(other, tmp_path / "f.pem", tmp_path / "f.key")
    assert "was not issued by this torrent's lab CA" in tls.problem_with(foreign, root, "run42")
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=10)
    expired = tls.issue(ca, tmp_path / "e.pem", tmp_path / "e.key", days=2, start=past)
    assert "expired on" in tls.problem_with(expired, root, "run42")
    missing = tls.Identity(tmp_path / "none.pem", tmp_path / "none.key")
    assert "Cannot read" in tls.problem_with(missing, root, "run42")


def test_only_a_ca_with_its_own_key_signs(tmp_path):
    ca = tls.lab_ca(tmp_path / "lab")
    peer = tls.own_identity(tmp_path / "lab")
    with pytest.raises(BadRequest, match="is not a CA certificate"):
        tls.issue(peer, tmp_path / "x.pem", tmp_path / "x.key")
    other = tls.lab_ca(tmp_path / "other")
    with pytest.raises(BadRequest, match="is not the key of"):
        tls.issue(tls.Identity(ca.cert, other.key), tmp_path / "x.pem", tmp_path / "x.key")
    with pytest.raises(BadRequest, match="needs a torrent name"):
        tls.issue(ca, tmp_path / "x.pem", tmp_path / "x.key", names=("",))
