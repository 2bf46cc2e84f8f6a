"""Explicit FTPS data connections in the order FTP servers expect: TCP first, then the command, then TLS.

aioftp opens a data connection with its TLS handshake before it sends ``RETR``/``STOR``/``MLSD``. vsftpd and
ProFTPD start TLS on a data connection only once the command that uses it has arrived, so each side waited for
the other: every FTPS transfer hung until the 30-second connect timeout. Here, as curl, lftp and FileZilla do,
the data connection is opened as plain TCP, the command is sent, and the handshake starts once the server has
answered it. The handshake resumes the control connection's TLS session, which both servers require by default
(vsftpd's ``require_ssl_reuse``), and verifies the certificate as the control connection did (same context,
same host name).
"""

from __future__ import annotations

import asyncio
import ssl

import aioftp
from aioftp.client import DataConnectionThrottleStreamIO
from aioftp.common import SSLSessionBoundContext, async_enterable


class FtpClient(aioftp.Client):
    """aioftp's client, with FTPS data connections that start TLS after their command (plain FTP unchanged)."""

    def _control_tls(self) -> ssl.SSLObject | None:
        if self._stream is None:
            return None
        return self._stream.writer.transport.get_extra_info("ssl_object")

    async def _open_connection(self, host: str, port: int):
        if self._control_tls() is None:
            return await super()._open_connection(host, port)
        # a data connection of an FTPS session: TLS comes after the command (get_stream)
        return await asyncio.wait_for(asyncio.open_connection(host, port), self.connection_timeout)

    @async_enterable
    async def get_stream(self, command: str | None = None, expected_codes=(), wait_codes=(),
                         censor_after: int | None = None, conn_type="I", offset: int = 0):
        control = self._control_tls()
        if control is None:
            return await super().get_stream(command, expected_codes, wait_codes, censor_after, conn_type, offset)
        reader, writer = await self.get_passive_connection(conn_type)
        try:
            if offset:
                await self.command("REST " + str(offset), "350")
            await self.command(command, expected_codes, wait_codes, censor_after)
            resumed = SSLSessionBoundContext(ssl.PROTOCOL_TLS_CLIENT, context=control.context,
                                             session=control.session)
            await writer.start_tls(resumed, server_hostname=self.server_host,
                                   ssl_handshake_timeout=self.connection_timeout)
        except BaseException:
            writer.close()
            raise
        return DataConnectionThrottleStreamIO(self, reader, writer, throttles={"_": self.throttle},
                                              timeout=self.socket_timeout)
