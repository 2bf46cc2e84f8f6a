#!/usr/bin/env python3
"""resources/ferry.ico (Windows) and resources/ferry.icns (macOS), drawn from resources/ferry.svg with Qt's SVG
renderer. Both formats may hold PNG images: an ICO is a directory of (size, offset) entries, an ICNS a list of
(type, length) blocks. Run again when the SVG changes; the outputs are committed so that a build on Windows or
macOS needs nothing but PyInstaller.

    python installers/make_icons.py
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
#: ICNS block types holding PNG data, by pixel size (Apple's icns types since 10.7)
ICNS_TYPES = ((16, b"icp4"), (32, b"icp5"), (64, b"icp6"), (128, b"ic07"), (256, b"ic08"), (512, b"ic09"),
              (1024, b"ic10"))


def png(renderer: QSvgRenderer, size: int) -> bytes:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def ico(images: dict[int, bytes]) -> bytes:
    header = struct.pack("<HHH", 0, 1, len(images))
    offset = 6 + 16 * len(images)
    entries, blobs = b"", b""
    for size, data in images.items():
        side = 0 if size >= 256 else size  # 0 means 256 in an ICO directory
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset + len(blobs))
        blobs += data
    return header + entries + blobs


def icns(images: dict[int, bytes]) -> bytes:
    blocks = b"".join(kind + struct.pack(">I", 8 + len(images[size])) + images[size] for size, kind in ICNS_TYPES)
    return b"icns" + struct.pack(">I", 8 + len(blocks)) + blocks


def main() -> int:
    app = QGuiApplication(sys.argv[:1])  # noqa: F841  (QImage and the SVG renderer need one)
    renderer = QSvgRenderer(str(RESOURCES / "ferry.svg"))
    if not renderer.isValid():
        print("resources/ferry.svg could not be read", file=sys.stderr)
        return 1
    sizes = sorted(set(ICO_SIZES) | {s for s, _ in ICNS_TYPES})
    images = {size: png(renderer, size) for size in sizes}
    (RESOURCES / "ferry.ico").write_bytes(ico({s: images[s] for s in ICO_SIZES}))
    (RESOURCES / "ferry.icns").write_bytes(icns(images))
    print(f"wrote {RESOURCES / 'ferry.ico'} and {RESOURCES / 'ferry.icns'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
