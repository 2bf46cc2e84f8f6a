"""What a torrent holds, as listed in its description: its data files (without v2's pad files and its links), the
links it names and the files it marks executable (for the notes that say Ferry kept neither)."""

from __future__ import annotations

from typing import NamedTuple

import libtorrent as lt


class DataFile(NamedTuple):
    path: str  # relative to the save path, the torrent's name first
    offset: int  # where the file starts in the torrent's byte stream (pads included)
    size: int



def layout_of(info: lt.torrent_info):
    return info.layout() if hasattr(info, "layout") else info.files()  # files() is deprecated in libtorrent 2.1



def data_files(info: lt.torrent_info) -> list[DataFile]:
    """A torrent's files without v2's pad files (they only align each file to a piece) and without its links
    (``links``: Ferry makes none below DEST)."""
    files = layout_of(info)
    skip = lt.file_storage.flag_pad_file | lt.file_storage.flag_symlink
    return [DataFile(files.file_path(i), files.file_offset(i), files.file_size(i)) for i in range(files.num_files())
            if not files.file_flags(i) & skip]



def links(info: lt.torrent_info) -> list[tuple[str, str]]:
    """The links a torrent names (``symlink`` attribute): (its path, where it points), for the note that says
    they were not made. libtorrent makes them in the part folder; they go with it."""
    files = layout_of(info)
    return [(files.file_path(i), files.symlink(i)) for i in range(files.num_files())
            if files.file_flags(i) & lt.file_storage.flag_symlink]



def marked_executable(info: lt.torrent_info) -> set[str]:
    """The files a torrent marks executable (``x`` attribute). libtorrent makes them runnable; Ferry saves a
    stranger's files as data, as browsers and curl do, and says which marks it did not keep."""
    files = layout_of(info)
    return {files.file_path(i) for i in range(files.num_files())
            if files.file_flags(i) & lt.file_storage.flag_executable
            and not files.file_flags(i) & lt.file_storage.flag_symlink}
