"""New transfer as a user starts it: the toolbar button and Ctrl+N open the dialog, its fields are filled by their
visible labels, OK queues the download, and the file arrives. The action was once dead: its triggered(bool)
reached new_transfer(source) as source=False, and every test called the slot directly."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QToolBar, QToolButton

from app.engine import JobState
from tests.integration.conftest import MiB, write_random
from tests.portable.dialogs import fill_and_accept


def download_through_dialog(qtbot, window, press, url: str, dest) -> None:
    seen: list[str] = []
    fill_and_accept(qtbot, {"From": url, "To": str(dest)}, seen)
    press()
    qtbot.waitUntil(lambda: any(v.source == url for v in window.queue_model.views()), timeout=10_000)
    assert seen == ["New transfer"]
    row = window.queue_model.row_of(next(v for v in window.queue_model.views() if v.source == url).id)
    qtbot.waitUntil(lambda: window.queue_model.view_at(row).state.terminal, timeout=60_000)
    done = window.queue_model.view_at(row)
    assert done.state == JobState.DONE, done.error


def test_the_toolbar_button_opens_new_transfer_and_downloads(qtbot, window, nginx, tmp_path):
    write_random(nginx.data / "nt-button.bin", 3 * MiB, seed=441)
    dest = tmp_path / "by-button"
    dest.mkdir()
    bar = window.findChild(QToolBar, "transfers")
    button = next(b for b in bar.findChildren(QToolButton) if b.defaultAction() is window.actions_by_name["new"])
    url = nginx.url("nt-button.bin", scheme="http")
    download_through_dialog(qtbot, window, lambda: QTest.mouseClick(button, Qt.MouseButton.LeftButton), url, dest)
    assert (dest / "nt-button.bin").read_bytes() == (nginx.data / "nt-button.bin").read_bytes()


def test_ctrl_n_opens_new_transfer_and_downloads(qtbot, window, nginx, tmp_path):
    write_random(nginx.data / "nt-keys.bin", 2 * MiB, seed=442)
    dest = tmp_path / "by-keys"
    dest.mkdir()
    window.activateWindow()
    window.queue_view.setFocus()
    url = nginx.url("nt-keys.bin", scheme="http")
    download_through_dialog(qtbot, window, lambda: QTest.keyClick(window.queue_view, Qt.Key.Key_N,
                                                                   Qt.KeyboardModifier.ControlModifier), url, dest)
    assert (dest / "nt-keys.bin").read_bytes() == (nginx.data / "nt-keys.bin").read_bytes()


def test_the_first_new_transfer_dialog_shows_from_and_its_hint_whole(qtbot, tmp_path):
    """With no site saved yet, the relay's drop-down (not in the form without an SSH site) lay over the From label
    and half the address box, whose hint read "ttps://…, sftp://u…": every visible widget has its own place, and
    the From box is wide enough for its hint."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QWidget

    from app.ui.dialogs import NewTransferDialog

    dialog = NewTransferDialog(None, "", str(tmp_path), sites=[])
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)

    def place(w: QWidget) -> QRect:
        return QRect(w.mapTo(dialog, QPoint(0, 0)), w.size())

    label = next(w for w in dialog.findChildren(QLabel) if w.text() == "From" and w.isVisible())
    shown = [w for w in dialog.findChildren(QWidget) if w.isVisible() and isinstance(w, (QComboBox, QLineEdit))]
    assert not [w for w in shown if place(w).intersects(place(label))], [type(w).__name__ for w in shown
                                                                           if place(w).intersects(place(label))]
    hint = dialog.source.placeholderText()
    assert dialog.source.width() >= dialog.source.fontMetrics().horizontalAdvance(hint), dialog.source.width()


def test_new_transfer_packs_a_folder_when_what_says_pack(qtbot, window, tmp_path):
    """What → Pack into an archive, From a run folder, To a folder: a queue job writes run42.tar there, which
    GNU tar reads byte-exact."""
    import os
    import subprocess

    run = tmp_path / "run42"
    (run / "qc").mkdir(parents=True)
    for i in range(30):
        (run / "qc" / f"s{i}.txt").write_bytes(os.urandom(500 + i))
    into = tmp_path / "archives"
    into.mkdir()

    done = what_through_dialog(qtbot, window, 1, str(run), str(into))  # Copy → Pack into an archive
    assert done.state == JobState.DONE, done.error
    out = tmp_path / "gnu"
    out.mkdir()
    assert subprocess.run(["tar", "-xf", str(into / "run42.tar"), "-C", str(out)]).returncode == 0
    for path in (run / "qc").iterdir():
        assert (out / "run42" / "qc" / path.name).read_bytes() == path.read_bytes()


