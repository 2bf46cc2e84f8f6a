"""Transfer reports for IT: HTML, PDF, CSV, JSON from the history and benchmark log.

``gather`` collects the facts (no Qt); ``html``/``pdf`` lay them out (charts and PDF use
Qt's painter, offscreen when there is no display); ``tabular`` writes CSV/JSON.
"""

from __future__ import annotations

from pathlib import Path

from .gather import ReportData, gather

FORMATS = ("html", "pdf", "csv", "json")


def write_report(data: ReportData, fmt: str, path: Path | str) -> Path:
    path = Path(path)
    if fmt == "html":
        from .html import render

        path.write_text(render(data), encoding="utf-8")
    elif fmt == "pdf":
        from .pdf import write_pdf

        write_pdf(data, path)
    elif fmt == "csv":
        from .tabular import to_csv

        path.write_text(to_csv(data), encoding="utf-8", newline="")
    elif fmt == "json":
        from .tabular import to_json

        path.write_text(to_json(data) + "\n", encoding="utf-8")
    else:
        raise ValueError(f"unknown report format {fmt!r}")
    return path


__all__ = ["FORMATS", "ReportData", "gather", "write_report"]
