"""Persistence: one SQLite file in the data folder (see ``app.paths``)."""

from __future__ import annotations

from pathlib import Path

from app.paths import database_path

from .benchmarks import BenchmarkLog
from .db import connect
from .history import HistoryFilter, HistoryTable
from .jobs import JobsTable
from .preflights import PreflightLog
from .sites import SettingsTable, SitesTable

__all__ = ["Store", "HistoryFilter"]


class Store:
    """One connection and the tables over it; use from one thread only."""

    def __init__(self, path: Path | str | None = None, *, readonly: bool = False) -> None:
        self.path = Path(path) if path else database_path()
        if readonly and not self.path.exists():
            connect(self.path).close()  # create and migrate once, then reopen read-only
        self.conn = connect(self.path, readonly=readonly)
        self.jobs = JobsTable(self.conn)
        self.history = HistoryTable(self.conn)
        self.benchmarks = BenchmarkLog(self.conn)
        self.preflights = PreflightLog(self.conn)
        self.sites = SitesTable(self.conn)
        self.settings = SettingsTable(self.conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
