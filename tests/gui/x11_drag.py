"""Real mouse drags between the Files tab's panes, on a real X server: the pointer is moved, pressed and released
by ``xdotool`` (the X server's XTEST input, as a mouse would), so Qt starts its own drag, runs its own drag loop
and delivers its own drop. test_on_x11.py runs this file under Xvfb; it is not collected on its own (its name is
not test_*.py), because the offscreen platform the rest of the suite uses has no pointer."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QApplication

from app.engine import JobState

from .test_files_tab import _digest, _finished, _listed, lab  # noqa: F401  (lab: the fixture)


@pytest.fixture(autouse=True)
def _real_x_server():
    if QApplication.platformName() != "xcb" or shutil.which("xdotool") is None:
        pytest.fail("these drags need Qt's xcb platform on an X server and xdotool (tests/system-deps.sh)",
                    pytrace=False)


def _row_point(pane, name: str) -> QPoint:
    """Where a row's name is drawn, in screen coordinates."""
    row = next(i for i, e in enumerate(pane.model.entries) if e.name == name)
    rect = pane.view.visualRect(pane.model.index(row, 0))
    return pane.view.viewport().mapToGlobal(rect.center())


def _empty_point(pane) -> QPoint:
    """Below the last row of a pane: its folder itself, not a folder in it."""
    viewport = pane.view.viewport()
    return viewport.mapToGlobal(QPoint(20, viewport.height() - 8))


def _mouse_drag(qtbot, start: QPoint, end: QPoint) -> None:
    """Press on ``start``, move past the drag distance, travel to ``end`` in steps, release: the events a hand on
    a mouse makes. xdotool runs beside the event loop, which Qt's drag keeps turning while it follows the
    pointer."""
    x0, y0, x1, y1 = str(start.x()), str(start.y()), str(end.x()), str(end.y())
    mid_x, mid_y = str((start.x() + end.x()) // 2), str((start.y() + end.y()) // 2)
    steps = ["mousemove", "--sync", x0, y0, "sleep", "0.3", "mousedown", "1", "sleep", "0.2",
             "mousemove", str(start.x() + 25), str(start.y() + 5), "sleep", "0.3",
             "mousemove", mid_x, mid_y, "sleep", "0.3", "mousemove", x1, y1, "sleep", "0.4",
             "mousemove", str(end.x() + 2), str(end.y() + 1), "sleep", "0.4", "mouseup", "1"]
    hand = subprocess.Popen(["xdotool", *steps], env=dict(os.environ), stderr=subprocess.PIPE, text=True)
    qtbot.waitUntil(lambda: hand.poll() is not None, timeout=20_000)
    assert hand.returncode == 0, hand.stderr.read()


def _panes(qtbot, window, lab, left_folder) -> tuple:  # noqa: F811
    window.tabs.setCurrentWidget(window.files)
    window.raise_()
    window.activateWindow()
    qtbot.waitExposed(window)
    left, right = window.files.panes()
    left.load(str(left_folder))
    _listed(qtbot, left)
    right.show_site(next(s for s in window._sites() if s.name == "lab"))
    _listed(qtbot, right)
    qtbot.wait(300)  # painted, so the rows sit where visualRect says
    return left, right


def test_a_remote_file_dragged_with_the_mouse_onto_this_computers_folder_arrives(qtbot, window, lab, tmp_path):  # noqa: F811
    here = tmp_path / "fetched"
    here.mkdir()
    left, right = _panes(qtbot, window, lab, here)
    _mouse_drag(qtbot, _row_point(right, "big.bin"), _empty_point(left))
    views = _finished(qtbot, window, 1)
    assert [v.state for v in views] == [JobState.DONE], [v.error for v in views]
    assert _digest(here / "big.bin") == _digest(lab / "big.bin")


def test_a_local_folder_dragged_with_the_mouse_onto_a_remote_folder_lands_inside_it(qtbot, window, lab,  # noqa: F811
                                                                                   tmp_path):
    local = tmp_path / "to-send"
    (local / "batch").mkdir(parents=True)
    for i in range(3):
        (local / "batch" / f"s{i}.fastq").write_bytes(os.urandom(50_000 + i))
    left, right = _panes(qtbot, window, lab, local)
    _mouse_drag(qtbot, _row_point(left, "batch"), _row_point(right, "runs"))  # onto the folder's row
    views = _finished(qtbot, window, 1)
    assert [v.state for v in views] == [JobState.DONE], [v.error for v in views]
    for i in range(3):
        assert _digest(lab / "runs" / "batch" / f"s{i}.fastq") == _digest(local / "batch" / f"s{i}.fastq")
