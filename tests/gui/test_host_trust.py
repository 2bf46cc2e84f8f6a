"""A new SSH host trusted from the window, as FileZilla and Cyberduck ask: the fingerprint beside three answers
(Trust and remember, Trust this time, Cancel), from the site dialog's Test connection and from a Files pane.
Once it said only "run again with --accept-new-host-key", which a window cannot do."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
)

from app.store import Store


def when_shown(kind, act, owner, tries: int = 300) -> None:
    """Once a modal widget of ``kind`` is on screen, ``act(widget)`` (polled from the event loop, as a user
    waits). The polls belong to ``owner`` (the test's window): they end with it, not in the next test."""
    def poll(left: int = tries) -> None:
        widget = QApplication.activeModalWidget()
        if isinstance(widget, kind) and widget.isActiveWindow():  # on screen and taking input
            act(widget)
        elif left:
            QTimer.singleShot(50, owner, lambda: poll(left - 1))
    QTimer.singleShot(50, owner, poll)


def answering(choice: str, asked: list[str], owner) -> None:
    """Press ``choice`` on every host-key question while ``owner`` lives, counting them in ``asked``: a second
    question left unanswered would hang the test (the box's own loop runs no Python timeout), so it is
    counted instead."""
    def answer(box: QMessageBox) -> None:
        asked.append(box.text())
        QTest.mouseClick(button(box, choice), Qt.MouseButton.LeftButton)
        when_shown(QMessageBox, answer, owner)
    when_shown(QMessageBox, answer, owner)


def button(box: QMessageBox, text: str):
    return next(b for b in box.buttons() if b.text().replace("&", "") == text)


def field(dialog, label: str):
    form = dialog.findChild(QFormLayout)
    for row in range(form.rowCount()):
        shown = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        if shown and isinstance(shown.widget(), QLabel) and shown.widget().text().replace("&", "") == label:
            widget = form.itemAt(row, QFormLayout.ItemRole.FieldRole).widget()
            if isinstance(widget, (QLineEdit, QAbstractSpinBox)):
                return widget
            return widget.findChild(QLineEdit) or widget  # a row with a Browse button: its line
    raise AssertionError(f"no field labelled {label!r}")


def test_add_a_site_and_trust_its_key_from_test_connection(qtbot, window, sshd, tmp_path):
    from app.ui.dialogs import SiteDialog

    known = tmp_path / "known_hosts"
    known.write_text("")
    asked: list[str] = []

    def trust(box: QMessageBox) -> None:
        asked.append(box.text())
        QTest.mouseClick(button(box, "Trust and remember"), Qt.MouseButton.LeftButton)

    def fill(dialog: SiteDialog) -> None:
        for label, text in {"Name": "collab", "Host": "127.0.0.1", "User": sshd.user, "Key file": str(sshd.key),
                            "Default folder": str(sshd.home)}.items():
            QTest.keyClicks(field(dialog, label), text)
        field(dialog, "Port").setValue(sshd.port)
        known_field = dialog.findChild(QLineEdit, "option_known_hosts")
        QTest.keyClicks(known_field, str(known))
        when_shown(QMessageBox, trust, window)
        QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        deadline = time.monotonic() + 30
        while "Connected" not in dialog.status.text() and time.monotonic() < deadline:
            QApplication.processEvents()
            time.sleep(0.02)
        save = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save)
        QTest.mouseClick(save, Qt.MouseButton.LeftButton)

    when_shown(SiteDialog, fill, window)
    window.actions_by_name["site"].trigger()
    assert asked and "SHA256:" in asked[0] and "127.0.0.1" in asked[0]
    assert sshd.host_key_line.split()[2] in known.read_text()  # remembered
    from app.sites import SiteBook

    with Store() as store:
        assert SiteBook(store).get("collab").host == "127.0.0.1"


def _pane_site(window, sshd, known) -> None:
    from app.sites import Site, SiteBook

    folder = sshd.home / f"trust-{time.monotonic_ns()}"
    (folder / "runs").mkdir(parents=True)
    (folder / "notes.txt").write_text("x\n")
    sshd.give(folder)
    with Store() as store:
        SiteBook(store).save(Site("far", "sftp", "127.0.0.1", sshd.port, sshd.user, str(folder), "2", str(sshd.key),
                                  {"known_hosts": str(known)}))
    window.refresh_sites()


def test_a_files_pane_asks_and_trust_this_time_keeps_nothing(qtbot, window, sshd, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    _pane_site(window, sshd, known)
    asked: list[str] = []
    answering("Trust this time", asked, window)
    window.tabs.setCurrentWidget(window.files)  # the right pane opens the one site, and the test picks it too:
    right = window.files.right  # two logins meet the new key at once, and the user is asked once
    right.location.setCurrentIndex(right.location.findText("far"))
    right.location.activated.emit(right.location.currentIndex())
    qtbot.waitUntil(lambda: not right.listing and right.model.rowCount() == 2, timeout=30_000)
    assert len(asked) == 1 and known.read_text() == ""  # trusted for this session only: nothing saved
    right.actions_by_name["refresh"].trigger()
    qtbot.waitUntil(lambda: not right.listing and right.model.rowCount() == 2, timeout=30_000)
    assert len(asked) == 1  # not asked again in this session


def test_cancel_says_so_in_the_pane_in_the_windows_words(qtbot, window, sshd, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    _pane_site(window, sshd, known)
    window.tabs.setCurrentWidget(window.files)
    right = window.files.right
    asked: list[str] = []
    answering("Cancel", asked, window)
    right.location.setCurrentIndex(right.location.findText("far"))
    right.location.activated.emit(right.location.currentIndex())
    qtbot.waitUntil(lambda: not right.listing and bool(right.status.text()), timeout=30_000)
    assert len(asked) == 1, right.status.text()
    assert "You did not trust the host key" in right.status.text()
    assert "--accept-new-host-key" not in right.status.text() and known.read_text() == ""
