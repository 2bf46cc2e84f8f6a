"""The details pane: everything about the selected job, and what to do when it failed."""

from __future__ import annotations

import html
import re
from pathlib import Path

from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QTextBrowser

from app.engine import JobState, JobView
from app.sites import protocol_name
from app.units import counted, format_bytes, format_duration, format_ms, format_rate

from .words import for_window

REMEDIES = {
    "not-found": "Check the address: the file may have moved or been renamed on the server.",
    "permission-denied": "Ask the server's owner for access, or pick a folder you can write to.",
    "auth": "Check the user name and key in the site profile (Sites → Edit), or load the key into ssh-agent.",
    "host-key": "Compare the fingerprint with the server's administrator before trusting it.",
    "tls": "If the server uses your lab's own certificate authority, add it as the site's CA file.",
    "unreachable": "Check the host name and port, your network, and whether the server is running.",
    "transient": "Ferry already retried. Press Retry to try again now.",
    "remote-changed": "The file kept changing on the server. Retry once it is complete there.",
    "local": "Choose another destination folder, or free the name that is in the way.",
    "no-space": "Free space on the destination disk, then press Retry: the transfer resumes.",
    "corrupt": "Press Retry to fetch the data again; if it fails twice, ask the server's owner.",
    "bad-request": "Correct the address or option in a New transfer.",
}


def _not_repeating(remedy: str, said: str) -> str:
    """The remedy's sentences that the error's own words do not already give ("press Retry" said once)."""
    if "Retry" not in said:
        return remedy
    return " ".join(s for s in re.split(r"(?<=\.) ", remedy) if "Retry" not in s)


def render(view: JobView | None) -> str:
    if view is None:
        return "<p style='color:gray'>Select a transfer to see its details.</p>"
    address = view.source if "://" in view.source else view.dest
    rows = [
        ("From", view.source), ("To", view.dest), ("Protocol", protocol_name(view.backend, address)),
        ("State", view.state.value),
        ("Progress", f"{format_bytes(view.bytes_done)} of {format_bytes(view.bytes_total)}"),
    ]
    if view.state.active:
        rows += [("Rate", format_rate(view.rate)), ("ETA", format_duration(view.eta)), ("Streams", view.streams)]
        if len(view.stream_rates) > 1:  # one stream's rate is the Rate above
            ordered = sorted(view.stream_rates)
            rows.append(("Per stream", f"{format_rate(ordered[0])} to {format_rate(ordered[-1])}, median "
                                       f"{format_rate(ordered[len(ordered) // 2])}: "
                         + " · ".join(f"{r * 8 / 1e6:.0f}" for r in view.stream_rates) + " Mbit/s"))
    result = view.result or {}
    if result:
        rows += [
            ("Duration", format_duration(result.get("seconds"))),
            ("Throughput", f"{result.get('throughput_mbps', 0):.0f} Mbit/s over "
                           f"{counted(result.get('streams') or 1, 'stream')}"),
            ("SHA-256", result.get("sha256") or ""),
            ("Verified", ("yes — " if result.get("verified") else "no — ") + (result.get("verify_method") or "")),
        ]
        wire, seconds = result.get("bytes_on_wire"), result.get("seconds")
        if wire and seconds:  # travelled compressed: the path's own rate beside the delivered one
            delivered = result.get("bytes_fetched") or result.get("bytes") or 0
            rows.append(("On the wire", f"{format_bytes(wire)} at {wire * 8 / seconds / 1e6:.0f} Mbit/s (zstd, "
                                        f"{delivered / wire:.1f}× fewer bytes than delivered)"))
        if result.get("rtt_ms"):
            rows.append(("Round trip", format_ms(result["rtt_ms"])))
        if result.get("restarts"):
            rows.append(("Restarts", f"{result['restarts']} (the file changed on the server)"))
    if view.attempts:
        rows.append(("Retries", str(view.attempts)))
    table = "".join(f"<tr><td style='color:gray;padding-right:8px'>{html.escape(k)}</td>"
                    f"<td>{html.escape(str(v))}</td></tr>" for k, v in rows)
    # what to do comes first, then the figures: the pane is a fifth of the window, so what was below the table
    # (the study's links, "What to try") needed scrolling to be found at all
    parts = []
    if view.state == JobState.FAILED and view.error:
        said = for_window(view.error)
        remedy = _not_repeating(REMEDIES.get(view.error_kind or "", "Press Retry to try again."), said)
        parts.append(f"<p style='color:#c0392b'><b>What happened:</b> {html.escape(said)}</p>"
                     + (f"<p><b>What to try:</b> {html.escape(remedy)}</p>" if remedy else ""))
    if view.files:
        parts.append(_study_files(view))
    parts.append(f"<table>{table}</table>")
    if view.files:
        parts.append(files_table(view.files))
    if view.notes:
        notes = "".join(f"<li>{html.escape(for_window(n))}</li>" for n in view.notes[-20:])
        parts.append(f"<p><b>Log</b></p><ul>{notes}</ul>")
    return "".join(parts)


def _study_files(view: JobView) -> str:
    """An accession's samplesheet and report, and its folder, as links (they open in the desktop's apps)."""
    if "://" in view.dest:
        return ""
    folder = Path(view.dest)
    links = [f"<a href='{folder.as_uri()}'>Open folder</a>"] if folder.is_absolute() else []
    for label, name in (("samplesheet.csv", "samplesheet.csv"), ("metadata.tsv (the archive's report)",
                                                                   "metadata.tsv")):
        path = folder / name
        if path.is_absolute() and path.exists():
            links.append(f"<a href='{path.as_uri()}'>{html.escape(label)}</a>")
    return f"<p><b>In {html.escape(str(folder))}:</b> {' · '.join(links)}</p>" if links else ""


#: the order a list job's files are shown in: what needs the reader first
_STATE_ORDER = {"failed": 0, "fetching": 1, "waiting": 2, "fetched": 3, "kept": 4}
SHOWN_FILES = 300


def files_table(files: dict) -> str:
    """A list job's files (an accession's): how many are in each state, then each file, failed ones first."""
    counts: dict[str, int] = {}
    for state, *_ in files.values():
        counts[state] = counts.get(state, 0) + 1
    head = ", ".join(f"{n} {state}" for state, n in sorted(counts.items(), key=lambda kv: _STATE_ORDER.get(kv[0], 9)))
    ordered = sorted(files.items(), key=lambda kv: (_STATE_ORDER.get(kv[1][0], 9), kv[0]))
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td style='padding-left:8px;color:"
        f"{'#c0392b' if state == 'failed' else 'gray'}'>{html.escape(state)}</td>"
        f"<td style='padding-left:8px'>{html.escape(for_window(error))}</td></tr>"
        for name, (state, error, *_) in ordered[:SHOWN_FILES])
    more = f"<p style='color:gray'>and {len(ordered) - SHOWN_FILES} more</p>" if len(ordered) > SHOWN_FILES else ""
    return f"<p><b>Files</b> ({len(files)}: {html.escape(head)})</p><table>{rows}</table>{more}"


class DetailsPane(QTextBrowser):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setOpenExternalLinks(False)
        self.setOpenLinks(False)  # a link opens in the desktop's app (the file manager, a spreadsheet), not here
        self.anchorClicked.connect(QDesktopServices.openUrl)
        self.show_job(None)

    def show_job(self, view: JobView | None) -> None:
        self.setHtml(render(view))
