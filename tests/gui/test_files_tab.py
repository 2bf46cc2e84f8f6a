"""The Files tab in the real window: two panes against the real sshd and nginx, folder actions on the server's
disk, and drags between the panes and onto the queue that arrive byte-exact."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QItemSelectionModel, QPointF, Qt
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QInputDialog, QMessageBox

from app.engine import JobState
from app.store import Store


def _site(window, name: str, protocol: str, port: int, user, folder: str, key=None, **options) -> None:
    from app.sites import Site, SiteBook

    with Store() as store:
        SiteBook(store).save(Site(name, protocol, "127.0.0.1", port, user, folder, "2", key, options))
    window.refresh_sites()


@pytest.fixture
def lab(window, sshd, tmp_path):
    """A site "lab" on the test sshd, its folder a fresh one in the SSH user's home with a few files."""
    folder = sshd.home / f"files-tab-{time.monotonic_ns()}"
    (folder / "runs" / "r1").mkdir(parents=True)
    (folder / "runs" / "r1" / "reads_1.fastq").write_bytes(os.urandom(300_000))
    (folder / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    (folder / "notes.txt").write_text("lab notes\n")
    sshd.give(folder)
    _site(window, "lab", "sftp", sshd.port, sshd.user, str(folder), str(sshd.key), known_hosts=str(sshd.known_hosts))
    return folder


def _listed(qtbot, pane) -> list[str]:
    qtbot.waitUntil(lambda: not pane.listing, timeout=30_000)
    return sorted(e.name for e in pane.model.entries)


def _select(pane, *names: str) -> None:
    selection = pane.view.selectionModel()
    selection.clearSelection()
    for name in names:
        row = next(i for i, e in enumerate(pane.model.entries) if e.name == name)
        index = pane.model.index(row, 0)
        selection.select(index, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)


def _drop(pane_from, names: list[str], pane_to, onto: str | None = None) -> None:
    """What a mouse drag does: the source pane's selection as its model's drag data, dropped on the target view
    over the row ``onto`` (a folder) or over empty space."""
    _select(pane_from, *names)
    indexes = pane_from.view.selectionModel().selectedRows()
    mime = pane_from.model.mimeData(indexes)
    point = QPointF(5, pane_to.view.viewport().height() - 3)
    if onto is not None:
        row = next(i for i, e in enumerate(pane_to.model.entries) if e.name == onto)
        rect = pane_to.view.visualRect(pane_to.model.index(row, 0))
        point = QPointF(rect.center())
    event = QDropEvent(point, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    pane_to.view.dropEvent(event)


def _finished(qtbot, window, count: int) -> list:
    def done() -> bool:
        views = window.queue_model.views()
        return len(views) >= count and all(v.state.terminal for v in views)

    qtbot.waitUntil(done, timeout=120_000)
    return window.queue_model.views()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_browse_a_site_sort_filter_and_move_around(qtbot, window, lab):
    window.tabs.setCurrentWidget(window.files)
    right = window.files.right
    qtbot.waitUntil(lambda: right.site is not None and right.site.name == "lab", timeout=10_000)
    assert _listed(qtbot, right) == ["big.bin", "notes.txt", "runs"]
    assert right.path_bar.text() == f"lab:{lab}"  # where the pane is on the server, not "lab:/"
    first = right.model.index(0, 0).data()
    assert first == "runs"  # folders first
    right.view.sortByColumn(1, Qt.SortOrder.DescendingOrder)  # size, largest first (folders still on top)
    assert [right.model.index(r, 0).data() for r in range(3)] == ["runs", "big.bin", "notes.txt"]
    assert right.model.index(1, 3).data().startswith("-rw")  # permissions from SFTP
    right.filter_box.setText("NOTE")
    assert right.model.rowCount() == 1 and right.model.index(0, 0).data() == "notes.txt"
    right.filter_box.clear()

    right.view.doubleClicked.emit(right.model.index(0, 0))  # into runs/
    assert _listed(qtbot, right) == ["r1"] and right.path == f"{lab}/runs"
    right.actions_by_name["up"].trigger()
    assert _listed(qtbot, right) == ["big.bin", "notes.txt", "runs"]
    right.actions_by_name["back"].trigger()
    assert _listed(qtbot, right) == ["r1"]
    _type_path(qtbot, right, f"lab:{lab}/runs/r1")
    assert _listed(qtbot, right) == ["reads_1.fastq"]


def _logins_to(port: int) -> int:
    """Established TCP connections to ``port`` on this machine, from the client's side (/proc/net/tcp)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
            count += 1
    return count


def test_browsing_leaves_no_login_open_on_the_server(qtbot, window, lab, sshd):
    """Each listing logged in twice and closed only the second login: after an afternoon in the Files tab the
    server held 13 idle sessions of Ferry's. A pane holds no connection between listings."""
    before = _logins_to(sshd.port)
    window.tabs.setCurrentWidget(window.files)
    right = window.files.right
    qtbot.waitUntil(lambda: right.site is not None and right.site.name == "lab", timeout=10_000)
    _listed(qtbot, right)
    right.view.doubleClicked.emit(right.model.index(0, 0))  # into runs/
    assert _listed(qtbot, right) == ["r1"]
    right.actions_by_name["up"].trigger()
    assert _listed(qtbot, right) == ["big.bin", "notes.txt", "runs"]
    qtbot.waitUntil(lambda: _logins_to(sshd.port) == before, timeout=10_000)

    from tests.servers.sshd import keygen  # a refused login too: paramiko keeps its transport unless told

    _site(window, "stranger", "sftp", sshd.port, sshd.user, str(lab), str(keygen(lab.parent / f"k-{lab.name}")),
          known_hosts=str(sshd.known_hosts))
    for _ in range(3):
        right.show_site(next(s for s in window._sites() if s.name == "stranger"))
        assert _listed(qtbot, right) == []
    qtbot.waitUntil(lambda: _logins_to(sshd.port) == before, timeout=10_000)


def _type_path(qtbot, pane, text: str) -> None:
    """What a user does in the path bar: select what is there, type, press Enter."""
    from PySide6.QtTest import QTest

    pane.path_bar.setFocus()
    pane.path_bar.selectAll()
    QTest.keyClicks(pane.path_bar, text)
    QTest.keyClick(pane.path_bar, Qt.Key.Key_Return)


def test_a_site_pane_goes_above_its_default_folder_and_to_any_path_typed(qtbot, window, lab, sshd):
    """A site's default folder is where its pane starts, not a fence: Up goes above it (to the folder that holds
    it, then up to /), an absolute path typed goes there, a relative one below the folder shown, "~" to the login
    folder, and a path that is not there is said in the pane's status line, in words, with no box to dismiss."""
    window.tabs.setCurrentWidget(window.files)
    right = window.files.right
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)
    from PySide6.QtTest import QTest

    window.activateWindow()  # a shortcut reaches the active window only (under X11 too)
    qtbot.waitUntil(window.isActiveWindow, timeout=10_000)
    right.view.setFocus()
    QTest.keyClick(right.view, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)  # Up one folder, from the keyboard
    assert lab.name in _listed(qtbot, right) and right.path == str(lab.parent)
    _type_path(qtbot, right, "/")
    assert "tmp" in _listed(qtbot, right) and right.path_bar.text() == "lab:/"
    assert right.parent_path() is None
    _type_path(qtbot, right, str(lab / "runs"))
    assert _listed(qtbot, right) == ["r1"]
    _type_path(qtbot, right, "r1")  # below the folder shown
    assert _listed(qtbot, right) == ["reads_1.fastq"] and right.path == f"{lab}/runs/r1"
    _type_path(qtbot, right, "~")  # the login folder, then up from it: the server says where it is
    assert lab.name in _listed(qtbot, right) and right.path_bar.text() == "lab:~"
    right.actions_by_name["up"].trigger()
    qtbot.waitUntil(lambda: right.path == str(sshd.home.parent), timeout=30_000)
    assert sshd.home.name in _listed(qtbot, right)
    _type_path(qtbot, right, f"{lab}/no-such-folder")
    _listed(qtbot, right)
    text = right.status.text()
    assert "no-such-folder" in text and "Errno" not in text and "()" not in text, text
    assert not [w for w in window.findChildren(QMessageBox) if w.isVisible()], "a box over the pane"
    _fetch_from_above(qtbot, window, right, lab, sshd)


def _fetch_from_above(qtbot, window, right, lab, sshd) -> None:
    """What a pane above its default folder drags carries that path (``site:NAME/~/…``), and it arrives."""
    outside = sshd.home / f"above-{lab.name}.txt"
    outside.write_text("above the default folder\n")
    sshd.give(outside)
    _type_path(qtbot, right, "~")
    assert outside.name in _listed(qtbot, right)
    _select(right, outside.name)
    mime = right.model.mimeData(right.view.selectionModel().selectedRows())
    assert mime.text() == f"site:lab/~/{outside.name}"
    window.dropEvent(QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier))
    views = _finished(qtbot, window, 1)
    assert views[-1].state == JobState.DONE, views[-1].error
    assert (Path(window.settings["download_folder"]) / outside.name).read_text() == "above the default folder\n"


