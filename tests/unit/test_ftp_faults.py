"""FTP replies to the error classes the runner retries or not: vsftpd's broken-session OOPS is retried, its
configuration OOPS is not (seen in the conformance cell connections_cut: a login racing a killed session)."""

from __future__ import annotations

import aioftp
import pytest

from backends.core.errors import Transient
from backends.ftp.address import FtpAddress
from backends.ftp.faults import ftp_error

ADDRESS = FtpAddress.parse("ftp://ferryftp@127.0.0.1:2121/data/cut.bam")


@pytest.mark.parametrize("text, retried", [
    ("OOPS: priv_sock_get_result", True),
    ("OOPS: child died", True),
    ("OOPS: vsftpd: refusing to run with writable root inside chroot()", False),
    ("OOPS: cannot change directory:/srv/ftp", False),
])
def test_vsftpd_oops_is_retried_only_when_its_session_broke(text, retried):
    error = ftp_error(aioftp.StatusCodeError("230", "500", text), ADDRESS, step="login")
    assert isinstance(error, Transient) is retried
    assert text in str(error)


def test_a_tls_failure_is_final_at_first_and_retried_once_the_server_did_tls():
    """A server whose TLS never worked is set up wrong (final); one that did TLS with this process and then
    answers a handshake in plain text had a session killed under it (seen in connections_cut[ftps]): retried."""
    import ssl

    from backends.core.errors import TlsError
    from backends.ftp.faults import TLS_WORKED

    address = FtpAddress.parse("ftps://ferryftp@127.0.0.1:2990/data/cut.bam")
    wrong = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    first = ftp_error(wrong, address, step="tls")
    assert isinstance(first, TlsError) and not isinstance(first, Transient)
    TLS_WORKED.add(address.where)
    try:
        assert isinstance(ftp_error(wrong, address, step="tls"), Transient)
    finally:
        TLS_WORKED.discard(address.where)


def test_a_closed_tls_transport_is_a_broken_connection_not_an_internal_error():
    """asyncio's TLS transport answers get_extra_info with AttributeError once closed (seen in
    connections_cut[ftps]); Ferry reads that as a connection that broke, which is retried."""
    from backends.ftp.client import ssl_object_of

    class ClosedTls:
        def get_extra_info(self, name):
            return None._get_extra_info(name)  # what asyncio's _SSLProtocolTransport does once closed

    with pytest.raises(ConnectionResetError) as caught:
        ssl_object_of(ClosedTls())
    assert isinstance(ftp_error(caught.value, ADDRESS, step="read", started=True), Transient)
