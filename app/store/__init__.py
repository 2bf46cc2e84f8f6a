"""Persistence: one SQLite file in the data folder (see ``app.paths``)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from app.paths import database_path, unwritable
from backends.core.errors import LocalError

from .benchmarks import BenchmarkLog
from .db import connect
from .health import check_once
from .history import HistoryFilter, HistoryTable
from .jobs import JobsTable
from .preflights import PreflightLog
from .sites import SettingsTable, SitesTable

__all__ = ["Store", "HistoryFilter"]


class Store:
    """One connection and the tables over it; use from one thread only."""

    def __init__(self, path: Path | str | None = None, *, readonly: bool = False) -> None:
        self.path = Path(path) if path else database_path()
        check_once(self.path)  # before a read-only open: a damaged file is replaced by a new, empty one
        if readonly and (not self.path.exists() or not self.path.stat().st_size):
            connect(self.path).close()  # create and migrate once, then reopen read-only
        try:
            self.conn = connect(self.path, readonly=readonly)
        except sqlite3.OperationalError as exc:
            if "readonly" in str(exc) or "unable to open" in str(exc) or not os.access(self.path.parent, os.W_OK):
                raise LocalError(unwritable(self.path.parent)) from None
            raise LocalError(f"Ferry could not open its database {self.path} ({exc}). If another program holds "
                             f"it, close that; else move the file away and Ferry starts a new one.") from None
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
