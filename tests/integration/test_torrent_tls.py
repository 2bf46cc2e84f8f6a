"""TLS torrents: a lab CA in the torrent, real libtorrent peers on both ends of every TLS handshake.

The seed and the fetchers are ``labferry`` processes. The peers that must be refused are libtorrent sessions of
this test process holding the same data: one with a certificate from another lab's CA, one with an expired
certificate from the right CA, and one that speaks plain BitTorrent with RC4 (Ferry's non-TLS lab default).
"""

from __future__ import annotations

import datetime
import json
import time
from pathlib import Path

import libtorrent as lt
import pytest

from backends.torrent.lab import LabOptions, settings
from backends.torrent.tls import FFDHE2048, Identity, issue

from .conftest import MiB, labferry, sha256_of, write_random
from .test_torrent import consecutive_free_ports, distinct_ports, seeding


def result_of(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The creator's data folder (its lab CA), a TLS torrent of 48 MiB, and certificates: a collaborator's from
    the lab CA, another lab's, and an expired one from the lab CA."""
    root = tmp_path_factory.mktemp("tls")
    home, other = root / "home", root / "other-lab"
    data = root / "data"
    data.mkdir()
    digest = write_random(data / "S1_R1.fastq", 48 * MiB, seed=91)
    torrent = root / "S1.torrent"
    made = labferry("torrent", "create", str(data / "S1_R1.fastq"), "-o", str(torrent), "--tls", env_home=home)
    assert made.returncode == 0, made.stderr
    assert "TLS: peers need a certificate from the lab CA" in made.stdout
    cert = labferry("torrent", "cert", str(root / "collab"), env_home=home)
    assert cert.returncode == 0 and "for every torrent of the lab" in cert.stdout, cert.stderr
    assert (root / "collab.key").stat().st_mode & 0o077 == 0  # the key is its owner's alone
    foreign = labferry("torrent", "cert", str(root / "foreign"), env_home=other)  # made its own lab CA
    assert foreign.returncode == 0, foreign.stderr
    ca = Identity(home / "tls" / "lab-ca.pem", home / "tls" / "lab-ca.key")
    issue(ca, root / "expired.pem", root / "expired.key", days=1,
          start=datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=3))
    return {"root": root, "home": home, "data": data, "digest": digest, "torrent": torrent}


def _identity(lab: dict, name: str) -> list[str]:
    return ["--tls-cert", str(lab["root"] / f"{name}.pem"), "--tls-key", str(lab["root"] / f"{name}.key")]


class RoguePeer:
    """A libtorrent session holding the data, with a certificate the lab's peers must refuse (or none, plain)."""

    def __init__(self, lab: dict, port: int, cert: str | None) -> None:
        tls = cert is not None
        options = LabOptions(listen=f"127.0.0.1:{port}", encryption="off" if tls else "required", tls=tls)
        self.session = lt.session(settings(options, listen=f"127.0.0.1:{port}{'s' if tls else ''}"))
        params = lt.add_torrent_params()
        params.ti = lt.torrent_info(str(lab["torrent"]))
        params.save_path = str(lab["data"])
        params.flags |= lt.torrent_flags.seed_mode
        handle = self.session.add_torrent(params)
        if tls:
            root = lab["root"]
            handle.set_ssl_certificate_buffer((root / f"{cert}.pem").read_text(), (root / f"{cert}.key").read_text(),
                                              FFDHE2048)
        self.port = port

    def close(self) -> None:
        self.session.pause()
        del self.session


