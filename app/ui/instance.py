"""One window per user: a second ``labferry-gui URL_OR_FILE…`` hands its arguments to the running one.

The file manager and the browser start ``labferry-gui %U`` for every ``sftp://`` link, ``.torrent`` file and
magnet they open (``resources/labferry.desktop``); each must land in the window already open, not in a second
window with a second engine on the same queue. The first window listens on a local socket (``QLocalServer``:
a Unix socket on Linux and macOS, a named pipe on Windows) that only its user may open, named after the data
folder so two ``LABFERRY_HOME``s never meet. A later start connects, sends its arguments as one JSON line,
waits for the window's ``ok`` and exits.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from app.paths import data_dir

log = logging.getLogger(__name__)
WAIT_MS = 3000  # a window that does not answer in this long is not there (a stale socket)
MAX_MESSAGE = 1 << 20


def server_name() -> str:
    """The socket's name: this user's data folder, hashed (a path may be too long for a socket name)."""
    return "labferry-" + hashlib.sha256(str(data_dir().resolve()).encode()).hexdigest()[:16]


def hand_over(items: list[str]) -> bool:
    """Give ``items`` to the window already open for this data folder; False when there is none."""
    socket = QLocalSocket()
    socket.connectToServer(server_name())
    if not socket.waitForConnected(WAIT_MS):
        return False
    socket.write((json.dumps({"open": items}) + "\n").encode())
    socket.flush()
    answered = b""
    while not answered.endswith(b"\n") and socket.waitForReadyRead(WAIT_MS):
        answered += bytes(socket.readAll().data())
    socket.disconnectFromServer()
    return answered.strip() == b"ok"


class InstanceServer(QObject):
    """The first window's listener: each message's items go to ``open_items`` on the GUI thread."""

    def __init__(self, open_items: Callable[[list[str]], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.open_items = open_items
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._accept)
        name = server_name()
        if not self.server.listen(name):
            QLocalServer.removeServer(name)  # a socket left by a window that crashed: nobody answered on it
            if not self.server.listen(name):
                log.warning("cannot listen on %s: a second start will open its own window (%s)", name,
                            self.server.errorString())

    def _accept(self) -> None:
        while (socket := self.server.nextPendingConnection()) is not None:
            buffer = bytearray()

            def read(socket=socket, buffer=buffer) -> None:
                buffer.extend(bytes(socket.readAll().data()))
                if len(buffer) > MAX_MESSAGE:
                    socket.abort()
                    return
                if not buffer.endswith(b"\n"):
                    return
                try:
                    items = [str(i) for i in json.loads(bytes(buffer)).get("open", [])]
                except (ValueError, AttributeError):
                    socket.write(b"refused\n")
                    socket.disconnectFromServer()
                    return
                socket.write(b"ok\n")
                socket.flush()
                socket.disconnectFromServer()
                self.open_items(items)

            socket.readyRead.connect(read)
            socket.disconnected.connect(socket.deleteLater)

    def close(self) -> None:
        self.server.close()


class FileOpenEvents(QObject):
    """macOS hands a double-clicked .torrent and a clicked magnet: link to the running app as an Apple Event,
    not as arguments (Ferry.app's Info.plist claims both); Qt turns it into a ``FileOpen`` event on the
    application, which goes to ``open_items`` like a second start's arguments."""

    def __init__(self, open_items: Callable[[list[str]], None], parent: QObject) -> None:
        super().__init__(parent)
        self.open_items = open_items

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802  (Qt's name)
        if event.type() != QEvent.Type.FileOpen:
            return False
        url = event.url()
        item = event.file() if url.isLocalFile() or not url.scheme() else url.toString()
        if item:
            self.open_items([item])
        return True
