"""Names from servers made safe for every OS Ferry runs on, the same way on each.

A name comes from someone else: a listing, ``Content-Disposition``, the address a redirect ended at, a
torrent, a tar stream, a portal's report. Whatever it holds, the name Ferry saves under stays one name below
DEST, and is one that Linux, macOS, Windows and a FAT/exFAT stick all accept, so a folder fetched on one
machine copies to another and a command gives the same names everywhere:

* a separator inside a name (``/``, ``\\``), a character Windows or FAT refuse (``<>:"|?*``), a control
  character (CR, LF, TAB, NUL …) and bytes that are not UTF-8 are written ``%XX`` (as ``wget
  --restrict-file-names=windows`` does), so ``../x`` is the one name ``..%2Fx`` and ``C:x`` is ``C%3Ax``;
* ``.`` and ``..`` as a whole name, and trailing dots and spaces (Windows drops them), are ``%2E``/``%20``;
* Windows' device names (``CON``, ``aux.txt``, ``LPT1.tar.gz``) get ``_`` after their stem (``aux_.txt``);
* a name longer than ``MAX_NAME_BYTES`` keeps its extension and ends in ``~`` and 8 hex digits of its hash.

``%`` itself is kept, so the rules are not a reversible encoding; that is why every name that changed is
reported beside the one the server gave (``Renamed``), never changed in silence.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

#: the longest name kept whole, in UTF-8 bytes: 255 (Linux, macOS; Windows counts UTF-16 units, fewer) less room
#: for the ``.part`` and ``.part.ferry.tmp`` a file has while it arrives
MAX_NAME_BYTES = 240
#: characters Windows (and FAT/exFAT) refuse in a name, besides the separators and control characters
WINDOWS_REFUSED = frozenset('<>:"|?*')
SEPARATORS = frozenset("/\\")
WINDOWS_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
    + [f"{kind}{n}" for kind in ("COM", "LPT") for n in [*"123456789", "\u00b9", "\u00b2", "\u00b3"]]
)
#: the most path levels a name may have below DEST (deeper than any real data tree)
MAX_LEVELS = 64


@dataclass(frozen=True)
class Renamed:
    """A name the server gave that is saved under another."""

    given: str  # as the server gave it (undecodable bytes shown as \\xNN)
    saved: str  # the path below DEST it was saved as
    why: str  # in a few words

    def __str__(self) -> str:
        return f"{self.given!r} → {self.saved!r} ({self.why})"


def _escape(ch: str) -> str:
    if 0xDC80 <= ord(ch) <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"%{ord(ch) - 0xDC00:02X}"
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8"))


def _refused(ch: str) -> bool:
    code = ord(ch)
    return (code < 32 or code == 127 or ch in WINDOWS_REFUSED or ch in SEPARATORS
            or 0xDC80 <= code <= 0xDCFF or 0xD800 <= code <= 0xDFFF)


#: a name every rule below leaves as it is (letters, digits, ``._-+``, not ending in a dot): most names of a run
#: folder, checked in one match instead of a test a character (300,000 names: 12 s of an unpack's CPU)
_PLAIN = re.compile(r"[A-Za-z0-9_+\-][A-Za-z0-9._+\-]{0,200}(?<!\.)")


def portable_name(name: str) -> tuple[str, str]:
    """One path part as it can be saved everywhere, and why it changed ("" when it did not)."""
    if _PLAIN.fullmatch(name) and name.partition(".")[0].upper() not in WINDOWS_DEVICES:
        return name, ""
    reasons: list[str] = []
    if name in ("", ".", ".."):
        return ("%2E" * len(name)) or "%00", "not a name (., .. or empty)"
    out = "".join(_escape(c) if _refused(c) else c for c in name)
    if out != name:
        reasons.append("characters Windows or a FAT disk refuse, or a separator")
    stripped = out.rstrip(". ")
    if stripped != out:
        out = stripped + "".join(_escape(c) for c in out[len(stripped):])
        reasons.append("Windows drops trailing dots and spaces")
    stem, dot, rest = out.partition(".")
    if stem.rstrip(" ").upper() in WINDOWS_DEVICES:
        out = stem + "_" + dot + rest
        reasons.append("a Windows device name")
    if len(out.encode("utf-8")) > MAX_NAME_BYTES:
        out = _shortened(out, name)
        reasons.append(f"longer than {MAX_NAME_BYTES} bytes")
    return out, "; ".join(reasons)


def _shortened(name: str, original: str) -> str:
    tag = "~" + hashlib.sha256(original.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    base, dot, ext = name.rpartition(".")
    if not dot or len(ext.encode()) > 16:
        base, ext = name, ""
    room = MAX_NAME_BYTES - len(tag.encode()) - (len(ext.encode()) + 1 if ext else 0)
    cut = base.encode("utf-8")[:room].decode("utf-8", "ignore")
    return cut + tag + ("." + ext if ext else "")


def shown(name: str) -> str:
    """A name as a sentence may quote it: bytes that were not UTF-8 as \\xNN."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def portable_path(given: str) -> tuple[str, str]:
    """A server's relative path (parts split on ``/``) as a path below DEST: empty and ``.`` parts and a leading
    ``/`` dropped, every part made portable. Returns (the path, why it changed or ""); a path with nothing left
    or deeper than ``MAX_LEVELS`` raises ``ValueError``."""
    parts = [p for p in given.split("/") if p not in ("", ".")]
    if not parts:
        raise ValueError(f"{shown(given)!r} names no file")
    if len(parts) > MAX_LEVELS:
        raise ValueError(f"{shown(given)[:80]!r}… is more than {MAX_LEVELS} folders deep")
    reasons: list[str] = []
    if given.startswith("/") or "//" in given or "/./" in f"/{given}/":
        reasons.append("a path leading elsewhere")
    saved = []
    for part in parts:
        name, why = portable_name(part)
        saved.append(name)
        if why and why not in reasons:
            reasons.append(why)
    return "/".join(saved), "; ".join(reasons)


def fold(path: str) -> str:
    """The key under which a case-insensitive, normalising disk (macOS's, Windows', exFAT) sees ``path`` as
    one name: NFC, then case-folded."""
    return unicodedata.normalize("NFC", path).casefold()


def numbered(path: str, n: int) -> str:
    """``dir/name~n.ext``: the n-th name of a clash, its extension kept."""
    folder, slash, name = path.rpartition("/")
    base, dot, ext = name.partition(".") if not name.startswith(".") else (name, "", "")
    return f"{folder}{slash}{base}~{n}{dot}{ext}"


def one_part(name: str) -> tuple[str, Renamed | None]:
    """A name a listing gave for one entry, kept one path part: a ``/`` or NUL inside it (``..%2F..%2Fx`` in an
    HTML listing, ``../x`` in an FTP one) written ``%2F``/``%00`` before it is joined into a path, and reported.
    The rest of ``portable_name`` is applied when the path is claimed."""
    if "/" not in name and "\0" not in name:
        return name, None
    kept = name.replace("/", "%2F").replace("\0", "%00")
    return kept, Renamed(shown(name), kept, "a separator inside a name")
