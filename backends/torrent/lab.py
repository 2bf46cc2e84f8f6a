"""libtorrent settings for labs on fat pipes, each with its reason.

libtorrent's defaults serve home broadband: many slow, untrusted peers, NAT traversal,
a few megabytes in flight. A lab swarm is the opposite: a handful of trusted hosts on
0.1–10 Gbit/s paths with 10–100 ms of round trip, where one connection must carry
hundreds of megabits. So:

* **discovery off** (DHT, local service discovery, UPnP, NAT-PMP) unless asked: a lab
  names its peers (``--peer host:port``) or runs a tracker; nothing announces the data to
  the world. Torrents Ferry creates are private by default (BEP 27: no DHT/PEX for them).
* **encryption required** on every peer connection (``pe_forced``, RC4 only): a peer
  offering plaintext is refused. It hides the payload from casual inspection and stops
  middleboxes that throttle BitTorrent by pattern; integrity comes from the piece hashes.
* **TCP only**: uTP (BitTorrent's own congestion control over UDP) backs off at the
  first queueing delay, which is right on a home line and wrong on a research path.
* **send buffers and request queues sized for the path, not deeper**: a peer only sends
  what was requested, and libtorrent refills a connection's send buffer only below its
  watermark; on a long path a connection needs its bandwidth-delay product in flight
  (8 connections sharing 1 Gbit/s at 50 ms: ~0.8 MB each). So a connection keeps ~3 s of
  requests queued, at most 500 blocks (8 MiB: 640 Mbit/s per connection at 100 ms), and the
  seed buffers half a second of a connection's rate (1–8 MiB). Deeper is slower: the
  seed's cap is the one that counts (a fetcher adopts the ``reqq`` its peer announces),
  and with the 8000 set here before, each connection held up to 8000 blocks (125 MB) of
  the file; at the end the connections that had just lost packets still held seconds of
  work while the others sat idle (traced at 50 ms: the last 6 % took 1.5–3 s).
* **no unchoke limit** and several connections per IP: every lab peer may download at
  once, and one host may run several sessions (the seed's extra listening ports, below).
  A named peer that refused is dialled again after 2 s, not libtorrent's 60 s: lab peers
  are few, named by a person, and often start a moment after each other. The session ticks
  every 100 ms, not 500: new connections are attempted on a tick, and at 50 ms the 8 first
  connections came up 0.56 s after they were asked for with the default, 0.16 s with this.
* **disk**: more I/O threads and two hashing threads; the OS page cache does the caching.
* **no rate limits** by default, IP overhead not counted against limits; a limit the user
  sets applies to every peer, local ones too (libtorrent exempts the local network by default).

One TCP connection between two peers is bound by the same window and loss limits as one
scp stream (Mathis: MSS / (RTT·√p)). So a seed runs **several sessions on consecutive
ports** over the same data (``--connections K``), and a fetcher told ``--peer host:PORT``
dials ``PORT … PORT+K-1``: K connections between the two hosts, K windows — the parallel
streams of GridFTP, in BitTorrent's terms. See docs/backends/torrent.md for the measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

import libtorrent as lt

MiB = 1024 * 1024


@dataclass(frozen=True)
class LabOptions:
    listen: str = "0.0.0.0:6881"  # ADDR:PORT (the first port; extra seed sessions take the next ones)
    discovery: bool = False  # DHT, local service discovery, UPnP, NAT-PMP
    encryption: str = "required"  # "required" | "preferred" | "off"
    upload_limit: int = 0  # bytes/s, 0: none
    download_limit: int = 0
    #: a TLS torrent (``tls.py``): every session listens for TLS only, so plaintext and RC4 peers cannot connect
    tls: bool = False


def settings(options: LabOptions, *, listen: str | None = None) -> dict:
    enc = {"required": lt.enc_policy.pe_forced, "preferred": lt.enc_policy.pe_enabled,
           "off": lt.enc_policy.pe_disabled}[options.encryption]
    return {
        "listen_interfaces": listen or options.listen,
        "enable_dht": options.discovery,
        "enable_lsd": options.discovery,
        "enable_upnp": options.discovery,
        "enable_natpmp": options.discovery,
        "dht_bootstrap_nodes": "dht.libtorrent.org:25401" if options.discovery else "",
        "out_enc_policy": enc,
        "in_enc_policy": enc,
        "allowed_enc_level": lt.enc_level.pe_rc4 if options.encryption == "required" else lt.enc_level.pe_both,
        "prefer_rc4": options.encryption == "required",
        "enable_outgoing_utp": False,
        "enable_incoming_utp": False,
        "send_buffer_watermark": 8 * MiB,
        "send_buffer_low_watermark": 1 * MiB,
        "send_buffer_watermark_factor": 50,
        "request_queue_time": 3,
        "max_out_request_queue": 4000,
        "max_allowed_in_request_queue": 500,
        "max_queued_disk_bytes": 128 * MiB,
        "unchoke_slots_limit": -1,
        "connections_limit": 1000,
        "allow_multiple_connections_per_ip": True,
        "close_redundant_connections": False,
        "min_reconnect_time": 2,  # named lab peers may start a second later: retry soon, not after a minute
        "max_failcount": 30,
        "aio_threads": 8,
        "hashing_threads": 2,
        "upload_rate_limit": options.upload_limit,
        "download_rate_limit": options.download_limit,
        "rate_limit_ip_overhead": False,
        "ignore_limits_on_local_network": not (options.upload_limit or options.download_limit),
        "mixed_mode_algorithm": lt.bandwidth_mixed_algo_t.prefer_tcp,
        "tick_interval": 100,  # ms; connection attempts to named peers wait for a tick (default 500)
        "user_agent": "labferry",
        "alert_mask": lt.alert_category.error | lt.alert_category.status | lt.alert_category.storage
        | lt.alert_category.peer | lt.alert_category.connect,  # connect: peer_disconnected_alert (TLS refusals)
    }
