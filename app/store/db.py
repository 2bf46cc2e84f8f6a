"""The SQLite file: connection settings and schema migrations.

WAL lets the GUI read while the engine writes; ``PRAGMA user_version`` holds the
schema version, and each entry of ``MIGRATIONS`` moves it up by one, inside a
transaction, when a database is opened. Never edit a shipped migration: add one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from . import health

MIGRATIONS: list[str] = [
    # 1: queue, history, benchmark log
    """
    CREATE TABLE jobs (
        id          INTEGER PRIMARY KEY,
        source      TEXT NOT NULL,
        dest        TEXT NOT NULL,
        backend     TEXT NOT NULL,
        options     TEXT NOT NULL DEFAULT '{}',
        state       TEXT NOT NULL,
        position    REAL NOT NULL,
        bytes_total INTEGER,
        bytes_done  INTEGER NOT NULL DEFAULT 0,
        attempts    INTEGER NOT NULL DEFAULT 0,
        error       TEXT,
        error_kind  TEXT,
        owner_pid   INTEGER,
        created     REAL NOT NULL,
        updated     REAL NOT NULL
    );
    CREATE INDEX jobs_state ON jobs(state, position);

    CREATE TABLE history (
        id              INTEGER PRIMARY KEY,
        job_id          INTEGER,
        source          TEXT NOT NULL,
        dest            TEXT NOT NULL,
        backend         TEXT NOT NULL,
        outcome         TEXT NOT NULL,
        bytes           INTEGER,
        seconds         REAL,
        throughput_mbps REAL,
        streams         INTEGER,
        retries         INTEGER NOT NULL DEFAULT 0,
        restarts        INTEGER NOT NULL DEFAULT 0,
        sha256          TEXT,
        verified        INTEGER NOT NULL DEFAULT 0,
        verify_method   TEXT,
        error           TEXT,
        error_kind      TEXT,
        peer_host       TEXT,
        started         REAL,
        finished        REAL NOT NULL
    );
    CREATE INDEX history_finished ON history(finished);

    CREATE TABLE benchmarks (
        id              INTEGER PRIMARY KEY,
        job_id          INTEGER,
        backend         TEXT NOT NULL,
        peer_host       TEXT,
        streams         INTEGER,
        bytes           INTEGER NOT NULL,
        seconds         REAL NOT NULL,
        throughput_mbps REAL NOT NULL,
        rtt_ms          REAL,
        started         REAL NOT NULL
    );
    CREATE INDEX benchmarks_peer ON benchmarks(peer_host, backend, started);
    """,
    # 2: site profiles (secrets live in the OS keyring, never here) and settings
    """
    CREATE TABLE sites (
        name          TEXT PRIMARY KEY,
        protocol      TEXT NOT NULL,
        host          TEXT NOT NULL,
        port          INTEGER,
        user          TEXT,
        remote_folder TEXT NOT NULL DEFAULT '',
        streams       TEXT NOT NULL DEFAULT 'auto',
        key_file      TEXT,
        options       TEXT NOT NULL DEFAULT '{}',
        created       REAL NOT NULL,
        updated       REAL NOT NULL
    );
    CREATE TABLE settings (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
    # 3: what a report for IT needs per transfer: the round trip, the backend's notes (streams and TCP buffer
    # chosen, restarts) and this host's TCP settings at the time (JSON)
    """
    ALTER TABLE history ADD COLUMN rtt_ms REAL;
    ALTER TABLE history ADD COLUMN notes TEXT;
    ALTER TABLE history ADD COLUMN tcp TEXT
    """,
    # 4: preflight measurements and protocol comparisons (the result as JSON; the columns are what lookups need)
    """
    CREATE TABLE preflights (
        id                  INTEGER PRIMARY KEY,
        kind                TEXT NOT NULL DEFAULT 'preflight',
        site                TEXT,
        peer_host           TEXT NOT NULL,
        backend             TEXT NOT NULL,
        url                 TEXT NOT NULL,
        rtt_ms              REAL,
        bdp_bytes           INTEGER,
        recommended_streams INTEGER,
        result              TEXT NOT NULL,
        started             REAL NOT NULL
    );
    CREATE INDEX preflights_peer ON preflights(peer_host, backend, started)
    """,
    # 5: a finished job kept in the window's queue across restarts shows what it showed before: its result
    # (SHA-256, how it was verified), its notes and a list job's files (JSON)
    """
    ALTER TABLE jobs ADD COLUMN result TEXT;
    ALTER TABLE jobs ADD COLUMN notes TEXT;
    ALTER TABLE jobs ADD COLUMN files TEXT
    """,
    # 6: a transfer held to a rate cap (its own, Settings', a schedule's) measured the cap, not the path: it is
    # kept for the plots but left out when protocols or stream counts are compared
    """
    ALTER TABLE benchmarks ADD COLUMN capped INTEGER NOT NULL DEFAULT 0
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)


class SchemaTooNew(RuntimeError):
    pass


def connect(path: Path | str, *, readonly: bool = False) -> sqlite3.Connection:
    """A connection with Ferry's settings; migrates the schema unless read-only. A held database is waited for
    (``health.Patient``); a damaged one was moved aside by ``Store`` before it got here (``health.check_once``)."""
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1, factory=health.Patient)
    else:  # explicit transactions only
        conn = sqlite3.connect(path, timeout=1, isolation_level=None, factory=health.Patient)
    conn.where = str(path)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA busy_timeout = 1000")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        migrate(conn)
    return conn


def migrate(conn: sqlite3.Connection) -> int:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"This Ferry database was written by a newer Ferry (schema {version}, this one knows {SCHEMA_VERSION}). "
            "Update Ferry, or point LABFERRY_HOME at another folder."
        )
    for number in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] != number:  # another process migrated first
                conn.execute("ROLLBACK")
                continue
            for statement in MIGRATIONS[number].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION
