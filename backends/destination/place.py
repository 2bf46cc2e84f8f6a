"""Where bytes may go: DEST and the folders below it, reached without following a link.

A link inside DEST (``DEST/run42 -> /elsewhere``), placed by a user, an earlier tool or a tar stream, would take
a write outside DEST. Every folder below DEST is therefore checked part by part with ``lstat`` before a file
is made in it, and the file itself is opened with no-follow semantics (``partfile.open_new``): a link is
refused with a sentence that names it, never followed and never replaced in silence. DEST itself may be a
link (``~/data -> /mnt/big/data`` is common): the user chose it.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from ..core.errors import LinkInDest, LocalError, NoSpace
from ..core.words import agrees, counted, human_size, some_of
from ..host import portable
from .names import Renamed, fold, numbered, portable_path, shown


def os_error(exc: OSError, path: Path, doing: str) -> LocalError:
    """A failed file operation under DEST as the sentence that says what to do about it."""
    if exc.errno == errno.ENOSPC:
        return NoSpace(f"The disk holding {path.parent} is full. Free some space there and run the transfer again.")
    if exc.errno in (errno.EROFS,):
        return LocalError(f"{path.parent} is on a read-only file system. Choose another destination folder.")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return LocalError(f"Ferry cannot write to {path.parent} (permission denied). Choose a folder you can write to.")
    if exc.errno == errno.EDQUOT:
        return NoSpace(f"Your disk quota on {path.parent} is used up. Free some space or ask IT for more.")
    if exc.errno == errno.ELOOP:
        return link_refused(path)
    if exc.errno == errno.ENAMETOOLONG:
        return LocalError(f"The path {path} is longer than this file system allows. Choose a destination folder "
                          "with a shorter path.")
    return LocalError(f"Could not {doing} {exc.filename or path}: {exc.strerror}. Check that folder, or choose "
                      "another destination.")


def link_refused(path: Path) -> LinkInDest:
    try:
        to = f" (it leads to {os.readlink(path)})"
    except OSError:
        to = ""
    return LinkInDest(f"{path} is a link{to}; Ferry never writes through a link in the destination. Remove the "
                      "link, or choose another destination folder.")


def refuse_link(path: Path) -> None:
    """``path`` must not be a link (a file about to be written or replaced, or a folder about to be entered)."""
    if portable.is_link(path):
        raise link_refused(path)


def room_for(dest: Path, size: int, already: int = 0) -> None:
    """Fail in words when the disk holding ``dest`` cannot take ``size - already`` more bytes."""
    free = portable.free_bytes(dest.parent)
    if free is not None and size - already > free:
        raise no_space(dest.parent, size - already, free)


def no_space(folder: Path, needed: int, free: int) -> NoSpace:
    return NoSpace(f"Not enough free space in {folder}: the file needs {human_size(needed)} more, only "
                   f"{human_size(free)} is free. Free some space or choose another folder.")


def check_destination(dest: Path, overwrite: bool) -> None:
    """Fail early, in words, when the destination cannot take the file."""
    folder = dest.parent
    if not folder.is_dir():
        raise LocalError(f"The destination folder {folder} does not exist. Create it first, or choose another folder.")
    refuse_link(dest)
    if dest.is_dir():
        raise LocalError(f"{dest} is a folder. Give a file name, or the folder to put the file in.")
    if dest.exists() and not overwrite:
        raise LocalError(f"{dest} already exists. Remove it, choose another name, or pass --overwrite.")
    refuse_link(dest.with_name(dest.name + ".part"))
    if portable.read_only_fs(folder):
        raise LocalError(f"{folder} is on a read-only file system. Choose another destination folder.")
    if not os.access(folder, os.W_OK):
        raise LocalError(f"Ferry cannot write to {folder} (permission denied). Choose a folder you can write to.")


class Destination:
    """DEST as a folder that a job's files go below: the one place names from a server become paths.

    ``claim`` turns the server's relative path into the one saved (portable, ``names``), records every name
    that changed, and numbers names that a case-insensitive disk would take for one another (``A.txt`` and
    ``a.txt``: the second becomes ``a~2.txt``) instead of letting one overwrite the other. ``folder`` makes
    folders below DEST without following a link; ``path`` is where a claimed file goes."""

    def __init__(self, root: Path | str, *, named_here: bool = False) -> None:
        """``named_here``: the root's last part was made from the source's name (DEST was a folder), so a link
        there was not the user's choice and is refused like any link below DEST."""
        self.root = portable.long_path(root)  # Windows: any depth below a DEST near 260 characters
        self.named_here = named_here
        self.renamed: list[Renamed] = []
        self._claims: dict[str, str] = {}  # given → saved
        self._saved: dict[str, tuple[str, bool]] = {}  # saved → (the given name, a folder): one file a path
        self._folded: dict[str, str] = {}  # fold(saved) → saved, on a disk that folds case
        self._safe_folders: set[Path] = set()
        self._made: dict[str, str] = {}  # a claimed folder → its path, made and checked (``file_path``)
        self._folds: bool | None = None

    def claim(self, given: str, *, folder: bool = False, known: tuple[str, str] | None = None) -> str:
        """The path below DEST that the server's ``given`` path is saved as (the same answer every time). Two
        given files never share a saved path: a name the safe-name rules (``what?.txt`` → ``what%3F.txt``) or a
        disk that folds case would put on another's place is numbered (``what%3F~2.txt``) and said. Folders
        (``folder``) may share one, as on a disk that folds case: only a file is ever overwritten."""
        if given in self._claims:
            return self._claims[given]
        try:
            saved, why = known or portable_path(given)  # ``known``: ``portable_path(given)`` as claim_all found it
        except ValueError as exc:
            raise LocalError(f"The server named a file Ferry cannot save: {exc}.") from None
        if self._taken(saved, folder):
            first = self._owner(saved)
            clash = (f"would be saved on the place of {shown(first)!r}" if saved in self._saved else
                     f"differs only by case or accents from {shown(first)!r} on this disk")
            n = 2
            while self._taken(numbered(saved, n), folder):
                n += 1
            saved = numbered(saved, n)
            why = "; ".join(filter(None, [why, clash]))
        self._folded.setdefault(fold(saved), saved)
        self._saved.setdefault(saved, (given, folder))
        self._claims[given] = saved
        if why:
            self.renamed.append(Renamed(shown(given), saved, why))
        return saved

    def claim_all(self, files, folders=()) -> None:
        """Claim a whole listing at once, so the numbering does not depend on the order a server lists in:
        folders first, then the files kept as given (the literal ``what%3F.txt`` keeps its name), then those
        the rules change, each sorted."""
        for given in sorted(set(folders)):
            self.claim(given, folder=True)
        kept, changed, known = [], [], {}
        for given in sorted(set(files)):
            try:
                known[given] = portable_path(given)
                (kept if known[given][0] == given else changed).append(given)
            except ValueError:
                changed.append(given)  # its claim says why it cannot be saved
        for given in kept + changed:
            self.claim(given, known=known.get(given))

    def _taken(self, saved: str, folder: bool) -> bool:
        """Whether ``saved`` is another's already: any claim bars a file, a file's claim bars a folder."""
        owner = self._owner_of(saved)
        return owner is not None and (not folder or not owner[1])

    def _owner_of(self, saved: str) -> tuple[str, bool] | None:
        """Who claimed ``saved``, or its twin on a disk that folds case or accents."""
        if saved in self._saved:
            return self._saved[saved]
        twin = self._folded.get(fold(saved))
        return self._saved.get(twin) if twin is not None and self.folds_case() else None

    def _owner(self, saved: str) -> str:
        owner = self._owner_of(saved)
        return owner[0] if owner else saved

    def note_renamed(self, renamed: list[Renamed]) -> None:
        """Names a listing already had to change to keep them one part (``names.one_part``)."""
        self.renamed.extend(r for r in renamed if r not in self.renamed)

    def path(self, saved: str) -> Path:
        return self.root / saved if saved else self.root

    def folder(self, saved: str) -> Path:
        """Make the folder ``saved`` below DEST (and those above it), entering no link; returns its path."""
        target = self.path(saved)
        if target in self._safe_folders:
            return target
        current = self.root
        try:
            if self.named_here:
                refuse_link(current)
            if current.exists() and not current.is_dir():
                raise LocalError(f"{current} is a file, not a folder. Choose a folder to copy into.")
            current.mkdir(parents=True, exist_ok=True)
            for part in [p for p in saved.split("/") if p]:
                current = current / part
                if current in self._safe_folders:
                    continue
                refuse_link(current)
                if current.exists() and not current.is_dir():
                    raise LocalError(f"{current} is a file, but the server has a folder of that name. Move it away "
                                     "or choose another destination.")
                try:
                    current.mkdir()
                except FileExistsError:
                    refuse_link(current)  # made meanwhile: by whom is not known, so checked again
                self._safe_folders.add(current)
        except OSError as exc:
            raise os_error(exc, current / "x", "make the folder") from None
        self._safe_folders.add(target)
        return target

    def file(self, saved: str) -> Path:
        """Where the claimed file ``saved`` goes: its folders made and checked, the file itself not a link."""
        folder, _, _ = saved.rpartition("/")
        path = self.folder(folder) / saved.rpartition("/")[2]
        refuse_link(path)
        return path

    def file_path(self, saved: str) -> str:
        """Where the claimed file ``saved`` goes, its folders made and checked; the name itself is checked by
        what writes it, just before it is named (``write_whole``): one ``lstat`` a file fewer in a million."""
        folder, _, name = saved.rpartition("/")
        made = self._made.get(folder)
        if made is None:  # a folder is made and checked once; its files' paths are then only joined
            made = self._made[folder] = str(self.folder(folder))
        return os.path.join(made, name)

    def folds_case(self) -> bool:
        """Whether the disk under DEST takes ``A.txt`` and ``a.txt`` (or ``é`` composed and decomposed) for one
        name, as macOS's and Windows' disks and exFAT sticks do: asked once, of the disk itself."""
        if self._folds is None:
            self._folds = _folds_case(self.root)
        return self._folds

    def renamed_note(self, limit: int = 5, origin: str = "the server") -> str | None:
        """One sentence naming what was saved under another name, or None."""
        if not self.renamed:
            return None
        count, named = len(self.renamed), some_of([str(r) for r in self.renamed], limit)
        return (f"{counted(count, 'name')} from {origin} could not be kept as given and "
                f"{agrees(count, 'was', 'were')} saved under a safe name: {named}.")


def _folds_case(folder: Path) -> bool:
    """Make a file named with an upper-case composed É and look for its lower-case decomposed twin."""
    probe = f".ferry-case-{secrets.token_hex(4)}-\u00c9"
    twin = probe.lower().replace("\u00e9", "e\u0301")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | portable.O_NOFOLLOW, 0o600)
    except OSError:
        return True  # cannot tell: take the careful answer (numbered names, never an overwrite)
    os.close(fd)
    try:
        return (folder / twin).exists() or (folder / probe.lower()).exists()
    finally:
        try:
            os.unlink(folder / probe)
        except OSError:
            pass
