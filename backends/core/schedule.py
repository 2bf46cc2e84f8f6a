"""A bandwidth schedule: the cap in force at each time of day, as rclone's ``--bwlimit "08:00,10M 18:00,off"`` and
FileZilla's speed-limit rules give a lab's shared uplink to people by day and to transfers by night.

A schedule is a tuple of (second of the day it begins, bytes per second or None for no cap), sorted by time. The
cap at a moment is the last entry begun at or before it; before the day's first entry, the day's last one still
holds (it carried over midnight). Times are the computer's local time, as a lab's working day is.
"""

from __future__ import annotations

import time

Schedule = tuple[tuple[int, int | None], ...]
#: the most entries a schedule may have (one every half hour)
MOST = 48
DAY = 24 * 3600


def second_of_day(when: float | None = None) -> int:
    local = time.localtime(time.time() if when is None else when)
    return local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec


def rate_at(schedule: Schedule, when: float | None = None) -> int | None:
    """The cap in bytes per second at ``when`` (now by default); None: no cap then (or no schedule)."""
    if not schedule:
        return None
    now = second_of_day(when)
    current = schedule[-1][1]  # carried over midnight
    for start, rate in schedule:
        if start > now:
            break
        current = rate
    return current


def next_change(schedule: Schedule, when: float | None = None) -> tuple[int, int | None] | None:
    """(seconds until the cap next changes, the cap then); None without a schedule or with one cap all day."""
    if len({rate for _, rate in schedule}) < 2:
        return None
    now, current = second_of_day(when), rate_at(schedule, when)
    coming = [e for e in schedule if e[0] > now] + [e for e in schedule if e[0] <= now]  # from now, round the day
    for start, rate in coming:
        if rate != current:
            return (start - now) % DAY or DAY, rate
    return None
