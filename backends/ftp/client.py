"""aioftp's client with data connections opened as FTP servers expect, in fewer round trips.

**Round trips.** A range of a big file costs its stream a new data connection; aioftp spends four round trips
on it one after the other (``TYPE``, ``EPSV``, the connection, ``REST``, ``RETR``), and at 80 ms a 2-3 s range
then sat idle a sixth of its time. Here ``TYPE`` goes once per login, the data connection opens while ``REST``
and ``RETR`` travel together, and the replies are read in order: ``RETR``'s reply (and its bytes) count only
after ``REST``'s 350, so a server that refused the offset never has its bytes from 0 taken for the range.

**Explicit FTPS.** aioftp opens a data connection with its TLS handshake before it sends ``RETR``/``STOR``/
``MLSD``. vsftpd and ProFTPD start TLS on a data connection only once the command that uses it has arrived, so
each side waited for the other: every FTPS transfer hung until the 30-second connect timeout. Here, as curl,
lftp and FileZilla do, the data connection is opened as plain TCP, the command is sent, and the handshake starts
once the server has answered it. The handshake resumes the control connection's TLS session, which both servers
require by default (vsftpd's ``require_ssl_reuse``), and verifies the certificate as the control connection did
(same context, same host name).
"""

from __future__ import annotations

import asyncio
import ssl

import aioftp
from aioftp.client import DataConnectionThrottleStreamIO
from aioftp.common import SSLSessionBoundContext, async_enterable, wrap_into_codes


def ssl_object_of(transport) -> ssl.SSLObject | None:
    """The transport's TLS object (None on a plain one). asyncio's TLS transport raises AttributeError once its
    connection has closed (its protocol is gone): that is a broken connection, retried like one (seen when a
    server's sessions were killed during an FTPS transfer)."""
    try:
        return transport.get_extra_info("ssl_object")
    except AttributeError:
        raise ConnectionResetError("the TLS connection was closed") from None


class FtpClient(aioftp.Client):
    """aioftp's client, with FTPS data connections that start TLS after their command (plain FTP unchanged),
    and ``TYPE`` sent once per login rather than before every data connection (a round trip per range saved)."""

    _type_set: str | None = None

    async def command(self, command=None, expected_codes=(), wait_codes=(), censor_after=None):
        if command and command.startswith("TYPE ") and command == self._type_set:
            return None  # aioftp sends it before each data connection: already in force on this login
        reply = await super().command(command, expected_codes, wait_codes, censor_after)
        if command and command.startswith("TYPE "):
            self._type_set = command
        return reply

    def _control_tls(self) -> ssl.SSLObject | None:
        if self._stream is None:
            return None
        return ssl_object_of(self._stream.writer.transport)

    async def _open_connection(self, host: str, port: int):
        if self._control_tls() is None:
            return await super()._open_connection(host, port)
        # a data connection of an FTPS session: TLS comes after the command (get_stream)
        return await asyncio.wait_for(asyncio.open_connection(host, port), self.connection_timeout)

    @async_enterable
    async def get_stream(self, command: str | None = None, expected_codes=(), wait_codes=(),
                         censor_after: int | None = None, conn_type="I", offset: int = 0):
        control = self._control_tls()
        ip, port = await self._passive_address(conn_type)
        connecting = asyncio.ensure_future(self._open_connection(ip, port))
        await asyncio.sleep(0)  # the connection's SYN leaves before the commands: it is queued when RETR arrives
        try:
            if offset:
                await self.command("REST " + str(offset))  # sent now, its reply read before RETR's
            await self.command(command, censor_after=censor_after)
            if offset:
                await self._rest_reply()
            await self.command(None, expected_codes, wait_codes)
            reader, writer = await connecting
        except BaseException:
            connecting.cancel()
            await asyncio.gather(connecting, return_exceptions=True)
            if connecting.done() and not connecting.cancelled() and connecting.exception() is None:
                connecting.result()[1].close()
            raise
        if control is not None:
            try:
                resumed = SSLSessionBoundContext(ssl.PROTOCOL_TLS_CLIENT, context=control.context,
                                                 session=control.session)
                await writer.start_tls(resumed, server_hostname=self.server_host,
                                       ssl_handshake_timeout=self.connection_timeout)
            except BaseException:
                writer.close()
                raise
        return DataConnectionThrottleStreamIO(self, reader, writer, throttles={"_": self.throttle},
                                              timeout=self.socket_timeout)

    async def _rest_reply(self) -> None:
        """``REST``'s reply. Anything but 350 ends here: the transfer the pipelined command may have started
        (from byte 0) is waited out unread, and the refusal raised."""
        code, info = await self.parse_response()
        if code.matches("350"):
            return
        try:
            follow, _ = await asyncio.wait_for(self.parse_response(), self.connection_timeout)
            if follow.matches("1xx"):
                await asyncio.wait_for(self.parse_response(), self.connection_timeout)
        except (Exception, asyncio.TimeoutError):
            pass
        self.check_codes(wrap_into_codes(("350",)), code, info)

    async def _passive_address(self, conn_type: str) -> tuple[str, int]:
        """``TYPE`` (once per login), then ``EPSV`` or ``PASV`` as announced: where the data connection goes."""
        await self.command("TYPE " + conn_type, "200")
        ip = None
        for i, name in enumerate(self._passive_commands, start=1):
            try:
                ip, port = await (self._do_epsv() if name.lower() == "epsv" else self._do_pasv())
                break
            except aioftp.StatusCodeError as exc:
                if i == len(self._passive_commands) or not exc.received_codes[-1].matches("50x"):
                    raise
        if ip is None or ip == "0.0.0.0":
            ip = self.server_host
        return ip, port