def test_make_rename_and_delete_a_remote_folder(qtbot, window, lab, monkeypatch):
    right = window.files.right
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)
    answers = iter(["results", "results-v2"])
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: (next(answers), True))
    right.actions_by_name["mkdir"].trigger()
    qtbot.waitUntil(lambda: "results" in [e.name for e in right.model.entries] and not right.listing, timeout=30_000)
    assert (lab / "results").is_dir()

    _select(right, "results")
    right.actions_by_name["rename"].trigger()
    qtbot.waitUntil(lambda: (lab / "results-v2").is_dir(), timeout=30_000)
    assert not (lab / "results").exists()

    asked: list[str] = []

    def no(parent, title, text, *args):
        asked.append(text)
        return QMessageBox.StandardButton.Cancel

    monkeypatch.setattr(QMessageBox, "question", no)
    qtbot.waitUntil(lambda: "results-v2" in [e.name for e in right.model.entries] and not right.listing,
                    timeout=30_000)
    _select(right, "runs")
    right.actions_by_name["delete"].trigger()
    assert asked == [f"Delete the folder runs and everything in it from lab:{lab}? It cannot be undone."]
    assert (lab / "runs" / "r1" / "reads_1.fastq").exists()  # cancelled: nothing went

    monkeypatch.setattr(QMessageBox, "question", lambda *a: QMessageBox.StandardButton.Yes)
    right.actions_by_name["delete"].trigger()
    qtbot.waitUntil(lambda: not (lab / "runs").exists(), timeout=30_000)
    qtbot.waitUntil(lambda: right.status.text() == "Deleted runs (3 entries). 3 items", timeout=30_000)
    assert sorted(e.name for e in right.model.entries) == ["big.bin", "notes.txt", "results-v2"]


