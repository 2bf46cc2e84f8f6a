"""Charts for reports, drawn with QPainter into PNG bytes (no plotting library, no display needed).

The same PNGs go inline into the HTML (``data:`` URIs) and into the PDF (QTextDocument
resources), so a report made on a headless HPC node looks like one made at a desk.
"""

from __future__ import annotations

import math
import os
import time

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPen

from app.reports.html import CHART_WIDTH

WIDTH, HEIGHT = CHART_WIDTH, 300
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 64, 20, 34, 44
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"]


def ensure_gui() -> None:
    """QPainter needs an application object for fonts; on a headless machine, the offscreen platform.

    A QApplication (not the lighter QGuiApplication), so that a process which opens windows
    later (the GUI, its tests) finds the kind it needs: Qt allows only one per process.
    """
    if QGuiApplication.instance() is None:
        from PySide6.QtWidgets import QApplication

        if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        QApplication([])


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 10 ** len(str(int(value))) / 10
    for factor in (1, 2, 2.5, 5, 10):
        if value <= step * factor:
            return step * factor
    return value


def value_ticks(low: float, high: float, most: int = 5) -> list[float]:
    """Ticks on a value axis at a round step, never two with one label: streams from 1 to 4 read 1 2 3 4, not the
    1 2 2 3 4 that five evenly spaced ticks rounded to whole numbers gave."""
    step = _nice_max((high - low) / (most - 1)) if high > low else 1.0
    if step < 1 and float(low).is_integer() and float(high).is_integer():
        step = 1.0  # counted things (streams, rounds) have no halves
    first = math.ceil(low / step - 1e-9) * step
    return [first + k * step for k in range(most * 2) if first + k * step <= high + 1e-9][:most * 2]


def time_format(span: float) -> str:
    """Clock labels that tell five ticks apart: seconds for a span under an hour, minutes under two days."""
    if span < 3600:
        return "%H:%M:%S"
    return "%H:%M" if span < 2 * 86400 else "%m-%d %H:%M"


def chart(series: dict[str, list[tuple[float, float]]], *, title: str, x_label: str, y_label: str,
          x_is_time: bool = False, lines: bool = False) -> bytes:
    """A scatter (or line) chart of named series of (x, y) points, as PNG bytes."""
    ensure_gui()
    image = QImage(WIDTH, HEIGHT, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    font = QFont()
    font.setPixelSize(12)
    painter.setFont(font)
    plot = QRectF(MARGIN_L, MARGIN_T, WIDTH - MARGIN_L - MARGIN_R, HEIGHT - MARGIN_T - MARGIN_B)
    points = [p for pts in series.values() for p in pts]
    xs, ys = [p[0] for p in points] or [0.0, 1.0], [p[1] for p in points] or [1.0]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y1 = _nice_max(max(ys) * 1.05)

    def at(x: float, y: float) -> QPointF:
        return QPointF(plot.left() + (x - x0) / (x1 - x0) * plot.width(), plot.bottom() - y / y1 * plot.height())

    painter.setPen(QPen(QColor("#222222")))
    bold = QFont(font)
    bold.setBold(True)
    painter.setFont(bold)
    painter.drawText(QRectF(0, 4, WIDTH, 24), Qt.AlignmentFlag.AlignCenter, title)
    painter.setFont(font)
    grid = QPen(QColor("#e4e4e4"))
    for i in range(5):
        y = y1 * i / 4
        pos = at(x0, y)
        painter.setPen(grid)
        painter.drawLine(QPointF(plot.left(), pos.y()), QPointF(plot.right(), pos.y()))
        painter.setPen(QPen(QColor("#444444")))
        painter.drawText(QRectF(0, pos.y() - 8, MARGIN_L - 6, 16), Qt.AlignmentFlag.AlignRight, f"{y:g}")
    form = time_format(x1 - x0)
    for x in [x0 + (x1 - x0) * i / 4 for i in range(5)] if x_is_time else value_ticks(x0, x1):
        pos = at(x, 0)
        label = time.strftime(form, time.localtime(x)) if x_is_time else f"{x:g}"
        painter.drawText(QRectF(pos.x() - 50, plot.bottom() + 4, 100, 16), Qt.AlignmentFlag.AlignCenter, label)
    painter.drawText(QRectF(plot.left(), HEIGHT - 20, plot.width(), 18), Qt.AlignmentFlag.AlignCenter, x_label)
    painter.save()
    painter.translate(14, plot.center().y())
    painter.rotate(-90)
    painter.drawText(QRectF(-plot.height() / 2, -10, plot.height(), 20), Qt.AlignmentFlag.AlignCenter, y_label)
    painter.restore()
    painter.drawRect(plot)
    _draw_series(painter, series, at, plot, lines)
    if not points:
        painter.setPen(QPen(QColor("#888888")))
        painter.drawText(plot, Qt.AlignmentFlag.AlignCenter, "no finished transfers in this period")
    painter.end()
    return _png(image)


def _draw_series(painter: QPainter, series: dict, at, plot: QRectF, lines: bool) -> None:
    """Each named series in its colour: points (joined in x order with ``lines``) and its name at the top right."""
    for index, (name, pts) in enumerate(series.items()):
        color = QColor(PALETTE[index % len(PALETTE)])
        painter.setPen(QPen(color, 2))
        painter.setBrush(color)
        ordered = sorted(pts)
        if lines and len(ordered) > 1:
            for a, b in zip(ordered, ordered[1:], strict=False):
                painter.drawLine(at(*a), at(*b))
        for p in ordered:
            painter.drawEllipse(at(*p), 3.5, 3.5)
        painter.drawText(QRectF(plot.right() - 200, plot.top() + 4 + 16 * index, 192, 16),
                         Qt.AlignmentFlag.AlignRight, name)


def _png(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data.data())


def compare_chart(comparison: dict) -> bytes:
    """A protocol comparison (``Comparison.to_dict()``): Mbit/s per round, one line per protocol."""
    efficiency = {row["url"]: row["efficiency"] for row in comparison["table"]}
    series: dict[str, list[tuple[float, float]]] = {}
    for run in comparison["runs"]:
        if run["error"]:
            continue
        name = f"{run['backend']} (efficiency {efficiency.get(run['url'], 0) * 100:.0f} %)"
        series.setdefault(name, []).append((float(run["round"]), run["mbps"]))
    return chart(series, title=f"Protocols to {comparison['host']}", x_label="round", y_label="Mbit/s", lines=True)
