"""History: one row per finished job (done, failed or cancelled), with its outcome."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

COLUMNS = (
    "id, job_id, source, dest, backend, outcome, bytes, seconds, throughput_mbps, streams, retries, restarts,"
    " sha256, verified, verify_method, error, error_kind, peer_host, started, finished"
)

SORTABLE = {"finished", "outcome", "source", "dest", "backend", "bytes", "seconds", "throughput_mbps", "streams",
            "sha256", "error"}


@dataclass(frozen=True)
class HistoryFilter:
    search: str | None = None  # substring of source or destination
    backend: str | None = None
    outcome: str | None = None
    since: float | None = None
    until: float | None = None
    peer_host: str | None = None
    ids: tuple[int, ...] | None = None  # exactly these rows (a selection in the History view)

    def where(self) -> tuple[str, list]:
        clauses, args = [], []
        if self.search:
            clauses.append("(source LIKE ? ESCAPE '\\' OR dest LIKE ? ESCAPE '\\')")
            pattern = "%" + self.search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            args += [pattern, pattern]
        for column, value in (("backend", self.backend), ("outcome", self.outcome), ("peer_host", self.peer_host)):
            if value:
                clauses.append(f"{column} = ?")
                args.append(value)
        if self.since is not None:
            clauses.append("finished >= ?")
            args.append(self.since)
        if self.until is not None:
            clauses.append("finished < ?")
            args.append(self.until)
        if self.ids is not None:
            clauses.append(f"id IN ({', '.join('?' for _ in self.ids) or 'NULL'})")
            args += list(self.ids)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args


class HistoryTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, **row) -> int:
        row.setdefault("finished", time.time())
        keys = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        cur = self.conn.execute(f"INSERT INTO history ({keys}) VALUES ({marks})", tuple(row.values()))
        return cur.lastrowid

    def query(self, filt: HistoryFilter | None = None, limit: int = 100, offset: int = 0,
              order: tuple[str, bool] = ("finished", True)) -> list[dict]:
        where, args = (filt or HistoryFilter()).where()
        column, descending = order
        if column not in SORTABLE:
            raise ValueError(f"cannot sort history by {column}")
        direction = "DESC" if descending else "ASC"
        rows = self.conn.execute(
            f"SELECT {COLUMNS} FROM history{where} ORDER BY {column} {direction}, id {direction} LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return [dict(r) for r in rows]

    def full_rows(self, filt: HistoryFilter | None = None) -> list[dict]:
        """Every column (the report's raw material), oldest first."""
        where, args = (filt or HistoryFilter()).where()
        return [dict(r) for r in self.conn.execute(f"SELECT * FROM history{where} ORDER BY finished", args)]

    def count(self, filt: HistoryFilter | None = None) -> int:
        where, args = (filt or HistoryFilter()).where()
        return self.conn.execute(f"SELECT COUNT(*) FROM history{where}", args).fetchone()[0]
