"""Connections opened ahead for a study's lanes (``backends/https/warm.py``), against a real TLS server whose
handshakes take 0.4 s: a lane that finds none ready waits for one being opened instead of opening its own two
round trips later, and a lane beyond those being opened does not wait at all; a file asked for ahead before any
is ready goes out on the first one ready, and only the lane for that file is handed that connection."""

from __future__ import annotations

import socket
import ssl
import threading
import time

import pytest

from backends.https.warm import ask_ahead, take_asked, take_warm, warm
from tests.servers.nginx import make_certificates

HANDSHAKE_AFTER = 0.4


@pytest.fixture
def slow_tls(tmp_path):
    """A TLS server on a free port that waits HANDSHAKE_AFTER before each handshake; yields (port, CA file, the
    connections it accepted, each noted as it is accepted: a handshake may end on the client's side first)."""
    certs = make_certificates(tmp_path / "tls")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs["server"], certs["server_key"])
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    secured: list[socket.socket] = []
    stop = threading.Event()

    def one(raw: socket.socket) -> None:
        time.sleep(HANDSHAKE_AFTER)
        try:
            secured.append(context.wrap_socket(raw, server_side=True))
        except OSError:
            raw.close()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.append(raw)
            threading.Thread(target=one, args=(raw,), daemon=True).start()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    yield listener.getsockname()[1], str(certs["ca"]), accepted, secured
    stop.set()
    server.join(5)  # out of accept() before the listener closes under it
    listener.close()
    for conn in secured + accepted:
        conn.close()


def test_lanes_wait_for_the_connections_being_opened_and_no_more(slow_tls):
    port, ca_file, accepted, _ = slow_tls
    warm(f"https://127.0.0.1:{port}/", ca_file, False, None, False, 2, 10.0, 5.0)
    key = (("https", "127.0.0.1", port), ca_file)
    got: list[tuple[float, object]] = []
    began = time.monotonic()

    def lane() -> None:
        conn = take_warm(key, 5.0)
        got.append((time.monotonic() - began, conn))

    lanes = [threading.Thread(target=lane) for _ in range(3)]
    for thread in lanes:
        thread.start()
    for thread in lanes:
        thread.join(10)
    took = sorted(got, key=lambda pair: pair[0])
    assert len(took) == 3
    # the third lane: nothing ready, and the two being opened are claimed: it opens its own at once
    assert took[0][1] is None and took[0][0] < HANDSHAKE_AFTER / 2, took
    # the other two waited for the two being opened, each got one, and the server saw no other connection
    assert all(conn is not None and seconds >= HANDSHAKE_AFTER * 0.8 for seconds, conn in took[1:]), took
    assert len({id(conn) for _, conn in took[1:]}) == 2
    assert len(accepted) == 2
    assert take_warm(key, 5.0) is None  # none left, none being opened: no wait
    for _, conn in took[1:]:
        conn.close()


def _asked_on(server_side: socket.socket) -> bytes:
    """What the client sent on a connection, as the server reads it (nothing within 0.5 s: b"")."""
    server_side.settimeout(0.5)
    try:
        return server_side.recv(4096)
    except (TimeoutError, ssl.SSLError, OSError):
        return b""


def test_a_file_asked_ahead_goes_out_on_the_first_connection_ready_and_only_its_lane_takes_it(slow_tls):
    port, ca_file, _, secured = slow_tls
    base = f"https://127.0.0.1:{port}"
    warm(f"{base}/", ca_file, False, None, False, 2, 10.0, 5.0)
    key = (("https", "127.0.0.1", port), ca_file)
    assert ask_ahead(f"{base}/vol1/ERR1.fastq.gz", ca_file, 300_000)  # none ready: asked on the first one ready
    assert not ask_ahead(f"{base}/vol1/ERR2.fastq.gz", ca_file, 4 << 20)  # not small: left to the plan
    deadline = time.monotonic() + 5
    while len(secured) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    sent = sorted(_asked_on(conn).split(b"\r\n", 1)[0] for conn in secured)
    assert sent == [b"", b"GET /vol1/ERR1.fastq.gz HTTP/1.1"], sent
    other = take_warm(key, 5.0)  # a lane for another file: never the connection asked on
    assert other is not None and other.ahead is None
    asked = take_asked(key, "/vol1/ERR1.fastq.gz")
    assert asked is not None and asked.ahead == "/vol1/ERR1.fastq.gz" and asked is not other
    assert not ask_ahead(f"{base}/vol1/ERR3.fastq.gz", ca_file, 300_000)  # the lanes have begun: too late
    for conn in (other, asked):
        conn.close()