def test_a_web_folder_lists_and_is_read_only(qtbot, window, nginx):
    folder = nginx.data / f"web-pane-{time.monotonic_ns()}"
    folder.mkdir()
    (folder / "sample.vcf").write_bytes(b"v" * 2048)
    _site(window, "web", "https", nginx.port, None, f"/{folder.name}", None, ca_file=nginx.ca_file)
    right = window.files.right
    right.show_site(next(s for s in window._sites() if s.name == "web"))
    assert _listed(qtbot, right) == ["sample.vcf"]
    assert right.model.entries[0].size == 2048
    said: list[str] = []
    right.said.connect(said.append)
    right.bridge.call("folder", "mkdir", right.address("new", with_secret=True, folder=True), right._options(),
                      error=said.append)
    qtbot.waitUntil(lambda: bool(said), timeout=10_000)
    assert "read-only" in said[0]


def test_drag_a_local_folder_onto_a_remote_folder_and_a_remote_file_back(qtbot, window, lab, tmp_path):
    local = tmp_path / "to-send"
    (local / "batch" / "lane1").mkdir(parents=True)
    for i in range(5):
        (local / "batch" / "lane1" / f"s{i}.fastq").write_bytes(os.urandom(100_000 + i))
    (local / "batch" / "manifest.tsv").write_text("sample\tfile\n")
    left, right = window.files.panes()
    left.load(str(local))
    assert _listed(qtbot, left) == ["batch"]
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)

    _drop(left, ["batch"], right, onto="runs")  # onto the folder row: into lab:/runs/
    views = _finished(qtbot, window, 1)
    assert [v.state for v in views] == [JobState.DONE], [v.error for v in views]
    for path in (local / "batch").rglob("*"):
        there = lab / "runs" / path.relative_to(local)
        assert there.is_dir() if path.is_dir() else _digest(there) == _digest(path)

    here = tmp_path / "fetched"
    here.mkdir()
    left.load(str(here))
    _listed(qtbot, left)
    right.load(str(lab))
    _listed(qtbot, right)
    _drop(right, ["big.bin"], left)  # onto the empty space of this computer's folder
    views = _finished(qtbot, window, 2)
    assert all(v.state == JobState.DONE for v in views), [v.error for v in views]
    assert _digest(here / "big.bin") == _digest(lab / "big.bin")
    qtbot.waitUntil(lambda: "big.bin" in [e.name for e in left.model.entries], timeout=10_000)  # pane refreshed


