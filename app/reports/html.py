"""A report as one self-contained HTML file (inline CSS, charts as ``data:`` PNGs, painted by the desktop's
painter that the caller hands in: this package imports no Qt).

Every text that came from outside — file names, hosts, error messages — goes through
``html.escape``, so a file called ``<script>…`` is shown, never run. The same markup,
with images registered as resources instead of inlined, is what the PDF is printed from
(QTextDocument understands this subset of HTML and CSS).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from html import escape

from app.units import format_bytes, format_ms

from .gather import ReportData, SiteSummary, Transfer

#: the transfers table's columns and their shares of the width, fixed so that Route (a URL and a path) gets the
#: room and no heading or figure is cut mid-word; the details line below each row spans them all
WIDTHS = (("#", 3), ("Started", 8), ("Route", 33), ("Protocol", 6), ("Streams", 5), ("Bytes", 10), ("Seconds", 6),
          ("Mbit/s", 6), ("Retries", 5), ("Outcome", 6), ("Verification", 12))
COLUMNS = len(WIDTHS)
HEADINGS = "".join(f"<th width='{share}%'>{name}</th>" for name, share in WIDTHS)
#: the width charts are drawn at, in pixels
CHART_WIDTH = 720
#: draws one chart as PNG bytes (``app.ui.report_charts.chart``: the painter is the desktop's, so this package
#: needs no Qt): ``draw(series, title=…, x_label=…, y_label=…, x_is_time=…, lines=…)``
Draw = Callable[..., bytes]

CSS = """
body { font-family: -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif; font-size: 10pt; color: #222;
       margin: 24px; }
