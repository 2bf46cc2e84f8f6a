"""The front door (``app.requests``): one merge of defaults, site, benchmark log and explicit choices."""

from __future__ import annotations

import time

import pytest

from app.requests import Defaults, Overrides, parse_streams, resolve, site_options
from app.sites import Site, SiteBook
from app.store import Store
from backends.core.errors import BadRequest


class NoSecrets:
    def get(self, site):
        return None


@pytest.fixture
def store(ferry_home):
    with Store() as opened:
        yield opened


def add_site(store, **kw) -> SiteBook:
    book = SiteBook(store, NoSecrets())
    book.save(Site(**({"name": "core", "protocol": "https", "host": "data.core.example"} | kw)))
    return book


def go(store, source="site:core/run1/reads.fq", dest=None, chosen=None, *, defaults=None, book=None, **kw):
    return resolve(source, dest or "/tmp/", chosen, store=store, sites=book, defaults=defaults, **kw)


def test_streams_explicit_over_site_over_defaults_over_auto(store):
    book = add_site(store, streams="12")
    assert go(store, book=book, chosen=Overrides(streams=3)).options.streams == 3
    assert go(store, book=book, defaults=Defaults(streams=5)).options.streams == 12
    book = add_site(store, streams="auto")
    assert go(store, book=book, defaults=Defaults(streams=5)).options.streams == 5
    assert go(store, book=book).options.streams == "auto"


def test_auto_starts_from_a_fresh_preflight_then_the_benchmark_log_but_never_over_a_choice(store):
    book = add_site(store)
    assert go(store, book=book).options.initial_streams is None
    now = time.time()
    for streams, mbps_seconds in ((4, 8.0), (16, 2.0)):
        store.benchmarks.add(job_id=None, backend="https", peer_host="data.core.example", streams=streams,
                             bytes=1 << 30, seconds=mbps_seconds, rtt_ms=50, started=now)
    assert go(store, book=book).options.initial_streams == 16  # the fastest recent transfer there
    store.preflights.add({"host": "data.core.example", "backend": "https", "url": "https://data.core.example/x",
                          "recommended_streams": 24, "measured_at": now})
    assert go(store, book=book).options.initial_streams == 24  # a fresh preflight first
    assert go(store, book=book, chosen=Overrides(streams=2)).options.initial_streams is None
    assert go(store, book=book, advice=False).options.initial_streams is None


def test_the_lower_rate_cap_wins(store):
    book = add_site(store)
    both = go(store, book=book, chosen=Overrides(limit_rate=100), defaults=Defaults(limit_rate=50)).options
    assert (both.limit_rate, both.shared_limit, both.rate_cap) == (100, 50, 50)
    assert go(store, book=book, chosen=Overrides(limit_rate=30), defaults=Defaults(limit_rate=50)).options \
        .rate_cap == 30
    assert go(store, book=book, defaults=Defaults(limit_rate=50)).options.rate_cap == 50
    assert go(store, book=book).options.rate_cap is None


def test_a_sites_ca_file_is_the_transfers_ca_file_unless_one_is_given(store):
    book = add_site(store, options={"ca_file": "/etc/lab-ca.pem"})
    request = go(store, book=book)
    assert request.options.ca_file == "/etc/lab-ca.pem" and "ca_file" not in request.options.backend_options
    assert go(store, book=book, chosen=Overrides(ca_file="/mine.pem")).options.ca_file == "/mine.pem"
    assert site_options(book.get("core")).ca_file == "/etc/lab-ca.pem"  # browsing and preflights too