def test_drag_from_a_pane_onto_the_queue_fetches_into_the_download_folder(qtbot, window, lab, tmp_path):
    right = window.files.right
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)
    _select(right, "notes.txt")
    mime = right.model.mimeData(right.view.selectionModel().selectedRows())
    assert mime.text() == "site:lab/notes.txt"
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    views = _finished(qtbot, window, 1)
    assert views[0].state == JobState.DONE, views[0].error
    assert (Path(window.settings["download_folder"]) / "notes.txt").read_text() == "lab notes\n"


def test_files_dropped_from_the_file_manager_onto_a_remote_folder_are_sent_there(qtbot, window, lab, tmp_path):
    from PySide6.QtCore import QMimeData, QUrl

    data = tmp_path / "plate.csv"
    data.write_text("well,od\nA1,0.4\n")
    right = window.files.right
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)
    right.view.doubleClicked.emit(right.model.index(0, 0))  # into runs/
    assert _listed(qtbot, right) == ["r1"]
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(data))])  # what a file manager's drag carries
    below_rows = QPointF(5, right.view.viewport().height() - 3)
    right.view.dropEvent(QDropEvent(below_rows, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                    Qt.KeyboardModifier.NoModifier))
    views = _finished(qtbot, window, 1)
    assert views[0].state == JobState.DONE, views[0].error
    assert (lab / "runs" / "plate.csv").read_text() == "well,od\nA1,0.4\n"


def test_pack_a_run_folder_and_unpack_it_from_the_local_pane(qtbot, window, tmp_path):
    """Right-click a run folder → Pack into an archive: a queue job with progress leaves run42.tar beside it,
    which GNU tar reads byte-exact; right-click the archive elsewhere → Unpack here: the folder comes back."""
    import shutil
    import subprocess

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMenu

    here = tmp_path / "here"
    run = here / "run42"
    (run / "vcf" / "chr1").mkdir(parents=True)
    for i in range(50):
        (run / "vcf" / "chr1" / f"s{i}.vcf").write_bytes(os.urandom(200 + i))
    (run / "lane1.bam").write_bytes(os.urandom(3 << 20))
    left = window.files.left
    window.tabs.setCurrentWidget(window.files)
    left.load(str(here))
    assert _listed(qtbot, left) == ["run42"]
    _select(left, "run42")
    seen = {}

    def look() -> None:  # the context menu a right-click opened: what it offers, then Escape
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            QTimer.singleShot(50, look)
            return
        seen["menu"] = [a.text() for a in menu.actions()]
        menu.close()

    QTimer.singleShot(50, look)
    left.view.customContextMenuRequested.emit(left.view.visualRect(left.model.index(0, 0)).center())
    assert "Pack into an archive" in seen["menu"] and "Unpack here" in seen["menu"]
    left.actions_by_name["pack"].trigger()
    views = _finished(qtbot, window, 1)
    assert [v.state for v in views] == [JobState.DONE], [v.error for v in views]
    assert views[0].bytes_done == sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
    archive = here / "run42.tar"
    out = tmp_path / "gnu"
    out.mkdir()
    assert subprocess.run(["tar", "-xf", str(archive), "-C", str(out)]).returncode == 0
    for path in run.rglob("*"):
        assert path.is_dir() or _digest(path) == _digest(out / "run42" / path.relative_to(run))

    restore = tmp_path / "restore"
    restore.mkdir()
    shutil.move(archive, restore / "run42.tar")
    left.load(str(restore))
    assert _listed(qtbot, left) == ["run42.tar"]
    _select(left, "run42.tar")
    left.actions_by_name["unpack"].trigger()
    views = _finished(qtbot, window, 2)
    assert all(v.state == JobState.DONE for v in views), [v.error for v in views]
    for path in run.rglob("*"):
        assert path.is_dir() or _digest(path) == _digest(restore / "run42" / path.relative_to(run))
    qtbot.waitUntil(lambda: "run42" in [e.name for e in left.model.entries], timeout=10_000)  # pane refreshed


