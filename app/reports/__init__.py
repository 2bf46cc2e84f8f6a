"""Transfer reports for IT: HTML, PDF, CSV, JSON from the history and benchmark log.

``gather`` collects the facts, ``html`` lays them out, ``tabular`` writes CSV/JSON; none of it imports Qt. The
charts and the PDF are painted by Qt (``app.ui.report_charts``, ``app.ui.report_pdf``, offscreen where there is
no display), handed in by the caller as ``draw`` and ``print_pdf``.
"""

from __future__ import annotations

from pathlib import Path

from .gather import ReportData, gather

FORMATS = ("html", "pdf", "csv", "json")


def write_report(data: ReportData, fmt: str, path: Path | str, *, draw=None, print_pdf=None) -> Path:
    """``draw``: paints a chart as PNG bytes (``html.Draw``); ``print_pdf(data, path, draw)``: writes the PDF."""
    path = Path(path)
    if fmt == "html":
        from .html import render

        path.write_text(render(data, draw=draw), encoding="utf-8")
    elif fmt == "pdf":
        if print_pdf is None:
            raise ValueError("a PDF report needs a printer (app.ui.report_pdf.write_pdf)")
        print_pdf(data, path, draw)
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
