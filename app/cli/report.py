"""``labferry report``: a transfer report for IT (HTML, PDF, CSV or JSON)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

from backends.core.errors import BadRequest, LocalError


def add_parser(sub) -> None:
    r = sub.add_parser("report", help="write a transfer report for IT (html, pdf, csv, json)")
    r.add_argument("--since", metavar="DATE", help="first day (YYYY-MM-DD, local time) or YYYY-MM-DDTHH:MM")
    r.add_argument("--until", metavar="DATE", help="last day included (same forms)")
    r.add_argument("--site", metavar="NAME", help="only transfers with this site (or host)")
    r.add_argument("--format", choices=("html", "pdf", "csv", "json"), help="default: from the file's extension")
    r.add_argument("-o", "--output", required=True, metavar="FILE")
    r.add_argument("--include-user-names", action="store_true",
                   help="keep user names in addresses (removed by default: a report leaves the lab)")
    r.set_defaults(handler=run_report)


def parse_day(text: str, *, end: bool = False) -> float:
    """A local date (whole day) or date and time, as a timestamp; ``end`` moves a bare day to its end."""
    for form in ("%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            moment = dt.datetime.strptime(text, form)
        except ValueError:
            continue
        if form == "%Y-%m-%d" and end:
            moment += dt.timedelta(days=1)
        return moment.timestamp()
    raise BadRequest(f"'{text}' is not a date Ferry understands; write it as YYYY-MM-DD (or YYYY-MM-DDTHH:MM).")


def run_report(args: argparse.Namespace) -> int:
    from app.reports import gather, write_report
    from app.store import Store

    from .desktop import has_desktop, need_desktop

    output = Path(args.output).expanduser()
    fmt = args.format or output.suffix.lstrip(".").lower()
    if fmt not in ("html", "pdf", "csv", "json"):
        raise BadRequest("Say which format to write with --format html|pdf|csv|json, or name the file .html, .pdf, "
                         ".csv or .json.")
    if output.is_dir() or args.output.endswith(("/", "\\")):
        raise BadRequest(f"{output} is a folder. Give the report a file name, such as {output / f'report.{fmt}'}.")
    if not output.parent.is_dir():
        raise LocalError(f"The folder {output.parent} does not exist. Create it first, or choose another file.")
    if not os.access(output.parent, os.W_OK):
        raise LocalError(f"Ferry cannot write to {output.parent} (permission denied). Choose another folder.")
    since = parse_day(args.since) if args.since else None
    until = parse_day(args.until, end=True) if args.until else None
    if since is not None and until is not None and until <= since:
        raise BadRequest("--until is before --since; swap them.")
    with Store(readonly=True) as store:
        data = gather(store, since=since, until=until, site=args.site, include_users=args.include_user_names)
    if fmt == "pdf":
        need_desktop("A PDF report", "write it as HTML (-o report.html), which needs none")
    drawn = {}
    if has_desktop():  # the charts; without the desktop part an HTML report has its tables only
        from app.ui.report_pdf import renderers

        drawn = renderers()
    try:
        write_report(data, fmt, output, **drawn)
    except OSError as exc:
        raise LocalError(f"Could not write {output}: {exc.strerror}. Choose another file.") from None
    totals = data.totals
    print(f"labferry: wrote {output} ({fmt}: {totals['transfers']} transfers, {len(data.sites)} sites).",
          file=sys.stderr)
    return 0
