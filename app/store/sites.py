"""Site profiles and settings tables (no secrets: those are in the keyring, see ``app.sites``)."""

from __future__ import annotations

import json
import sqlite3
import time

SITE_COLUMNS = ("name", "protocol", "host", "port", "user", "remote_folder", "streams", "key_file", "options")


class SitesTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def save(self, row: dict) -> None:
        now = time.time()
        values = {k: row.get(k) for k in SITE_COLUMNS}
        values["options"] = json.dumps(row.get("options") or {})
        values["remote_folder"] = values["remote_folder"] or ""
        values["streams"] = str(values["streams"] or "auto")
        self.conn.execute(
            f"INSERT INTO sites ({', '.join(SITE_COLUMNS)}, created, updated) VALUES ({', '.join('?' * 11)})"
            " ON CONFLICT(name) DO UPDATE SET " + ", ".join(f"{k}=excluded.{k}" for k in SITE_COLUMNS[1:])
            + ", updated=excluded.updated",
            (*values.values(), now, now),
        )

    def get(self, name: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM sites WHERE name=?", (name,)).fetchone()
        return _site(row) if row else None

    def all(self) -> list[dict]:
        return [_site(r) for r in self.conn.execute("SELECT * FROM sites ORDER BY name COLLATE NOCASE")]

    def remove(self, name: str) -> bool:
        return self.conn.execute("DELETE FROM sites WHERE name=?", (name,)).rowcount > 0


def _site(row: sqlite3.Row) -> dict:
    d = dict(row)
    d["options"] = json.loads(d.get("options") or "{}")
    return d


class SettingsTable:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def get(self, key: str, default=None):
        row = self.conn.execute("SELECT value FROM settings WHERE key=?", (key,)).fetchone()
        return json.loads(row["value"]) if row else default

    def set(self, key: str, value) -> None:
        self.conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET"
                          " value=excluded.value", (key, json.dumps(value)))

    def all(self) -> dict:
        return {r["key"]: json.loads(r["value"]) for r in self.conn.execute("SELECT key, value FROM settings")}
