"""Shared by the benchmarks: putting a section into docs/benchmarks.md."""

from __future__ import annotations

from pathlib import Path


def replace_section(target: Path | str, heading: str, text: str) -> None:
    """Replace the section that starts with ``heading`` (a ``## …`` line) with ``text``, or append it."""
    target = Path(target)
    old = target.read_text() if target.exists() else "# Benchmarks\n"
    start = old.find(heading)
    if start >= 0:
        end = old.find("\n## ", start + len(heading))
        old = old[:start] + old[end + 1:] if end >= 0 else old[:start]
    target.write_text(old.rstrip() + "\n\n" + text.rstrip() + "\n")
