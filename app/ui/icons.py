"""Icons for every action and kind of transfer, from one maintained set (Material Design Icons via qtawesome).

Fonts, not image files: the same icons on Linux, macOS and Windows, drawn in the palette's text colour so they
stay readable when the theme turns dark (``refresh`` redraws them then). One table names them, so an action
without an icon is a test failure, not a gap someone notices later.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QIcon, QPainter, QPalette, QPixmap

#: toolbar and menu actions → icon
ACTIONS = {
    "new": "mdi6.plus-circle-outline", "public": "mdi6.dna", "pause": "mdi6.pause", "resume": "mdi6.play",
    "cancel": "mdi6.close-circle-outline", "retry": "mdi6.refresh", "remove": "mdi6.delete-outline",
    "up": "mdi6.arrow-up", "down": "mdi6.arrow-down", "clear": "mdi6.broom", "site": "mdi6.server-plus",
    "preflight": "mdi6.speedometer", "settings": "mdi6.cog-outline", "torrent": "mdi6.share-variant-outline",
    "paste": "mdi6.content-paste",
}
#: kinds of transfer (the queue's first column) → icon
KINDS = {
    "accession": "mdi6.dna", "torrent": "mdi6.magnet", "folder": "mdi6.folder-outline", "upload": "mdi6.upload",
    "reads": "mdi6.file-document-outline", "archive": "mdi6.zip-box-outline", "file": "mdi6.file-outline",
}
READS = (".fastq", ".fq", ".bam", ".cram", ".sam", ".vcf", ".bcf", ".fasta", ".fa", ".fna")
ARCHIVES = (".tar", ".zip", ".tgz", ".zst", ".xz", ".bz2")


#: the pixel sizes each icon is drawn at once (menus, toolbars, table rows, and twice each for HiDPI screens)
SIZES = (16, 20, 24, 32, 40, 48, 64)


def icon(name: str) -> QIcon:
    """An icon of the set in the current palette's text colour (an empty icon if the set cannot load).

    The glyph is drawn into pixmaps here, once, with qtawesome's font: the ``QIcon`` qtawesome itself returns
    paints through a Python ``QIconEngine``, and under PySide6 6.12 every such paint released ``None`` three
    times more than it took it (measured with ``sys.getrefcount``), so a window repainting icons (a pane of
    10,000 rows, the queue's kind icons) died with "none_dealloc" after enough paints. A pixmap icon paints
    without calling Python at all."""
    color = QGuiApplication.palette().color(QPalette.ColorRole.WindowText)
    disabled = color.darker(180) if color.lightness() > 128 else color.lighter(300)
    try:
        import qtawesome

        prefix = name.split(".", 1)[0]
        char = qtawesome.charmap(name)
        font = qtawesome.font(prefix, SIZES[0])
    except Exception:  # a bundle without the icon fonts: text-only actions rather than no window
        return QIcon()
    drawn = QIcon()
    for size in SIZES:
        for mode, shade in ((QIcon.Mode.Normal, color), (QIcon.Mode.Disabled, disabled)):
            drawn.addPixmap(_glyph(font, char, size, shade), mode)
    return drawn


def _glyph(font: QFont, char: str, size: int, color: QColor) -> QPixmap:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    font = QFont(font)
    font.setPixelSize(size)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    painter.setFont(font)
    painter.setPen(color)
    painter.drawText(pixmap.rect(), int(Qt.AlignmentFlag.AlignCenter), char)
    painter.end()
    return pixmap


def kind_of(source: str, dest: str) -> str:
    """What a transfer moves, for its icon: an accession, a torrent, a folder, an upload, reads, an archive."""
    if source.startswith("ena:"):
        return "accession"
    if source.startswith("magnet:") or source.lower().endswith(".torrent"):
        return "torrent"
    if "://" not in source and "://" in dest:
        return "upload"
    if source.endswith("/"):
        return "folder"
    name = PurePosixPath(source.split("?", 1)[0]).name.lower().removesuffix(".gz")
    if name.endswith(READS):
        return "reads"
    return "archive" if name.endswith(ARCHIVES) else "file"
