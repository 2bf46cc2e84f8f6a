"""Sizes, rates and durations as people type and read them."""

from __future__ import annotations

import re

from backends.core.errors import BadRequest
from backends.core.words import counted  # noqa: F401  (the application's word for it, too)

_BINARY = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DECIMAL = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_rate(text: str) -> int:
    """Bytes per second from ``50M`` / ``50MB/s`` (MiB/s, as curl and wget read it), or bits: ``400Mbit``, ``1Gbps``.

    A lower-case ``b`` (``Mb/s``, ``Mbps``, ``Mbit``) means bits, decimal prefixes; otherwise bytes, binary.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?)(B|B/s|Bps|bit|bit/s|bits/s|bps|b/s|b|/s)?\s*", text)
    if not match:
        raise BadRequest(f"'{text}' is not a rate. Write bytes per second like 50M or 800K, or bits like 400Mbit.")
    number, prefix, unit = float(match.group(1)), match.group(2).lower(), match.group(4) or ""
    if unit.startswith("b"):
        value = number * _DECIMAL[prefix] / 8
    else:
        value = number * _BINARY[prefix]
    if value < 1:
        raise BadRequest(f"The rate '{text}' is too small; give at least 1 byte per second.")
    return int(value)



def parse_schedule(text: str) -> tuple:
    """A bandwidth schedule (``backends.core.schedule``) from rclone's form: ``08:00,10M 18:00,off`` — at each time
    of day (HH:MM or HH:MM:SS, local time) a rate as ``--limit-rate`` takes it, or ``off``; a lone rate is a cap
    all day. Sorted by time; a time given twice is refused, as is anything that is not a time and a rate."""
    from backends.core.schedule import MOST

    parts = text.split()
    if not parts:
        raise BadRequest("The bandwidth schedule is empty. Write it like 08:00,10M 18:00,off (or one rate).")
    if len(parts) == 1 and "," not in parts[0]:
        return ((0, _scheduled_rate(parts[0])),)
    if len(parts) > MOST:
        raise BadRequest(f"The bandwidth schedule has {len(parts)} entries; give at most {MOST}.")
    entries = {}
    for part in parts:
        moment, _, rate = part.partition(",")
        match = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?", moment)
        if not match or not rate:
            raise BadRequest(f"'{part}' is not a schedule entry. Write each as HH:MM,RATE, like 08:00,10M or "
                             "18:00,off.")
        start = int(match.group(1)) * 3600 + int(match.group(2)) * 60 + int(match.group(3) or 0)
        if start in entries:
            raise BadRequest(f"The bandwidth schedule gives {moment} twice; give each time once.")
        entries[start] = _scheduled_rate(rate)
    return tuple(sorted(entries.items()))


def _scheduled_rate(text: str) -> int | None:
    return None if text.strip().lower() in ("off", "unlimited", "none") else parse_rate(text)


def describe_schedule(schedule: tuple) -> str:
    """The schedule in its own form again (``08:00,10M 18:00,off``): Settings shows what it will follow."""
    def rate(value: int | None) -> str:
        return "off" if value is None else f"{value / _BINARY['m']:g}M" if value % 1024 == 0 else f"{value}B"

    return " ".join(f"{start // 3600:02d}:{start % 3600 // 60:02d}"
                    + (f":{start % 60:02d}" if start % 60 else "") + f",{rate(value)}" for start, value in schedule)


def format_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def format_rate(bytes_per_second: float) -> str:
    """Network people think in bits: Mbit/s, or Gbit/s past 1000."""
    mbit = bytes_per_second * 8 / 1e6
    return f"{mbit / 1000:.2f} Gbit/s" if mbit >= 1000 else f"{mbit:.0f} Mbit/s" if mbit >= 10 else f"{mbit:.1f} Mbit/s"


def format_ms(ms: float | None) -> str:
    """A round trip: whole milliseconds on a WAN, two significant digits on a LAN (loopback is ~0.01 ms, not 0)."""
    if ms is None:
        return "?"
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms" if ms >= 1 else f"{ms:.2g} ms"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "--"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``12h``, ``2d`` as seconds; ValueError with a sentence otherwise."""
    import re

    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|)\s*", text.lower())
    if not match:
        raise ValueError(f"'{text}' is not a duration; write it as 90s, 30m, 12h or 2d")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]
