"""Cyclic garbage collection on the GUI thread only.

Python runs its cycle collector in whichever thread happens to allocate when a threshold is
crossed: the engine's loop, a report or preflight worker. When that collection frees a Qt
wrapper while the GUI thread is destroying a widget, PySide's lock and the GIL are taken in
opposite orders and both threads stop for good (seen in the GUI tests: a report thread's
collection against a window's deferred deletion). So the automatic collector is switched off
and this timer runs the same generational collections on the GUI thread (the usual PyQt/PySide
recipe); plain reference counting still frees everything else at once, in any thread.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500


class GuiThreadCollector(QObject):
    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(INTERVAL_MS)

    def check(self) -> None:
        """What the automatic collector would have done since the last tick, by the same thresholds."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return
