"""How a list job shares its budget of connections to one host between its small files and its large ones.

Its own module, free of the fetching machinery: the connections opened ahead while ENA's portal is asked
(``app/cli/accession.py``) are counted from ``WARM_MOST`` without first importing the list job, which took
~12 ms before the first of them could leave.
"""

from __future__ import annotations

#: large files fetched at once, each with its share of the budget (start-up overlaps; one slow file does not
#: hold the others)
LARGE_AT_ONCE = 4
#: small files of this mean size or more go at most WARM_AT_ONCE at a time: each later one then rides a connection
#: whose window earlier ones opened, which paid more than more connections (40 × 4 MiB at 50 ms / 1e-3: 535 Mbit/s
#: at 16 at once, 417–492 at 32 and 64); below it each file costs a round trip, and more at once pay (1,000 ×
#: 256 KiB: 378 Mbit/s at 16, 431 at 32, 448 at 64; docs/benchmarks.md)
WARM_FROM = 1 << 20
WARM_AT_ONCE = 16
#: connections opened to the file host while ENA's portal answers, at most: the lanes a study of small runs uses
#: at the default budget (32). A thousand runs of 256 KiB at 50 ms / 1e-3 had the link full ~0.2 s sooner with 32
#: than with 16, their first files asked for on them as the report arrived; a study of larger runs leaves the
#: rest unused (they close unread)
WARM_MOST = 32


def budget_split(budget: int, smalls: int, larges: int) -> tuple[int, int, int]:
    """(small files at once, large files at once, streams for each large file) within ``budget`` connections
    (at least one for each lane that has files)."""
    budget = max(1, budget)
    if not larges:
        return min(budget, max(1, smalls)), 0, 0
    small_share = min(smalls, budget // 2)
    lanes = max(1, min(LARGE_AT_ONCE, larges, budget - small_share))
    each = max(1, (budget - small_share) // lanes)
    return (max(1, small_share) if smalls else 0), lanes, each
