"""The window on a 1280×720 and a 1024×640 laptop screen: it fits, and on every tab what a user works with keeps
its room."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QAbstractItemView, QApplication, QHeaderView, QToolBar

#: what the toolbar may fold behind its » at 1024 px: both are in the menus too (Tools → Preflight, Edit → Settings)
FOLDED_AT_1024 = {"Preflight…", "Settings…"}


@pytest.mark.parametrize("size", [(1280, 720), (1024, 640)], ids=["1280x720", "1024x640"])
def test_every_tab_is_usable(qtbot, window, size):
    width, height = size
    hint = window.minimumSizeHint()
    assert hint.width() <= width and hint.height() <= height, f"the window needs {hint.width()}×{hint.height()}"
    window.resize(width, height)
    QApplication.processEvents()
    assert (window.width(), window.height()) == size
    checked = 0
    for index in range(window.tabs.count()):
        window.tabs.setCurrentIndex(index)
        QApplication.processEvents()
        page = window.tabs.currentWidget()
        name = window.tabs.tabText(index).replace("&", "")
        views = [v for v in page.findChildren(QAbstractItemView) if v.isVisible() and not isinstance(v, QHeaderView)]
        checked += len(views)
        for view in views:  # a table or tree squeezed to a sliver cannot be read
            assert view.viewport().height() >= 100 and view.viewport().width() >= 250, \
                f"{name}: {type(view).__name__} has {view.viewport().width()}×{view.viewport().height()} px"
        assert page.geometry().bottom() < window.height(), f"{name} runs off the bottom"
    assert checked >= window.tabs.count() - 1, "fewer tables were seen than tabs that hold them (all but the plots)"
    for toolbar in window.findChildren(QToolBar):  # no button pushed behind the » extension
        hidden = [a.text() for a in toolbar.actions() if a.isVisible() and not a.isSeparator()
                  and (toolbar.widgetForAction(a) is None or not toolbar.widgetForAction(a).isVisible())]
        allowed = FOLDED_AT_1024 if width < 1280 else set()
        assert not set(hidden) - allowed, f"toolbar buttons out of sight at {width} px: {hidden}"
        menus = {a.text().replace("&", "") for menu in window.menuBar().actions() if menu.menu()
                 for a in menu.menu().actions()}
        assert all(any(name in m for m in menus) for name in hidden), f"{hidden} are in no menu either: {menus}"


def test_names_come_first_and_whole_at_1280_and_1024(qtbot, window, nginx, tmp_path):
    """Six rows once read "big…bin": the Name column was the narrowest while Route and Protocol took the width,
    and at 1024 px it scrolled off. At 1280×720 and 1024×640 the Name column is the widest of the Queue's and of
    History's, and lies whole inside the table without scrolling."""
    from PySide6.QtWidgets import QTableView

    from app.engine import JobState

    from .test_window import job

    names = [f"NA12878_{run}_S1_L001_R1_001.fastq.gz" for run in ("A", "B", "C")]
    for name in names:
        window.submit(nginx.url(f"missing/{name}", scheme="http"), str(tmp_path / name))
    qtbot.waitUntil(lambda: all((v := job(window, n)) is not None and v.state == JobState.FAILED for n in names),
                    timeout=30_000)
    window.history_model.refresh()
    for width, height in ((1280, 720), (1024, 640)):
        window.resize(width, height)
        for table, tab in ((window.queue_view, 0), (window.history_view, 2)):
            window.tabs.setCurrentIndex(tab)
            QApplication.processEvents()
            assert isinstance(table, QTableView)
            header = table.horizontalHeader()
            model = table.model()
            name = next(i for i in range(model.columnCount()) if model.headerData(i, header.orientation()) == "Name")
            widths = {model.headerData(i, header.orientation()): header.sectionSize(i)
                      for i in range(model.columnCount()) if not header.isSectionHidden(i)}
            assert widths["Name"] == max(widths.values()), (width, widths)
            right = header.sectionViewportPosition(name) + header.sectionSize(name)
            assert header.sectionViewportPosition(name) >= 0 and right <= table.viewport().width(), (width, right)

