"""Preflight wizard: pick a site → watch it being measured → the recommendation, for you and for IT.

The measuring runs on the engine's loop (the ``preflight`` verb); its progress callback
fires on the engine thread and only emits a signal, which Qt delivers on the GUI thread,
so the plot grows live while the window stays responsive.
"""

from __future__ import annotations

import html
import math
import time

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPainter, QPen
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from app.preflight import apply_to_site
from app.preflight.recommend import streams_phrase
from app.sites import Site
from app.store import Store
from app.units import counted, format_bytes, format_ms, format_rate
from backends.core.base import TransferOptions

OTHER = "Another address…"


def nice_top(value: float) -> float:
    """The axis maximum: 1, 2, 2.5 or 5 times a power of ten, at or above ``value``."""
    power = 10 ** math.floor(math.log10(value))
    return next(power * f for f in (1, 2, 2.5, 5, 10) if power * f >= value)


class SweepPlot(QWidget):
    """Mbit/s against streams (log scale), one point per sweep step, drawn as they come."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.points: list[tuple[int, float]] = []
        self.recommended: int | None = None
        self.setMinimumSize(420, 220)

    def add(self, streams: int, mbps: float) -> None:
        self.points.append((streams, mbps))
        self.update()

    def clear(self) -> None:
        self.points, self.recommended = [], None
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        area = QRectF(48, 12, self.width() - 60, self.height() - 44)
        painter.fillRect(self.rect(), self.palette().base())
        painter.setPen(QPen(self.palette().text().color()))
        painter.drawRect(area)
        top = nice_top(max([m for _, m in self.points] + [100.0]) * 1.05)

        def at(streams: int, mbps: float) -> QPointF:
            x = area.left() + math.log2(streams) / 6 * area.width()
            return QPointF(x, area.bottom() - mbps / top * area.height())

        for n in (1, 2, 4, 8, 16, 32, 64):
            x = at(n, 0).x()
            painter.drawText(QRectF(x - 15, area.bottom() + 4, 30, 14), Qt.AlignmentFlag.AlignCenter, str(n))
        for i in range(5):
            y = top * i / 4
            painter.drawText(QRectF(0, at(1, y).y() - 7, 44, 14), Qt.AlignmentFlag.AlignRight, f"{y:g}")
        painter.drawText(QRectF(area.left(), self.height() - 16, area.width(), 14), Qt.AlignmentFlag.AlignCenter,
                         "streams → Mbit/s")
        color = QColor("#1f77b4")
        painter.setPen(QPen(color, 2))
        ordered = sorted(self.points)
        for a, b in zip(ordered, ordered[1:], strict=False):
            painter.drawLine(at(*a), at(*b))
        painter.setBrush(color)
        for p in ordered:
            painter.drawEllipse(at(*p), 4, 4)
        if self.recommended:
            mark = next((m for n, m in ordered if n == self.recommended), None)
            if mark is not None:
                painter.setPen(QPen(QColor("#d62728"), 2))
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawEllipse(at(self.recommended, mark), 8, 8)
        painter.end()


class PickPage(QWizardPage):
    def __init__(self, sites: list[Site], parent=None) -> None:
        super().__init__(parent)
        self.setTitle("Which site?")
        self.setSubTitle("Ferry measures how fast this site can go, then says how to use it (about half a minute).")
        self.setToolTip("It measures the round trip, then the rate with 1, 2, 4 … parallel streams; SSH sites take "
                        "longer (each stream is a login). It says how long once it knows the round trip.")
        self.sites = {s.name: s for s in sites}
        self.site = QComboBox(self)
        self.site.addItems([*self.sites, OTHER])
        self.path = QLineEdit(self)
        self.path.setPlaceholderText("a large file on the site (needed for HTTPS; SSH and GridFTP read zeros)")
        self.url = QLineEdit(self)
        self.url.setPlaceholderText("https://data.example.org/big-file.bam, sftp://user@host/, ftp://host:2811/")
        self.quick = QCheckBox("Quick (shorter steps, rougher)", self)
        form = QFormLayout(self)
        form.addRow("Site:", self.site)
        form.addRow("File to read:", self.path)
        form.addRow("Address:", self.url)
        form.addRow("", self.quick)
        self.site.currentTextChanged.connect(self._changed)
        self.url.textChanged.connect(self.completeChanged)
        self._changed(self.site.currentText())

    def _changed(self, name: str) -> None:
        self.url.setEnabled(name == OTHER)
        self.path.setEnabled(name != OTHER)
        self.completeChanged.emit()

    def isComplete(self) -> bool:  # noqa: N802
        return self.site.currentText() != OTHER or "://" in self.url.text()

    def target(self) -> tuple[str, str | None]:
        """(what the engine measures, the site's name if any)."""
        name = self.site.currentText()
        if name == OTHER:
            return self.url.text().strip(), None
        path = self.path.text().strip().lstrip("/")
        return f"site:{name}" + (f"/{path}" if path else ""), name


class MeasurePage(QWizardPage):
    progressed = Signal(object)  # a measure.Progress, from the engine thread

    def __init__(self, wizard: PreflightWizard) -> None:
        super().__init__(wizard)
        self.owner = wizard
        self.setTitle("Measuring")
        self.plot = SweepPlot(self)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        self.clock = QProgressBar(self)  # time, not work: how much of the announced wait has passed
        self.clock.setTextVisible(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.plot)
        layout.addWidget(self.clock)
        layout.addWidget(self.status)
        self.result: dict | None = None
        self.error: str | None = None
        self._run = 0
        self._began = time.monotonic()
        self._expected: float | None = None
        self._ticks = QTimer(self)
        self._ticks.setInterval(250)
        self._ticks.timeout.connect(self._tick)
        self.progressed.connect(self._show)

    def initializePage(self) -> None:  # noqa: N802
        self.result, self.error = None, None
        self.plot.clear()
        self._run += 1
        run = self._run
        target, _ = self.owner.pick.target()
        self.status.setText(f"Starting: {target}")
        self._began, self._expected = time.monotonic(), None
        self.clock.setRange(0, 0)  # busy until the round trip says how long the rest takes
        self.clock.setFormat("measuring round trips…")
        self._ticks.start()
        self.owner.bridge.call("preflight", target, self.owner.options, self.owner.pick.quick.isChecked(),
                               self.progressed.emit,
                               done=lambda r: self._done(run, r), error=lambda e: self._failed(run, e))
        self.completeChanged.emit()

    def _show(self, progress) -> None:
        self.status.setText(progress.message)
        if progress.expected_s is not None:
            self._began, self._expected = time.monotonic(), progress.expected_s
            self.clock.setRange(0, max(1, round(progress.expected_s * 10)))
            self._tick()
        if progress.point is not None:
            self.plot.add(progress.point.streams, progress.point.mbps)

    def _tick(self) -> None:
        """The wait as time: seconds left of the announced total, then, past it, how long it has run over."""
        if self._expected is None:
            return
        spent = time.monotonic() - self._began
        self.clock.setValue(min(self.clock.maximum(), round(spent * 10)))
        left = self._expected - spent
        self.clock.setFormat(f"about {left:.0f} s left" if left >= 0.5
                             else f"{-left:.0f} s longer than expected: the server is slow to answer")

    def _stop_clock(self) -> None:
        self._ticks.stop()
        self.clock.setRange(0, 1)
        self.clock.setValue(1)

    def _done(self, run: int, result: dict) -> None:
        if run != self._run:
            return
        self._stop_clock()
        self.clock.setFormat("done")
        self.result = result
        self.plot.recommended = result["recommended_streams"]
        self.plot.update()
        self.status.setText(f"Done in {result['seconds']:.1f} s.")
        self.completeChanged.emit()

    def _failed(self, run: int, message: str) -> None:
        if run != self._run:
            return
        self.error = message
        self._stop_clock()
        self.clock.setFormat("stopped")
        self.status.setText(f"<b>Could not measure.</b> {html.escape(message)}")
        self.completeChanged.emit()

    def isComplete(self) -> bool:  # noqa: N802
        return self.result is not None


class AdvicePage(QWizardPage):
    def __init__(self, wizard: PreflightWizard) -> None:
        super().__init__(wizard)
        self.owner = wizard
        self.setTitle("Recommendation")
        self.verdict = QLabel(self)  # one plain sentence for the researcher; the figures are folded away for IT
        self.verdict.setWordWrap(True)
        self.verdict.setObjectName("verdict")
        self.more = QToolButton(self)
        self.more.setText("Details for IT")
        self.more.setCheckable(True)
        self.more.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.more.setArrowType(Qt.ArrowType.RightArrow)
        self.details = QWidget(self)
        self.summary = QLabel(self.details)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.sysctl = QPlainTextEdit(self.details)
        self.sysctl.setReadOnly(True)
        self.apply = QPushButton("Apply to this site's profile", self)
        self.copy = QPushButton("Copy sysctl for IT", self)
        self.applied = QLabel("", self)
        buttons = QHBoxLayout()
        buttons.addWidget(self.apply)
        buttons.addWidget(self.copy)
        buttons.addWidget(self.applied, 1)
        inner = QVBoxLayout(self.details)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addWidget(self.summary)
        inner.addWidget(QLabel("For IT: /etc/sysctl.d/90-ferry.conf, then <code>sysctl --system</code>",
                               self.details))
        inner.addWidget(self.sysctl)
        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.more)
        layout.addWidget(self.details, 1)
        layout.addStretch(0)
        layout.addLayout(buttons)
        self.details.setVisible(False)
        self.more.toggled.connect(self._fold)
        self.apply.clicked.connect(self.apply_to_site)
        self.copy.clicked.connect(self.copy_sysctl)

    def initializePage(self) -> None:  # noqa: N802
        r = self.owner.measure.result or {}
        rtt = r.get("rtt") or {}
        n = r.get("recommended_streams")
        rows = [
            ("Round trip", f"{format_ms(rtt.get('min_ms'))} (median {format_ms(rtt.get('median_ms'))}, "
                           f"jitter {format_ms(rtt.get('jitter_ms'))})"),
            ("Bottleneck", f"about {r.get('bottleneck_mbps', 0):.0f} Mbit/s"),
            ("Bandwidth-delay product", format_bytes(r.get("bdp_bytes") or 0)),
            ("Loss", r.get("loss_note", "")),
            ("Use", f"<b>{streams_phrase(n)}</b>: {r.get('streams_why', '')}"),
            ("Protocol", f"<b>{r.get('recommended_backend')}</b>: {r.get('backend_why', '')}"),
        ]
        if r.get("recommended_transport"):
            rows.append(("Transport", f"{r['recommended_transport'].upper()}: {r.get('transport_why', '')}"))
        if r.get("backend") == "gridftp":
            rows.append(("GridFTP buffer", r.get("tcp_bs_why", "")))
        rows += [("Note", note) for note in r.get("notes") or []]
        self.summary.setText("<table cellspacing=4>" + "".join(
            f"<tr><td><b>{html.escape(k)}</b></td><td>{v if k in ('Use', 'Protocol') else html.escape(str(v))}"
            f"</td></tr>" for k, v in rows) + "</table>")
        self.sysctl.setPlainText(sysctl_text(r))
        self.verdict.setText(verdict(r))
        self.apply.setEnabled(self.owner.pick.target()[1] is not None)
        self.applied.setText("")

    def _fold(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.more.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)

    def apply_to_site(self) -> None:
        _, name = self.owner.pick.target()
        r = self.owner.measure.result
        if not name or not r:
            return
        with Store(self.owner.db_path) as store:
            site = apply_to_site(store, name, r)
        self.applied.setText(f"Site {name} now uses {counted(site.streams, 'stream')}.")
        self.owner.site_changed.emit(name)

    def copy_sysctl(self) -> None:
        QGuiApplication.clipboard().setText(self.sysctl.toPlainText())
        self.applied.setText("Copied.")


