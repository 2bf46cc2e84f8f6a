"""Starting the desktop app: ``labferry-gui`` (or ``labferry gui``, or ``make run``)."""

from __future__ import annotations

import gc
import sys
import threading
import time

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QApplication, QMessageBox

from app import __version__
from app.paths import data_dir, database_path
from backends.core.errors import LocalError

HOST_KEY_WAIT = 300.0  # seconds a transfer waits for the user to answer a host-key question
SHARED_ANSWER = 5.0  # seconds an answer also serves the connections that were meeting the key as it was given


class HostKeyAsker(QObject):
    """Lets the engine (any thread) ask the user whether to trust a new SSH host key, as FileZilla and WinSCP do:
    the fingerprint (selectable, to compare with the one the administrator gave) and three answers."""

    _ask = Signal(str, str, str, object)
    #: the buttons, as the tests and the user's eyes find them
    ALWAYS, ONCE = "Trust and remember", "Trust this time"

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._ask.connect(self._show)
        self._pending: dict[tuple[str, str], dict] = {}  # (host, fingerprint) → the question on screen
        self._lock = threading.Lock()

    def __call__(self, host: str, key_type: str, fingerprint: str) -> str | None:
        """Called on a worker thread: blocks it (never the GUI) until the user answers; "always", "once" or
        None (refused, or no answer within ``HOST_KEY_WAIT``). Connections that meet the same key while it is
        asked, or just after (a pane lists while a transfer starts), share the one question instead of
        stacking boxes; a later connection asks again (Refresh after Cancel)."""
        key = (host, fingerprint)
        with self._lock:
            answer = self._pending.get(key)
            if answer is not None and answer["done"].is_set() and time.monotonic() - answer["at"] > SHARED_ANSWER:
                answer = None
            first = answer is None
            if first:
                answer = self._pending[key] = {"choice": None, "done": threading.Event(), "at": 0.0}
        if first:
            self._ask.emit(host, key_type, fingerprint, answer)
        answer["done"].wait(HOST_KEY_WAIT)
        return answer["choice"]

    @Slot(str, str, str, object)
    def _show(self, host: str, key_type: str, fingerprint: str, answer: dict) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, "Unknown server key",
                          f"Ferry has not connected to {host} before. It presents this {key_type} key:\n\n"
                          f"{fingerprint}\n\nCompare it with the fingerprint the server's administrator gave you. "
                          "Trust it only if they match.")
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        always = box.addButton(self.ALWAYS, QMessageBox.ButtonRole.AcceptRole)
        once = box.addButton(self.ONCE, QMessageBox.ButtonRole.YesRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        always.setToolTip("Save the key in known_hosts: the next connection will not ask")
        once.setToolTip("Trust the key until Ferry quits; nothing is saved")
        box.setDefaultButton(cancel)
        box.exec()
        answer["choice"] = {always: "always", once: "once"}.get(box.clickedButton())
        answer["at"] = time.monotonic()
        answer["done"].set()


def build(argv: list[str] | None = None):
    """The application, its engine and its window (also used by the tests)."""
    from app.engine import Engine
    from app.store import Store

    from .collector import GuiThreadCollector
    from .main_window import MainWindow
    from .panels import app_icon, apply_theme

    app = QApplication.instance() or QApplication(argv or sys.argv)
    app.setApplicationName("Ferry")
    app.setApplicationVersion(__version__)
    app.setWindowIcon(app_icon())
    app.setQuitOnLastWindowClosed(False)  # the tray may keep transfers running
    if app.findChild(GuiThreadCollector) is None:
        GuiThreadCollector(app)  # cycles are freed on this thread only (the app owns it)
    db = database_path()
    with Store(db) as store:
        settings = store.settings.all()
    from backends.ssh.once import forget_all

    forget_all()  # "Trust this time" lasts one window session, whatever an earlier one in this process said
    asker = HostKeyAsker(app)
    engine = Engine(db, max_jobs=int(settings.get("max_jobs", 3)), run_queue=True, ask_trust=asker,
                    keep_finished=True).start()
    apply_theme(settings.get("theme", "system"))
    window = MainWindow(engine, db, data_dir())
    # what exists now lives as long as the window (modules, Qt wrappers, the engine): out of the collector's
    # sight, a full collection scans only what came later, ~1/10 of the objects (one ran 48 ms on the GUI
    # thread while a pane listed 10,000 names during a transfer, tests/bench/pane_wan.py)
    gc.freeze()
    from .instance import FileOpenEvents

    app.installEventFilter(FileOpenEvents(window.open_items, window))  # macOS: .torrent and magnet: from Finder
    from app.store import health

    if health.notes:  # a damaged database was moved aside: said where the user looks, not only on stderr
        window.statusBar().showMessage(" ".join(health.notes))
    hints = app.styleHints()
    if hasattr(hints, "colorSchemeChanged"):  # Qt 6.5+: the desktop's light/dark switch, followed live
        hints.colorSchemeChanged.connect(window.follow_system_theme)
    return app, engine, window


def main(argv: list[str] | None = None, quit_after: float | None = None, items: list[str] | None = None) -> int:
    """``labferry-gui [URL_OR_FILE…]``: the window, with ``items`` added (addresses, .torrent files, magnets,
    accessions); when a window is already open for this data folder, the items go to it and this start ends."""
    from .instance import InstanceServer, hand_over

    argv = list(sys.argv if argv is None else argv)
    if items is None:
        items = [a for a in argv[1:] if not a.startswith("-")]
    QApplication.instance() or QApplication(argv or ["labferry-gui"])
    if hand_over(items):
        return 0
    try:
        app, engine, window = build(argv)
    except LocalError as exc:  # a data folder or database Ferry cannot use (held by another program): said
        QMessageBox.critical(None, "Ferry cannot start", str(exc))
        return exc.exit_status
    InstanceServer(window.open_items, window)
    window.show()
    if items:
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, lambda: window.open_items(items))
    if quit_after is not None:
        from PySide6.QtCore import QTimer

        QTimer.singleShot(int(quit_after * 1000), window.quit_for_real)

    def finish() -> None:
        if not window.isVisible() and (window._really_quit or window.tray is None):
            app.quit()

    app.lastWindowClosed.connect(finish)
    window.destroyed.connect(app.quit)
    code = app.exec()
    engine.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
