"""Preflight measurements and protocol comparisons, kept so recommendations improve with use.

The URL is stored without its password (``redact``), like everywhere else in the store.
"""

from __future__ import annotations

import json
import sqlite3
import time

from backends.core.urls import redact

#: a measurement older than this is redone before it is trusted (Settings: preflight_max_age_days)
DEFAULT_MAX_AGE_DAYS = 7.0


class PreflightLog:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, result: dict, *, kind: str = "preflight", site: str | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO preflights (kind, site, peer_host, backend, url, rtt_ms, bdp_bytes, recommended_streams,"
            " result, started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, site, result["host"], result["backend"], redact(result["url"]), result.get("rtt_ms"),
             result.get("bdp_bytes"), result.get("recommended_streams"), json.dumps(result),
             result.get("measured_at") or time.time()),
        )
        return cur.lastrowid

    def latest(self, peer_host: str, backend: str | None = None, *, kind: str = "preflight",
               max_age_days: float | None = None) -> dict | None:
        """The newest result for this host (and backend), if younger than ``max_age_days``."""
        clauses, args = ["peer_host = ?", "kind = ?"], [peer_host, kind]
        if backend:
            clauses.append("backend = ?")
            args.append(backend)
        if max_age_days is not None:
            clauses.append("started >= ?")
            args.append(time.time() - max_age_days * 86400)
        row = self.conn.execute(
            f"SELECT result FROM preflights WHERE {' AND '.join(clauses)} ORDER BY started DESC LIMIT 1", args
        ).fetchone()
        return json.loads(row["result"]) if row else None