def verdict(result: dict) -> str:
    """The preflight in one or two plain sentences for the researcher: whether the path is fine, how fast, and what
    Ferry will do; IT's figures stay under *Details for IT*."""
    n, mbps = result.get("recommended_streams") or 1, result.get("bottleneck_mbps") or 0
    rtt = (result.get("rtt") or {}).get("min_ms")
    far = f" over a {format_ms(rtt)} round trip" if rtt else ""
    loss = result.get("loss_estimate")
    if loss and loss >= 1e-4:
        said = (f"This path loses packets: about {format_rate(mbps * 1e6 / 8)}{far}. Ferry will use "
                f"{streams_phrase(n)} to keep the rate up.")
    else:
        said = f"This path is fine: about {format_rate(mbps * 1e6 / 8)}{far}. Ferry will use {streams_phrase(n)}."
    if result.get("sysctl_reasons"):
        said += " This computer's TCP settings hold it back: IT can change them (Details for IT)."
    if "was faster" in (result.get("backend_why") or ""):
        said += " Another protocol was faster to this host (Details for IT)."
    return said


def sysctl_text(result: dict) -> str:
    """The lines for IT with their reasons as comments (a file they can drop in /etc/sysctl.d)."""
    items = result.get("sysctl_reasons") or []
    if not items:
        return "# This host's TCP settings already suit this path: nothing to change."
    head = [f"# Ferry preflight to {result.get('host')}: RTT {result.get('rtt_ms')} ms, "
            f"about {result.get('bottleneck_mbps', 0):.0f} Mbit/s"]
    return "\n".join(head + [f"# {i['reason']}\n{i['line']}" for i in items]) + "\n"


class PreflightWizard(QWizard):
    site_changed = Signal(str)

    def __init__(self, bridge, db_path, sites: list[Site], parent=None, options: TransferOptions | None = None,
                 ) -> None:
        super().__init__(parent)
        self.bridge, self.db_path = bridge, db_path
        self.options = options or TransferOptions()
        self.setWindowTitle("Preflight")
        self.pick = PickPage(sites, self)
        self.measure = MeasurePage(self)
        self.advice = AdvicePage(self)
        for page in (self.pick, self.measure, self.advice):
            self.addPage(page)
        self.resize(640, 520)