def test_a_peer_with_a_lab_certificate_fetches_a_tls_torrent(lab, tmp_path):
    with seeding(lab["torrent"], lab["data"], lab["home"], connections=2) as seed:
        proc = labferry("copy", str(lab["torrent"]), str(tmp_path), "--peer", f"127.0.0.1:{seed.port}",
                        "--connections", "2", *_identity(lab, "collab"), "--json", "--stall-timeout", "20",
                        env_home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["sha256"] == lab["digest"] == sha256_of(tmp_path / "S1_R1.fastq") and out["streams"] == 2
    assert "TLS only" in seed.log  # the seed has no plaintext listener at all


def test_refused_peers_are_logged_and_the_fetch_goes_on_with_the_others(lab, tmp_path):
    """The fetcher dials the real seed and three peers it must refuse: another lab's certificate, an expired one,
    and a plain RC4 peer. Each handshake fails, each is logged, and the file arrives from the seed."""
    ports = distinct_ports(3)
    rogues = [RoguePeer(lab, ports[0], "foreign"), RoguePeer(lab, ports[1], "expired"), RoguePeer(lab, ports[2], None)]
    try:
        with seeding(lab["torrent"], lab["data"], lab["home"], connections=1) as seed:
            peers = [a for p in (seed.port, *ports) for a in ("--peer", f"127.0.0.1:{p}")]
            proc = labferry("copy", str(lab["torrent"]), str(tmp_path), *peers, "--connections", "1",
                            "--limit-rate", "16M", *_identity(lab, "collab"), "--json", "--stall-timeout", "20",
                            env_home=tmp_path / "home")
    finally:
        for rogue in rogues:
            rogue.close()
    assert proc.returncode == 0, proc.stderr
    out = result_of(proc)
    assert out["sha256"] == lab["digest"] == sha256_of(tmp_path / "S1_R1.fastq")
    refused = {int(n.split("with 127.0.0.1:")[1].split(":")[0]): n for n in out["notes"]
               if n.startswith("TLS refused the connection")}
    assert set(refused) == set(ports), out["notes"]
    assert "not from this torrent's lab CA, or has expired" in refused[ports[0]]
    assert "not from this torrent's lab CA, or has expired" in refused[ports[1]]
    assert "a plaintext or RC4 peer" in refused[ports[2]]


def test_certificates_its_peers_would_refuse_are_said_at_once(lab, tmp_path):
    """No certificate, another lab's, an expired one: one sentence each before any peer is dialled."""
    port = consecutive_free_ports(1)
    cases = [((), "is a TLS torrent: its peers accept only certificates from its lab CA"),
             (_identity(lab, "foreign"), "was not issued by this torrent's lab CA"),
             (_identity(lab, "expired"), "expired on"),
             (("--tls-cert", str(lab["root"] / "collab.pem")), "Give both --tls-cert and --tls-key")]
    for args, said in cases:
        began = time.monotonic()
        proc = labferry("copy", str(lab["torrent"]), str(tmp_path), "--peer", f"127.0.0.1:{port}", *args,
                        env_home=tmp_path / "home")
        assert proc.returncode != 0 and said in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and time.monotonic() - began < 15


def test_cert_and_create_refuse_bad_input(lab, tmp_path):
    days = labferry("torrent", "cert", str(tmp_path / "x"), "--days", "0", env_home=lab["home"])
    assert days.returncode != 0 and "--days takes a number from 1 to 3650" in days.stderr
    half = labferry("torrent", "cert", str(tmp_path / "x"), "--ca", str(lab["root"] / "collab.pem"),
                    env_home=lab["home"])
    assert half.returncode != 0 and "Give both --ca and --ca-key" in half.stderr
    not_ca = labferry("torrent", "cert", str(tmp_path / "x"), "--ca", str(lab["root"] / "collab.pem"), "--ca-key",
                      str(lab["root"] / "collab.key"), env_home=lab["home"])
    assert not_ca.returncode != 0 and "is not a CA certificate" in not_ca.stderr
    plain = labferry("torrent", "create", str(lab["data"] / "S1_R1.fastq"), "-o", str(tmp_path / "p.torrent"),
                     "--ca", str(lab["home"] / "tls" / "lab-ca.pem"), env_home=lab["home"])
    assert plain.returncode != 0 and "add --tls" in plain.stderr
    given = labferry("torrent", "create", str(lab["data"] / "S1_R1.fastq"), "-o", str(tmp_path / "g.torrent"),
                     "--tls", "--ca", str(lab["home"] / "tls" / "lab-ca.pem"), "--ca-key",
                     str(lab["home"] / "tls" / "lab-ca.key"), env_home=tmp_path / "fresh")
    assert given.returncode == 0, given.stderr
    assert lt.torrent_info(str(tmp_path / "g.torrent")).ssl_cert() == \
        lt.torrent_info(str(lab["torrent"])).ssl_cert() == (lab["home"] / "tls" / "lab-ca.pem").read_text()
    assert Path(tmp_path / "fresh" / "tls").exists() is False  # a given CA makes no CA of Ferry's own
