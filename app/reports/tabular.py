"""CSV and JSON reports: for spreadsheets and scripts (schema in docs/report-schema.md).

CSV cells that a spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``,
``@``, tab or carriage return) are prefixed with ``'`` (OWASP's advice), so a file
named ``=HYPERLINK(…)`` stays text. Numbers are written as numbers, never escaped.
"""

from __future__ import annotations

import csv
import io
import json
import time

from .gather import ReportData

CSV_COLUMNS = ("id", "started_utc", "finished_utc", "source", "dest", "protocol", "backend", "outcome", "bytes",
               "seconds", "throughput_mbps", "streams", "retries", "restarts", "rtt_ms", "sha256", "verified",
               "verify_method", "error_kind", "error", "peer_host", "congestion_control", "rmem_max", "tcp_rmem_max",
               "notes")
_DANGEROUS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value):
    if isinstance(value, str) and value.startswith(_DANGEROUS):
        return "'" + value
    return value


def iso(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp)) if stamp else ""


def to_csv(data: ReportData) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for t in data.transfers:
        tcp = t.tcp or {}
        rmem = tcp.get("tcp_rmem") or []
        row = (t.id, iso(t.started), iso(t.finished), t.source, t.dest, t.protocol, t.backend, t.outcome, t.bytes,
               round(t.seconds, 3), round(t.throughput_mbps, 3) if t.throughput_mbps is not None else "",
               t.streams if t.streams is not None else "", t.retries, t.restarts,
               round(t.rtt_ms, 3) if t.rtt_ms else "", t.sha256 or "", int(t.verified), t.verify_method or "",
               t.error_kind or "", t.error or "", t.peer_host or "", tcp.get("congestion") or "",
               tcp.get("rmem_max") or "", rmem[2] if len(rmem) == 3 else "", " | ".join(t.notes))
        writer.writerow([safe_cell(v) for v in row])
    return out.getvalue()


def to_json(data: ReportData) -> str:
    return json.dumps(data.to_dict(), indent=2, sort_keys=False)