def test_backend_options_explicit_over_site_and_checked_against_the_backends_declaration(store):
    book = add_site(store, protocol="sftp", key_file="/keys/site", options={"max_handshakes": 4,
                                                                            "known_hosts": "/kh"})
    request = go(store, "site:core/run1/", book=book, chosen=Overrides(backend_options={"identity": "/keys/mine"}))
    assert request.backend == "ssh"
    assert request.options.backend_options == {"identity": "/keys/mine", "max_handshakes": 4, "known_hosts": "/kh"}
    with pytest.raises(BadRequest, match="ssh transfers have no option 'peers'"):
        go(store, "site:core/run1/", book=book, chosen=Overrides(backend_options={"peers": ["h:1"]}))
    with pytest.raises(BadRequest, match="max_handshakes takes a whole number"):
        go(store, "site:core/run1/", book=book, chosen=Overrides(backend_options={"max_handshakes": "many"}))
    assert go(store, "site:core/run1/", book=book, chosen=Overrides(backend_options={"max_handshakes": "6"})) \
        .options.backend_options["max_handshakes"] == 6  # a hand-edited profile's digits
    with pytest.raises(BadRequest, match="https transfers have no option 'identity'. They take: "
                                         "--allow-downgrade, --proxy, --stall-timeout, --web-page"):
        go(store, "https://h/x.bin", chosen=Overrides(backend_options={"identity": "/k"}))
    assert go(store, "https://h/x.bin", chosen=Overrides(backend_options={"identity": "/k"}), strict=False) \
        .options.backend_options == {}
    with pytest.raises(BadRequest, match="encryption takes required or preferred or off"):
        go(store, "/tmp/x.torrent", chosen=Overrides(backend_options={"encryption": "rc4"}))


def test_verify_explicit_over_defaults(store):
    assert go(store, "https://h/x.bin", defaults=Defaults(verify=False)).options.verify is False
    assert go(store, "https://h/x.bin", defaults=Defaults(verify=False), chosen=Overrides(verify=True)) \
        .options.verify is True
    assert go(store, "https://h/x.bin", chosen=Overrides(verify=False)).options.verify is False


def test_destination_and_source_paths(store, tmp_path, monkeypatch):
    assert go(store, "https://h/a/reads.fq", str(tmp_path)).dest == str(tmp_path / "reads.fq")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    upload = go(store, "results", "sftp://u@h/incoming/")
    assert upload.source == str(tmp_path / "results") and upload.dest == "sftp://u@h/incoming/"
    with pytest.raises(BadRequest, match="is not a URL Ferry can fetch"):
        go(store, "results", "elsewhere")


def test_unknown_site_and_streams_are_bad_input(store):
    with pytest.raises(BadRequest, match="no site called 'nosuch'"):
        go(store, "site:nosuch/x")
    with pytest.raises(BadRequest, match="Streams take a number from 1 to 64"):
        parse_streams("65")
    assert Defaults.from_settings({"default_streams": "8", "limit_rate": "400Mbit", "verify": False}) == \
        Defaults(streams=8, limit_rate=50_000_000, verify=False)


def test_a_relay_leaves_the_far_side_to_the_agent_and_caps_each_hops_streams(store, tmp_path):
    book = add_site(store, name="dtn", protocol="sftp", host="dtn.example")
    local = tmp_path / "reads.fq"
    local.write_bytes(b"x")
    up = resolve(str(local), "site:collab/in/", Overrides(via="site:dtn", checksum=None, overwrite=True,
                                                          limit_rate=1000), store=store, sites=book)
    assert up.backend == "relay" and up.dest == "site:collab/in/"  # the DTN's own site, not looked up here
    settings = up.options.backend_options
    assert settings["via"] == "dtn" and settings["far"]["overwrite"] is True and settings["far"]["limit_rate"] == 1000
    assert settings["far"]["max_streams"] == 16 and up.options.max_streams == 16
    down = resolve("site:ebi/run1.bam", str(tmp_path) + "/", Overrides(via="site:dtn", max_streams=8), store=store,
                   sites=book)
    assert down.source == "site:ebi/run1.bam" and down.dest == str(tmp_path / "run1.bam")
    assert down.options.max_streams == 8 and down.options.backend_options["far"]["max_streams"] == 8


def test_a_relay_needs_an_ssh_site_and_one_local_side(store, tmp_path):
    book = add_site(store)  # "core": an HTTPS site
    with pytest.raises(BadRequest, match="A relay goes through an SSH site's host"):
        resolve(str(tmp_path), "sftp://far/x", Overrides(via="site:core"), store=store, sites=book)
    book = add_site(store, name="dtn", protocol="sftp", host="dtn.example")
    with pytest.raises(BadRequest, match="one side each"):
        resolve("sftp://a/x", "sftp://b/y", Overrides(via="site:dtn"), store=store, sites=book)
    with pytest.raises(BadRequest, match="goes to a server"):
        resolve(str(tmp_path), str(tmp_path / "copy"), Overrides(via="site:dtn"), store=store, sites=book)
