"""Tables that put the name first, as a browser's downloads list and FileZilla's queue do: the Name column takes
what the others leave, and is the widest. The others get the width their usual text needs (measured in the
table's own font, so a larger font or a HiDPI screen keeps them readable), and on a narrow window the columns
the Details pane repeats are hidden one by one until the name has its room. Names are elided in the middle: two
runs of one study differ at their ends."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QHeaderView, QTableView

#: the share of the table the name gets at least, before optional columns go
NAME_SHARE = 0.3
#: padding around a cell's text (the style's margins and the sort arrow)
PAD = 24


class NameFirst(QObject):
    """Keeps ``view``'s columns fitted as it is resized. ``samples``: column title → the text its cells usually
    hold (its width is measured); ``optional``: titles that may be hidden on a narrow table, first to go first."""

    def __init__(self, view: QTableView, samples: dict[str, str], optional: tuple[str, ...] = ()) -> None:
        super().__init__(view)
        self.view, self.samples, self.optional = view, samples, optional
        view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        view.setWordWrap(False)
        view.horizontalHeader().setStretchLastSection(False)
        view.installEventFilter(self)
        self.fit()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.FontChange):
            # after the view's own handling: its viewport takes the new size only then
            QTimer.singleShot(0, self, self.fit)
        return False

    def _columns(self) -> dict[str, int]:
        model = self.view.model()
        return {model.headerData(i, Qt.Orientation.Horizontal): i for i in range(model.columnCount())}

    def fit(self) -> None:
        columns = self._columns()
        if "Name" not in columns:
            return
        header, metrics = self.view.horizontalHeader(), self.view.fontMetrics()
        widths = {title: max(metrics.horizontalAdvance(self.samples.get(title, title)),
                             metrics.horizontalAdvance(title)) + PAD for title in columns if title != "Name"}
        room = self.view.viewport().width() or self.view.width()
        hidden: set[str] = set()
        for title in self.optional:  # on a narrow table: what the Details pane repeats goes first
            others = sum(w for t, w in widths.items() if t not in hidden)
            name = room - others
            if name >= max(NAME_SHARE * room, max((w for t, w in widths.items() if t not in hidden), default=0)):
                break
            hidden.add(title)
        for title, index in columns.items():
            header.setSectionHidden(index, title in hidden)
            if title == "Name":
                header.setSectionResizeMode(index, QHeaderView.ResizeMode.Stretch)
            else:
                header.setSectionResizeMode(index, QHeaderView.ResizeMode.Interactive)
                header.resizeSection(index, widths[title])
