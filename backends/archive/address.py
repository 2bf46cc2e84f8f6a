"""What names an archive: the endings Ferry packs to and unpacks from, the name a pack into a folder takes from
its source (``run42`` → ``run42.tar``, ``.tar.zst`` with zstd), and whether a name asks for zstd."""

from __future__ import annotations

from pathlib import Path

ARCHIVE_NAMES = (".tar", ".tar.zst", ".tzst")
ZSTD_NAMES = (".zst", ".tzst")


def is_archive(name: str) -> bool:
    """Whether ``name`` is one Ferry unpacks (and ``--unpack`` opens as it arrives)."""
    return name.lower().endswith(ARCHIVE_NAMES)


def named_archive(dest: Path, compress: str | None) -> Path:
    """The archive a pack writes when the destination was named after the source (a folder chosen, not a file)."""
    if is_archive(dest.name):
        return dest
    return dest.with_name(dest.name + (".tar.zst" if compress == "zstd" else ".tar"))


def wants_zstd(name: str, compress: str | None) -> bool:
    """``--compress zstd``, or no choice and a name that ends as zstd's do."""
    return compress == "zstd" or (compress is None and name.lower().endswith(ZSTD_NAMES))
