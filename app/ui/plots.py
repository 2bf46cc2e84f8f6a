"""The Benchmarks tab: throughput against streams and over time, one series per site, protocol and direction.

A biologist reads these as proof of what a path gives, so they must not mislead: the rate plotted is the one
History shows (what was delivered per second, not the compressed bytes on the wire), an SSH upload and an HTTP
download are separate series (never one line joining them), the streams axis shows whole numbers, every series
is named in a legend, and the plots take the desktop's light or dark palette.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QComboBox, QVBoxLayout, QWidget

from app.sites import protocol_name

#: series colours (Okabe–Ito: told apart by colour-blind readers too)
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
ALL = "all sites and protocols"


def series_of(row: dict) -> str:
    """``site · protocol · direction``: one line per path and kind of transfer; the site's name when the row
    went to a saved site (``site``, matched by profile), else its host."""
    source, dest = row.get("source") or "", row.get("dest") or ""
    upload = "://" not in source and "://" in dest
    protocol = protocol_name(row["backend"], dest if upload else source)
    return f"{row.get('site') or row['peer_host'] or '?'} · {protocol} · {'upload' if upload else 'download'}"


def _integer_axis():
    import pyqtgraph as pg

    class IntegerAxis(pg.AxisItem):
        """Stream counts are whole: ticks at integers only."""

        def tickValues(self, minVal, maxVal, size):  # noqa: N802 (pyqtgraph's name)
            ticks = [(level, [v for v in values if float(v).is_integer()])
                     for level, values in super().tickValues(minVal, maxVal, size)]
            return [t for t in ticks if t[1]] or [(1.0, [float(round((minVal + maxVal) / 2))])]

        def tickStrings(self, values, scale, spacing):  # noqa: N802
            return [str(int(round(v))) for v in values]  # "8", never "8.0"

    return IntegerAxis(orientation="bottom")


def _clock_axis():
    """Time as the clock on the wall: 14:05:30 within an hour's span, 14:05 within two days, then the date."""
    import time

    import pyqtgraph as pg

    from .report_charts import time_format

    class ClockAxis(pg.AxisItem):
        def tickStrings(self, values, scale, spacing):  # noqa: N802
            span = (max(values) - min(values)) if len(values) > 1 else spacing
            shape = time_format(max(span, spacing * 4))
            return [time.strftime(shape, time.localtime(v)) for v in values]

    return ClockAxis(orientation="bottom")


def pg_brush(colour):
    import pyqtgraph as pg

    translucent = QColor(colour)
    translucent.setAlpha(200)
    return pg.mkBrush(translucent)


class BenchmarksView(QWidget):
    """Throughput against streams and against time, per site, protocol and direction, from the benchmark log."""

    def __init__(self, load, parent=None) -> None:
        super().__init__(parent)
        import pyqtgraph as pg  # imported when the tab is built, not at start-up

        self._load = load
        layout = QVBoxLayout(self)
        self.choice = QComboBox(self)
        self.choice.currentIndexChanged.connect(self.redraw)
        layout.addWidget(self.choice)
        self.by_streams = pg.PlotWidget(title="Throughput against streams", axisItems={"bottom": _integer_axis()})
        self.by_streams.setLabel("bottom", "streams")
        self.by_streams.setLabel("left", "Mbit/s")
        self.by_time = pg.PlotWidget(title="Throughput over time", axisItems={"bottom": _clock_axis()})
        self.by_time.setLabel("left", "Mbit/s")
        for plot in (self.by_streams, self.by_time):
            plot.addLegend(offset=(-10, 10))
            layout.addWidget(plot)
        self._rows: list[dict] = []
        self.follow_palette()

    def follow_palette(self) -> None:
        """The plots in the window's colours (light or dark), called again when the theme changes."""
        palette = QApplication.palette()
        base, text = palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text)
        for plot in (self.by_streams, self.by_time):
            plot.setBackground(base)
            item = plot.getPlotItem()
            item.titleLabel.setText(item.titleLabel.text, color=text)
            for side in ("left", "bottom"):
                axis = item.getAxis(side)
                axis.setPen(text)
                axis.setTextPen(text)
            if item.legend is not None:  # the legend's names in the text's colour, not pyqtgraph's pale grey
                item.legend.setLabelTextColor(text)
                item.legend.setBrush(pg_brush(base))

    def refresh(self) -> None:
        self._rows = self._load()
        keys = sorted({series_of(r) for r in self._rows})
        current = self.choice.currentText()
        self.choice.blockSignals(True)
        self.choice.clear()
        self.choice.addItem(ALL)
        self.choice.addItems(keys)
        if current:
            self.choice.setCurrentText(current)
        self.choice.blockSignals(False)
        self.redraw()

    def series(self) -> dict[str, list[dict]]:
        """The rows shown, by series (all of them, or the one chosen), each in time order."""
        chosen = self.choice.currentText()
        grouped: dict[str, list[dict]] = {}
        for row in sorted(self._rows, key=lambda r: r["started"]):
            name = series_of(row)
            if chosen in ("", ALL) or name == chosen:
                grouped.setdefault(name, []).append(row)
        return grouped

    def redraw(self) -> None:
        import pyqtgraph as pg

        self.by_streams.clear()
        self.by_time.clear()
        for index, (name, rows) in enumerate(sorted(self.series().items())):
            colour = COLOURS[index % len(COLOURS)]
            rate = [r.get("shown_mbps", r["throughput_mbps"]) for r in rows]
            self.by_streams.addItem(pg.ScatterPlotItem([r["streams"] or 0 for r in rows], rate, size=8, name=name,
                                                       brush=pg.mkBrush(colour), pen=pg.mkPen(colour)))
            self.by_time.plot([r["started"] for r in rows], rate, pen=pg.mkPen(colour, width=2), symbol="o",
                              symbolSize=6, symbolBrush=colour, name=name)
        counts = [r["streams"] or 0 for rows in self.series().values() for r in rows]
        if counts:  # stream counts and rates are never negative: one point once centred the axis on it (−6 … 8)
            self.by_streams.setXRange(0, max(counts) + 1, padding=0.05)
        for plot in (self.by_streams, self.by_time):
            plot.setLimits(yMin=0)
        self.follow_palette()  # the legend just made takes the palette's colours
        starts = [r["started"] for rows in self.series().values() for r in rows]
        if starts and max(starts) - min(starts) < 60:  # transfers a few seconds apart: a minute's view, not ms
            middle = (max(starts) + min(starts)) / 2
            self.by_time.setXRange(middle - 30, middle + 30, padding=0)
