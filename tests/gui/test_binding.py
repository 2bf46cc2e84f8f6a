"""The Qt binding itself keeps Python's reference counts: PySide6 6.12.0 on Python 3.11 released ``None`` once
more than it took it on every call that returns nothing, and a window died ("none_dealloc") after enough
repaints. pyproject.toml keeps such a binding out; this fails if one comes back, on any Python."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication, QWidget


def test_calls_into_qt_leave_none_as_they_found_it(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    widget.show()
    before = sys.getrefcount(None)
    for _ in range(1000):
        widget.setEnabled(True)
        widget.update()
        QApplication.processEvents()
    assert sys.getrefcount(None) - before >= -10, "the Qt binding over-releases None: see pyproject.toml"


def test_icons_paint_without_calling_back_into_python(qtbot):
    """The window's icons are pixmaps drawn once (app/ui/icons.py), not a Python icon engine per paint."""
    from PySide6.QtCore import QSize

    from app.ui.icons import ACTIONS, icon

    drawn = icon(ACTIONS["new"])
    assert not drawn.isNull() and QSize(16, 16) in drawn.availableSizes()
    before = sys.getrefcount(None)
    for _ in range(500):
        drawn.pixmap(QSize(24, 24))
    assert abs(sys.getrefcount(None) - before) <= 10
