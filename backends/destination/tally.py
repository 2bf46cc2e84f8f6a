"""The end of every folder job: what the source listed, compared with what is on disk under DEST.

A file lost between its rename and the job's end (two source names saved as one, a second process that removed
or replaced it, a tool that wrote elsewhere) must never be counted as done: "verified" is said of the files
found here, each at its own saved name, with its listed size, and no two of them the same file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

from ..core.errors import Corrupt
from ..core.words import agrees, counted, some_of
from .names import shown
from .place import Destination

#: names quoted in the sentence; the rest are counted
SHOWN = 5


def unaccounted(destination: Destination, listed: Iterable[tuple[str, int | None]]) -> dict[str, str]:
    """Each listed file (its given name, and its size where the listing gave one) that is not on disk as listed:
    given name → what is wrong, in a few words."""
    wrong: dict[str, str] = {}
    seen: dict[tuple[int, int], str] = {}
    for given, size in listed:
        path = destination.path(destination.claim(given))
        try:
            info = os.lstat(path)
        except OSError:
            wrong[given] = "not in the destination"
            continue
        if not stat.S_ISREG(info.st_mode):
            wrong[given] = "not a file there"
        elif size is not None and info.st_size != size:
            wrong[given] = f"{info.st_size:,} bytes there, {size:,} listed"
        elif (info.st_dev, info.st_ino) in seen:
            wrong[given] = f"the same file there as {shown(seen[info.st_dev, info.st_ino])!r}"
        else:
            seen[info.st_dev, info.st_ino] = given
    return wrong


def missing_error(wrong: dict[str, str], root) -> Corrupt:
    """The sentence for files of a folder not found as listed (exit 6): none of them is counted as done."""
    named = some_of([f"{shown(given)!r} ({why})" for given, why in wrong.items()], SHOWN)
    return Corrupt(f"{counted(len(wrong), 'file')} of the folder {agrees(len(wrong), 'is', 'are')} not in {root} as "
                   f"the source listed: {named}; Ferry counts none of them as done. Check whether another program "
                   "writes there, then run the same command again with --sync.")


def check_folder(destination: Destination, listed: Iterable[tuple[str, int | None]]) -> None:
    """Raise ``missing_error`` unless every listed file is on disk as listed."""
    wrong = unaccounted(destination, listed)
    if wrong:
        raise missing_error(wrong, destination.root)
