"""The benchmark log: one row per transfer, the raw material for ``--streams auto``
and the preflight recommendations."""

from __future__ import annotations

import sqlite3
import time

#: transfers smaller than this say little about a path's capacity
MEANINGFUL_BYTES = 64 * 1024 * 1024


class BenchmarkLog:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def add(self, *, job_id: int | None, backend: str, peer_host: str | None, streams: int, bytes: int,
            seconds: float, rtt_ms: float | None, started: float, capped: bool = False) -> int:
        mbps = bytes * 8 / seconds / 1e6 if seconds > 0 else 0.0
        cur = self.conn.execute(
            "INSERT INTO benchmarks (job_id, backend, peer_host, streams, bytes, seconds, throughput_mbps, rtt_ms,"
            " started, capped) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, backend, peer_host, streams, bytes, seconds, mbps, rtt_ms, started, int(capped)),
        )
        return cur.lastrowid

    def recent(self, peer_host: str | None = None, backend: str | None = None, limit: int = 50) -> list[dict]:
        clauses, args = [], []
        if peer_host:
            clauses.append("peer_host = ?")
            args.append(peer_host)
        if backend:
            clauses.append("backend = ?")
            args.append(backend)
        where = " WHERE " + " AND ".join(clauses) if clauses else ""
        rows = self.conn.execute(f"SELECT * FROM benchmarks{where} ORDER BY started DESC LIMIT ?", (*args, limit))
        return [dict(r) for r in rows]

    def for_plots(self, limit: int = 2000) -> list[dict]:
        """The log as the window plots it: each row with the rate its History entry shows (``shown_mbps``: what
        was delivered per second, where the log keeps the bytes on the wire of a compressed transfer) and the
        transfer's source and destination (its protocol as typed, and its direction): the History row of the
        same job that finished nearest the log's start (SQLite takes no outer column in a subquery's ORDER BY,
        so the nearest is found with ``min``)."""
        rows = self.conn.execute(
            "SELECT x.*, COALESCE(h.throughput_mbps, x.throughput_mbps) AS shown_mbps, h.source AS source,"
            " h.dest AS dest FROM (SELECT b.*, (SELECT h1.id FROM history h1 WHERE h1.job_id = b.job_id"
            " AND h1.outcome = 'done' AND abs(h1.started - b.started) = (SELECT min(abs(h2.started - b.started))"
            " FROM history h2 WHERE h2.job_id = b.job_id AND h2.outcome = 'done') LIMIT 1) AS history_id"
            " FROM benchmarks b ORDER BY b.started DESC LIMIT ?) x LEFT JOIN history h ON h.id = x.history_id"
            " ORDER BY x.started DESC", (limit,))
        return [{k: v for k, v in dict(r).items() if k != "history_id"} for r in rows]

    def best_streams(self, peer_host: str, backend: str, max_age_days: float = 30) -> int | None:
        """The stream count of the fastest recent meaningful transfer to this host, if any.

        Recent rows weigh more: each row's throughput is discounted by 2 % per day of age.
        """
        since = time.time() - max_age_days * 86400
        rows = self.conn.execute(
            "SELECT streams, throughput_mbps, started FROM benchmarks WHERE peer_host=? AND backend=?"
            " AND bytes >= ? AND started >= ? AND NOT capped ORDER BY started DESC LIMIT 20",
            (peer_host, backend, MEANINGFUL_BYTES, since),
        ).fetchall()
        if not rows:
            return None
        now = time.time()
        best = max(rows, key=lambda r: r["throughput_mbps"] * (0.98 ** ((now - r["started"]) / 86400)))
        return int(best["streams"]) if best["streams"] else None

    def meaningful(self, peer_host: str, backend: str | None = None, max_age_days: float = 90,
                   limit: int = 200) -> list[dict]:
        """Recent transfers to this host large enough to say something about the path (newest first); one held to
        a rate cap measured the cap, and says nothing about it."""
        clauses = ["peer_host = ?", "bytes >= ?", "started >= ?", "NOT capped"]
        args: list = [peer_host, MEANINGFUL_BYTES, time.time() - max_age_days * 86400]
        if backend:
            clauses.append("backend = ?")
            args.append(backend)
        rows = self.conn.execute(
            f"SELECT * FROM benchmarks WHERE {' AND '.join(clauses)} ORDER BY started DESC LIMIT ?", (*args, limit))
        return [dict(r) for r in rows]

    def best_by_backend(self, peer_host: str, max_age_days: float = 90) -> dict[str, float]:
        """backend → its best meaningful throughput to this host (Mbit/s): which protocol to suggest."""
        best: dict[str, float] = {}
        for row in self.meaningful(peer_host, max_age_days=max_age_days):
            best[row["backend"]] = max(best.get(row["backend"], 0.0), row["throughput_mbps"])
        return best