h1 { font-size: 18pt; margin-bottom: 2px; } h2 { font-size: 14pt; margin-top: 24px; border-bottom: 1px solid #ccc; }
h3 { font-size: 12pt; margin-top: 18px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; white-space: nowrap; } td.num { text-align: right; white-space: nowrap; }
td.nw { white-space: nowrap; }
tr.failed td { background: #fdecea; } tr.cancelled td { background: #f5f5f5; }
code, pre { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 9pt; }
table.transfers { width: 100%; } code.small { word-break: break-all; }
table.transfers td { font-size: 9pt; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 8px; }
.muted { color: #666; } .small { font-size: 8.5pt; }
"""

ImageRef = Callable[[str, bytes], str]


def inline_image(_name: str, png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp)) if stamp else "—"


def num(value: float | int | None, digits: int = 0) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def size(n: int | None) -> str:
    return format_bytes(n) if n is not None else "—"


def _tcp_used(tcp: dict | None) -> str:
    if not tcp or not tcp.get("available"):
        return "not recorded"
    rmem = tcp.get("tcp_rmem") or []
    autotune = f", autotuning up to {size(rmem[2])}" if len(rmem) == 3 else ""
    return f"{tcp.get('congestion') or '?'}; rmem_max {size(tcp.get('rmem_max'))}{autotune}"


def _transfer_row(t: Transfer) -> str:
    verification = escape(t.verify_method or "—")
    details = [escape(n) for n in t.notes]
    if t.sha256:
        details.insert(0, f"sha256 <code class='small'>{escape(t.sha256)}</code>")
    details.append("TCP: " + escape(_tcp_used(t.tcp)))
    if t.rtt_ms:
        details.append(f"RTT {format_ms(t.rtt_ms)}")
    if t.error:
        details.insert(0, f"<b>Error:</b> {escape(t.error)}")
    # ten narrow columns and one full-width line below: a route or an error of 200 characters stays whole at
    # 1280 px and on an A4 page, where thirteen columns cut both to a dozen letters a line
    return (
        f"<tr class='{escape(t.outcome)}' data-id='{t.id}'>"
        f"<td class='num'>{t.id}</td><td class='nw'>{when(t.started or t.finished).replace(' ', '<br>')}</td>"
        f"<td>{escape(t.source)}<br>→ {escape(t.dest)}</td><td class='nw'>{escape(t.protocol)}</td>"
        f"<td class='num' data-f='streams'>{t.streams if t.streams is not None else '—'}</td>"
        f"<td class='num' data-f='bytes'>{num(t.bytes)}</td>"
        f"<td class='num' data-f='seconds'>{num(t.seconds, 2)}</td>"
        f"<td class='num' data-f='throughput_mbps'>{num(t.throughput_mbps, 1)}</td>"
        f"<td class='num' data-f='retries'>{t.retries}</td><td class='nw'>{escape(t.outcome)}</td>"
        f"<td>{verification}</td></tr>"
        f"<tr class='{escape(t.outcome)} more'><td></td><td colspan='{COLUMNS - 1}' class='small'>"
        f"{' · '.join(details)}</td></tr>\n"
    )


def _site_section(s: SiteSummary, image: ImageRef, index: int, draw: Draw | None = None) -> str:
    rows = [
        ("Transfers", num(s.transfers)), ("Bytes moved", f"{num(s.bytes)} ({size(s.bytes)})"),
        ("Best throughput", f"{num(s.best_mbps, 1)} Mbit/s"), ("Median throughput", f"{num(s.median_mbps, 1)} Mbit/s"),
        ("Round-trip time (latest)", f"{num(s.rtt_ms, 1)} ms"),
        ("Bandwidth-delay product", f"{size(s.bdp_bytes)} (latest RTT × best throughput)" if s.bdp_bytes else "—"),
        ("Streams used (median)", num(s.streams_used)),
        ("Streams recommended (benchmark log)", num(s.streams_recommended)),
    ]
    table = "".join(f"<tr><th>{escape(k)}</th><td data-k='{escape(k)}'>{escape(v)}</td></tr>" for k, v in rows)
    if s.preflight:
        pre = s.preflight
        sweep = ", ".join(f"{n}: {v:.0f}" for n, v in (pre.get("sweep") or {}).items())
        preflight = (f"<p>Latest preflight ({when(pre.get('measured_at'))}, {escape(str(pre.get('backend')))}): "
                     f"RTT {num(pre.get('rtt_ms'), 1)} ms, bottleneck about {num(pre.get('bottleneck_mbps'))} "
                     f"Mbit/s, sweep (streams: Mbit/s) {escape(sweep)}. Recommended "
                     f"{num(pre.get('recommended_streams'))} streams ({escape(pre.get('streams_why') or '')}); "
                     f"{escape(pre.get('loss_note') or '')}.</p>")
    else:
        preflight = "<p class='muted'>No preflight measurement of this site yet; the figures above come from the " \
                    "transfers themselves.</p>"
    if s.sysctl:
        lines = "\n".join(a["line"] for a in s.sysctl)
        reasons = "".join(f"<li><code>{escape(a['line'])}</code>: {escape(a['reason'])}</li>" for a in s.sysctl)
        tuning = (f"<p>This host's TCP settings are short of what this path needs. Lines for "
                  f"<code>/etc/sysctl.d/90-ferry.conf</code>, then <code>sysctl --system</code>:</p>"
                  f"<pre>{escape(lines)}</pre><ul class='small'>{reasons}</ul>")
    else:
        tuning = "<p>This host's TCP settings are enough for this path (or the path is not measured yet).</p>"
    pictures = ""
    if draw is not None:
        over_time = draw({s.host: [(x, y) for x, y, _ in s.series]}, title=f"Throughput over time — {s.name}",
                         x_label="time", y_label="Mbit/s", x_is_time=True, lines=True)
        by_streams = draw({s.host: [(n, y) for _, y, n in s.series]}, title=f"Throughput vs streams — {s.name}",
                          x_label="parallel streams", y_label="Mbit/s")
        pictures = (f"<p><img src='{image(f'time{index}.png', over_time)}' width='{CHART_WIDTH}'></p>"
                    f"<p><img src='{image(f'streams{index}.png', by_streams)}' width='{CHART_WIDTH}'></p>")
    host = "" if s.host in s.name else f" <span class='muted'>({escape(s.host)})</span>"
    return (f"<h3>{escape(s.name)}{host}</h3>"
            f"<table class='site' data-host='{escape(s.host)}'>{table}</table>{preflight}{tuning}{pictures}")


def render(data: ReportData, image: ImageRef = inline_image, draw: Draw | None = None) -> str:
    """The report as HTML; ``draw`` paints its charts (none without it: CSV and JSON have no need of them)."""
    period = f"{when(data.since) if data.since else 'the beginning'} to {when(data.until) if data.until else 'now'}"
    totals = data.totals
    tcp = data.host_tcp
    if tcp.available:
        host_rows = [("Congestion control", tcp.congestion or "?"), ("Queueing discipline", tcp.default_qdisc or "?"),
                     ("net.core.rmem_max / wmem_max", f"{num(tcp.rmem_max)} / {num(tcp.wmem_max)}"),
                     ("net.ipv4.tcp_rmem", " ".join(map(str, tcp.tcp_rmem))),
                     ("net.ipv4.tcp_wmem", " ".join(map(str, tcp.tcp_wmem)))]
    else:
        host_rows = [("TCP settings", tcp.reason)]
    host_table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in host_rows)
    version_table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in data.versions.items())
    transfers = "".join(_transfer_row(t) for t in data.transfers) or \
        f"<tr><td colspan='{COLUMNS}' class='muted'>No transfers in this period.</td></tr>"
    sites = "".join(_site_section(s, image, i, draw) for i, s in enumerate(data.sites)) or \
        "<p class='muted'>No transfers to a remote site in this period.</p>"
    users = "User names are shown (the person who made this report agreed)." if data.include_users else \
        "User names are removed from addresses; passwords and keys are never stored."
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Ferry transfer report</title><style>{CSS}</style></head>
<body>
<h1>Ferry transfer report</h1>
<p class="muted">Made {when(data.generated)} by Ferry {escape(data.versions.get('ferry', '?'))} on
{escape(data.versions.get('os', '?'))}. Period: {escape(period)}{escape(f'; site {data.site}' if data.site else '')}.
{escape(users)}</p>
<table class="totals"><tr><th>Transfers</th><th>Finished</th><th>Failed</th><th>Bytes moved</th></tr>
<tr><td class="num" data-k="transfers">{totals['transfers']}</td><td class="num" data-k="done">{totals['done']}</td>
<td class="num" data-k="failed">{totals['failed']}</td>
<td class="num" data-k="bytes">{num(totals['bytes'])}</td></tr></table>
<h2>Transfers</h2>
<table class="transfers"><tr>{HEADINGS}</tr>
{transfers}</table>
<h2>Sites</h2>
{sites}
<h2>This computer</h2>
<table class="host">{host_table}</table>
<h2>Versions</h2>
<table class="versions">{version_table}</table>
</body></html>
"""
