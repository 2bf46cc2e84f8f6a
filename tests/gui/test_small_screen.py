"""The window on a 1280×720 laptop screen: it fits, and on every tab what a user works with keeps its room."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QApplication, QHeaderView, QToolBar


def test_every_tab_is_usable_at_1280_by_720(qtbot, window):
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 720, f"the window needs {hint.width()}×{hint.height()}"
    window.resize(1280, 720)
    QApplication.processEvents()
    assert (window.width(), window.height()) == (1280, 720)
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
        assert not hidden, f"toolbar buttons out of sight at 1280 px: {hidden}"
