"""The bandwidth schedule (``--bwlimit``, Settings): parsed as rclone writes it, the cap at each time of day
(across midnight), the next change, and the process-wide bucket following an injected clock across a boundary."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.units import parse_schedule
from backends.core.errors import BadRequest
from backends.core.schedule import next_change, rate_at
from backends.streams.ratelimit import ScheduledLimit

MiB = 1024 * 1024


def at(hh: int, mm: int, ss: int = 0) -> float:
    """A moment today at hh:mm:ss, local time."""
    now = time.localtime()
    return time.mktime((now.tm_year, now.tm_mon, now.tm_mday, hh, mm, ss, 0, 0, -1))


def test_a_day_of_caps_and_the_night_without():
    plan = parse_schedule("08:00,10M 12:30,400Mbit 18:00,off")
    assert plan == ((8 * 3600, 10 * MiB), (12 * 3600 + 1800, 50_000_000), (18 * 3600, None))
    assert rate_at(plan, at(7, 59)) is None  # the evening's "off" carried over midnight
    assert rate_at(plan, at(8, 0)) == 10 * MiB and rate_at(plan, at(12, 29, 59)) == 10 * MiB
    assert rate_at(plan, at(13, 0)) == 50_000_000 and rate_at(plan, at(23, 59)) is None
    assert next_change(plan, at(7, 0)) == (3600, 10 * MiB)
    assert next_change(plan, at(19, 0)) == (13 * 3600, 10 * MiB)  # tomorrow's 08:00
    assert parse_schedule("50M") == ((0, 50 * MiB),) and next_change(parse_schedule("50M")) is None


@pytest.mark.parametrize("text", ["", "08:00", "25:00,1M", "08:00,1M 08:00,2M", "8h,1M", "08:00,fast",
                                  " ".join(f"{h:02d}:00,1M {h:02d}:30,2M" for h in range(24)) + " 23:59,1M"])
def test_a_schedule_that_cannot_be_read_is_one_sentence(text):
    with pytest.raises(BadRequest) as caught:
        parse_schedule(text)
    assert "\n" not in str(caught.value) and str(caught.value).endswith(".")


def test_the_shared_bucket_follows_the_clock_across_a_boundary():
    """2 MiB/s until the injected clock passes 18:00, then no cap: 4 MiB paid before it take ~1.9 s (the bucket's
    first eighth is free), the same 4 MiB after it take no time."""
    clock = [at(17, 59, 50)]
    bucket = ScheduledLimit(parse_schedule("08:00,2M 18:00,off"), clock=lambda: clock[0])
    assert bucket.rate == 2 * MiB

    async def pay(total: int) -> float:
        began = time.monotonic()
        for _ in range(total // (256 * 1024)):
            await bucket.consume(256 * 1024)
        return time.monotonic() - began

    assert 1.5 < asyncio.run(pay(4 * MiB)) < 2.5
    clock[0] = at(18, 0, 1)
    assert bucket.rate == float("inf")
    assert asyncio.run(pay(4 * MiB)) < 0.05
