"""A torrent's folder below DEST: the part folder its pieces grow in, the room it needs said before the first
piece, files already there refused (unless replaced), and every file moved to its claimed final name only when
whole and checked (``destination``), with notes for the links and marks it did not keep."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..core.errors import LocalError
from ..core.words import agrees, counted, some_of
from ..destination import Destination, move_into_place, os_error, room_for
from .browse import data_files, layout_of


def part_folder(dest: Path, key: str) -> Path:
    """Where a torrent's files grow below DEST until they are whole and checked."""
    return dest / f".ferry-torrent-{key[:16]}.part"



def links_note(named: list[tuple[str, str]]) -> str | None:
    """The links the torrent named and Ferry did not make (libtorrent made them in the part folder, gone now)."""
    if not named:
        return None
    return (f"{counted(len(named), 'link')} in the torrent {agrees(len(named), 'was', 'were')} not created (Ferry "
            f"makes no links below the destination): {some_of([f'{path} → {to}' for path, to in named])}.")



def marks_note(marked: set[str]) -> str | None:
    """The executable marks the torrent set and Ferry did not keep (its files are saved as data)."""
    if not marked:
        return None
    return (f"{counted(len(marked), 'file')} marked executable in the torrent {agrees(len(marked), 'was', 'were')} "
            f"saved as plain data, not runnable: {some_of(sorted(marked))}. Mark one runnable yourself if you "
            "trust its source.")



def finals(info, destination: Destination) -> list[tuple[str, Path]]:
    """(each data file's path in the part folder, its final path below DEST), names claimed in order."""
    return [(f.path, destination.path(destination.claim(f.path.replace("\\", "/")))) for f in data_files(info)]



def refuse_existing(info, destination: Destination, replace_existing: bool) -> None:
    if replace_existing:
        return
    there = [str(final) for _, final in finals(info, destination) if os.path.lexists(final)]
    if there:
        more = f" (and {len(there) - 1} more of the torrent's files)" if len(there) > 1 else ""
        raise LocalError(f"{there[0]} already exists{more}. Remove it, choose another folder, or pass --overwrite.")



def move_finished(info, work: Path, destination: Destination) -> None:
    """Every file whole and checked: from the part folder to its final name, then the part folder goes."""
    for inside, _ in finals(info, destination):
        saved = destination.claim(inside.replace("\\", "/"))
        try:
            made = work / inside
            data_mode = os.lstat(made).st_mode & 0o666  # a stranger's executable mark is not kept
            move_into_place(made, destination.file(saved), mode=data_mode)
        except OSError as exc:
            raise os_error(exc, destination.path(saved), "move the finished file to") from None
    shutil.rmtree(work, ignore_errors=True)



def room_for_torrent(info, dest: Path) -> None:
    """libtorrent writes pieces into the final files as they come: a disk that cannot hold them all is said
    before the first piece, not found out with a half-written file under its final name."""
    layout = layout_of(info)
    have = 0
    for index in range(layout.num_files()):
        try:
            have += (dest / layout.file_path(index)).stat().st_blocks * 512
        except OSError:
            pass
    room_for(dest / info.name(), info.total_size(), min(have, info.total_size()))
