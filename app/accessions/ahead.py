"""A study's first small files asked for while ENA's report of it is still arriving.

A report of a thousand runs is ~200 KB: after its first bytes, two more round trips on a 50 ms path. The file
host's connections are opened meanwhile (``warm_up``); here each of the report's first rows, as its line
arrives (``ena.rows_arriving``), has its small FASTQ files asked for on those connections (``ask_ahead``), one
a connection. Their answers, and the connections' windows, start as the rest of the report comes; the lane that
fetches such a file reads the answer as its own (``backends/https/warm.py``), through the one destination
module as every file, checked against the report's MD5.

Only where nothing else could be meant: FASTQ from ENA over HTTPS, for rows the ``--filter``s and ``--runs``
keep, into a folder that is new or empty (a file already there and verified is never asked for again). A file
asked for that the plan then leaves out (a run ENA's report lists twice, a study refused for lack of room) is
never read: its connection closes unread.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import ena
from .choose import keeps
from .fetch import holds_anything


def asking_ahead(folder: Path, filters: dict[str, set[str]], runs: int | None, *, route: str, source: str,
                 kind: str, overrides) -> Callable[[dict], None] | None:
    """What to tell each arriving row of ENA's report (``ena.rows_arriving``), or None where nothing is asked
    ahead."""
    if route != "https" or source == "ncbi" or kind != "fastq" or holds_anything(folder):
        return None
    from app.requests import ask_ahead

    base, kept, asked = ena.route_bases("https")[0], [0], set()

    def on_row(row: dict) -> None:
        if not keeps(row, filters) or (runs is not None and kept[0] >= runs):
            return
        kept[0] += 1
        for path, _, size in ena.kind_files(row, kind):
            url = ena.files_url(base, path)
            if url not in asked:  # a run two accessions share is asked for once
                asked.add(url)
                ask_ahead(url, size, overrides)

    return on_row
