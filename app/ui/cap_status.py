"""The status bar's word on caps: whether a bandwidth cap is on now, in the queue's unit (Mbit/s) with the MiB/s it
was typed in, and when a schedule changes it next ("Cap 84 Mbit/s (10 MiB/s) · none from 18:00"). Nothing is shown
when no cap is set."""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel

from app.units import format_rate, parse_rate, parse_schedule
from backends.core.errors import TransferError
from backends.core.schedule import next_change, rate_at

#: how often the word is looked at again (a boundary passes while the window is open)
EVERY_MS = 15_000


def _both(rate: int) -> str:
    return f"{format_rate(rate)} ({rate / 1024 ** 2:.3g} MiB/s)"


def cap_text(settings: dict, when: float | None = None) -> str:
    """The words for Settings' cap and schedule at ``when`` (now); empty when neither is set."""
    try:
        cap = parse_rate(settings["limit_rate"]) if settings.get("limit_rate") else None
        schedule = parse_schedule(settings["rate_schedule"]) if settings.get("rate_schedule") else ()
    except TransferError:
        return "Settings hold a cap Ferry cannot read: open Settings"
    if cap is None and not schedule:
        return ""
    caps = [c for c in (cap, rate_at(schedule, when)) if c]
    words = [f"Cap {_both(min(caps))}" if caps else "No cap now"]
    change = next_change(schedule, when)
    if change is not None:
        seconds, rate = change
        at = time.strftime("%H:%M", time.localtime((time.time() if when is None else when) + seconds))
        words.append(f"{'none' if rate is None else _both(rate)} from {at}" + (" (schedule)" if cap is None else
                                                                             " (schedule; the cap still holds)"))
    return " · ".join(words)


def install(window) -> QLabel:
    """The label in ``window``'s status bar, kept current by a timer; ``refresh`` after Settings change."""
    label = QLabel("", window)
    label.setObjectName("cap")
    window.statusBar().addPermanentWidget(label)

    def refresh() -> None:
        label.setText(cap_text(window.settings))
        label.setVisible(bool(label.text()))

    timer = QTimer(label)
    timer.setInterval(EVERY_MS)
    timer.timeout.connect(refresh)
    timer.start()
    label.refresh = refresh  # type: ignore[attr-defined]
    refresh()
    return label
