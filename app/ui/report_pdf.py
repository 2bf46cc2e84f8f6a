"""PDF reports printed by Qt itself (QTextDocument → QPdfWriter): no browser, no TeX."""

from __future__ import annotations

import errno
from pathlib import Path

from app.reports.gather import ReportData
from app.reports.html import render

from . import report_charts


def write_pdf(data: ReportData, path: Path, draw=report_charts.chart) -> None:
    report_charts.ensure_gui()
    from PySide6.QtCore import QMarginsF, QSizeF, QUrl
    from PySide6.QtGui import QImage, QPageLayout, QPageSize, QPdfWriter, QTextDocument

    document = QTextDocument()
    images: dict[str, bytes] = {}

    def register(name: str, png: bytes) -> str:
        images[name] = png
        return name

    markup = render(data, register, draw)
    for name, png in images.items():
        document.addResource(QTextDocument.ResourceType.ImageResource, QUrl(name), QImage.fromData(png, "PNG"))
    document.setHtml(markup)
    writer = QPdfWriter(str(path))
    writer.setTitle("Ferry transfer report")
    writer.setCreator(f"Ferry {data.versions.get('ferry', '')}")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Landscape,
                                     QMarginsF(12, 12, 12, 12), QPageLayout.Unit.Millimeter))
    writer.setResolution(120)
    layout = writer.pageLayout()
    paint = layout.paintRectPixels(writer.resolution())
    document.setPageSize(QSizeF(paint.width(), paint.height()))
    document.print_(writer)
    del writer  # the file is complete once the writer is gone
    # Qt reports a file it cannot open only as a warning on stderr ("QPainter::begin(): Returned false") and
    # writes nothing: check, so a report that did not happen is never called written
    if not path.is_file() or path.stat().st_size == 0:
        raise OSError(errno.EACCES, "Qt could not write the PDF there")


def renderers() -> dict:
    """What ``app.reports.write_report`` takes to paint the charts and print the PDF."""
    return {"draw": report_charts.chart, "print_pdf": write_pdf}