def test_new_transfer_sends_a_folder_as_one_archive_to_a_site(qtbot, window, sshd, tmp_path):
    """What → Send a folder as one archive, From a run folder, To a site's folder: the site gets run42.tar, made
    as it was sent (never written here), which GNU tar reads byte-exact."""
    import os
    import subprocess
    import time

    from app.sites import Site, SiteBook
    from app.store import Store

    folder = sshd.home / f"packed-{time.monotonic_ns()}"
    folder.mkdir()
    sshd.give(folder)
    with Store() as store:
        SiteBook(store).save(Site("lab", "sftp", "127.0.0.1", sshd.port, sshd.user, str(folder), "2", str(sshd.key),
                                  {"known_hosts": str(sshd.known_hosts)}))
    window.refresh_sites()
    run = tmp_path / "run42"
    (run / "qc").mkdir(parents=True)
    for i in range(30):
        (run / "qc" / f"s{i}.txt").write_bytes(os.urandom(500 + i))

    done = what_through_dialog(qtbot, window, 3, str(run), "site:lab/")  # Copy → … → Send a folder as one archive
    assert done.state == JobState.DONE, done.error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run42"]
    out = tmp_path / "gnu"
    out.mkdir()
    assert subprocess.run(["tar", "-xf", str(folder / "run42.tar"), "-C", str(out)]).returncode == 0
    for path in (run / "qc").iterdir():
        assert (out / "run42" / "qc" / path.name).read_bytes() == path.read_bytes()


def test_new_transfer_unpacks_an_archive_of_a_site_as_it_arrives(qtbot, window, nginx, tmp_path):
    """What → Unpack an archive, From an https:// address of a .tar, To a folder here: the folder gets the
    members (checked against the archive's index), not the archive."""
    import os
    import subprocess
    import sys

    run = tmp_path / "src" / "run42"
    (run / "qc").mkdir(parents=True)
    for i in range(30):
        (run / "qc" / f"s{i}.txt").write_bytes(os.urandom(500 + i))
    (nginx.data / "gui-unpack").mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "app", "pack", str(run), str(nginx.data / "gui-unpack" / "run42.tar"), "-q"],
                   check=True)
    into = tmp_path / "into"
    into.mkdir()
    url = nginx.url("gui-unpack/run42.tar").replace("https://", "http://").replace(str(nginx.port),
                                                                                  str(nginx.http_port))
    done = what_through_dialog(qtbot, window, 2, url, str(into) + "/")  # Copy → Pack → Unpack an archive
    assert done.state == JobState.DONE, done.error
    assert sorted(p.name for p in into.iterdir()) == ["run42"]
    for path in (run / "qc").iterdir():
        assert (into / "run42" / "qc" / path.name).read_bytes() == path.read_bytes()


def what_through_dialog(qtbot, window, downs: int, source: str, dest: str):
    """New transfer from the toolbar's action: What moved ``downs`` choices down with the arrow key, From and
    To typed, OK clicked; returns the job once it ended."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QComboBox, QDialogButtonBox, QFormLayout

    from tests.portable.dialogs import field

    def act() -> None:
        dialog = QApplication.activeModalWidget()
        if dialog is None:
            QTimer.singleShot(50, act)
            return
        form = dialog.findChild(QFormLayout)
        what = next(form.itemAt(r, QFormLayout.ItemRole.FieldRole).widget() for r in range(form.rowCount())
                    if isinstance(form.itemAt(r, QFormLayout.ItemRole.FieldRole).widget(), QComboBox))
        what.setFocus()
        for _ in range(downs):
            QTest.keyClick(what, Qt.Key.Key_Down)
        for label, text in (("From", source), ("To", dest)):
            edit = field(dialog, label)
            edit.clear()
            QTest.keyClicks(edit, text)
        QTest.mouseClick(dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok),
                         Qt.MouseButton.LeftButton)

    QTimer.singleShot(50, act)
    window.actions_by_name["new"].trigger()
    qtbot.waitUntil(lambda: any(v.state.terminal for v in window.queue_model.views()), timeout=60_000)
    return window.queue_model.views()[0]