def test_shift_f6_sends_a_local_folder_to_the_site_as_one_archive(qtbot, window, lab, tmp_path):
    """Select a run folder in this computer's pane, Shift+F6 (Send to the other pane as one archive): the site's
    folder gets run42.tar, made as it was sent (nothing written here), which GNU tar reads byte-exact."""
    import subprocess

    from PySide6.QtTest import QTest

    here = tmp_path / "here"
    run = here / "run42"
    (run / "vcf").mkdir(parents=True)
    for i in range(60):
        (run / "vcf" / f"s{i}.vcf").write_bytes(os.urandom(300 + i))
    (run / "lane1.bam").write_bytes(os.urandom(2 << 20))
    left, right = window.files.panes()
    window.tabs.setCurrentWidget(window.files)
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)
    left.load(str(here))
    assert _listed(qtbot, left) == ["run42"]
    _select(left, "run42")
    window.activateWindow()  # a shortcut reaches the active window only (under X11 too)
    qtbot.waitUntil(window.isActiveWindow, timeout=10_000)
    left.view.setFocus()
    QTest.keyClick(left.view, Qt.Key.Key_F6, Qt.KeyboardModifier.ShiftModifier)
    views = _finished(qtbot, window, 1)
    assert [v.state for v in views] == [JobState.DONE], [v.error for v in views]
    assert sorted(p.name for p in here.iterdir()) == ["run42"]
    out = tmp_path / "gnu"
    out.mkdir()
    assert subprocess.run(["tar", "-xf", str(lab / "run42.tar"), "-C", str(out)]).returncode == 0
    for path in run.rglob("*"):
        assert path.is_dir() or _digest(path) == _digest(out / "run42" / path.relative_to(run))


def test_ctrl_shift_f6_unpacks_a_sites_archive_into_this_computers_folder(qtbot, window, lab, tmp_path):
    """Select run42.tar in the site's pane, Ctrl+Shift+F6 (Copy to the other pane and unpack): this computer's
    folder gets run42/ byte-exact, each member checked against the index; the archive itself is not kept."""
    import subprocess
    import sys

    from PySide6.QtTest import QTest

    source = tmp_path / "src" / "run42"
    (source / "vcf").mkdir(parents=True)
    for i in range(50):
        (source / "vcf" / f"s{i}.vcf").write_bytes(os.urandom(200 + i))
    subprocess.run([sys.executable, "-m", "app", "pack", str(source), str(lab / "run42.tar"), "-q"], check=True)
    here = tmp_path / "here"
    here.mkdir()
    left, right = window.files.panes()
    window.tabs.setCurrentWidget(window.files)
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    assert "run42.tar" in _listed(qtbot, right)
    left.load(str(here))
    _listed(qtbot, left)
    _select(right, "run42.tar")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=10_000)
    right.view.setFocus()
    QTest.keyClick(right.view, Qt.Key.Key_F6, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    views = _finished(qtbot, window, 1)
    assert [v.state for v in views] == [JobState.DONE], [v.error for v in views]
    assert sorted(p.name for p in here.iterdir()) == ["run42"]
    for path in source.rglob("*"):
        assert path.is_dir() or _digest(path) == _digest(here / "run42" / path.relative_to(source))
