"""Sizes and counts as sentences say them, for every backend (the application's ``app.units`` reads them too)."""

from __future__ import annotations


def human_size(n: float) -> str:
    """``512 B``, ``1.5 MiB``: binary units, one decimal above bytes."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def counted(n: int, word: str, plural: str | None = None) -> str:
    """"1 stream", "8 streams", "0 runs", "1 folder": a count and its noun, in the plural unless it is one."""
    return f"{n} {word}" if n == 1 else f"{n} {plural or word + 's'}"


def first_named(names: list[str], shown: int = 5) -> str:
    """The first ``shown`` names, then "and more" when there are others: ``ERR1, ERR2 and more``."""
    return ", ".join(names[:shown]) + (" and more" if len(names) > shown else "")


def some_of(texts: list[str], shown: int = 5) -> str:
    """The first ``shown`` of ``texts`` joined by "; ", then how many more: ``a; b; and 3 more``."""
    more = f"; and {len(texts) - shown} more" if len(texts) > shown else ""
    return "; ".join(texts[:shown]) + more


def agrees(n: int, one: str, many: str) -> str:
    """The verb that agrees with a count: ``agrees(1, "is", "are")``."""
    return one if n == 1 else many
