"""The archive backend's own options, declared for the front door (``backends.core.options``): what the window's
Pack and Unpack choices hand it (the CLI's ``labferry pack``/``unpack`` call ``pack.py``/``download.py``
directly)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.options import option


@dataclass(frozen=True)
class ArchiveOptions:
    action: Literal["pack", "unpack"] = option("pack", "pack SRC into the archive DEST, or unpack SRC into DEST")
    workers: int | None = option(None, "worker processes (default: one a core)")
    compress: Literal["none", "zstd"] | None = option(None, "zstd's seekable format (default: zstd for a .zst name)")
