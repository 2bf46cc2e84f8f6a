"""The only shell commands Ferry runs on a remote host: fixed strings, never built from user input.

File names travel on stdin, each byte written as a ``\\ooo`` octal escape that the remote
``printf`` turns back into bytes, so spaces, quotes, ``;``, ``$()``, newlines and any
encoding arrive intact and are never parsed by a shell. The only other arguments are
integers Ferry formats itself. Everything is one line of POSIX ``sh``, wrapped in single
quotes, so csh, fish or bash as the login shell all pass it through unchanged.
"""

from __future__ import annotations

import shlex
import stat as statmod

from .address import Entry

# read one encoded path from stdin into $f (the trailing "." keeps trailing newlines)
_PATH = 'IFS= read -r p || exit 90; f=$(printf "$p."); f=${f%.}'

# the compressor ``--compress`` uses there: zstd, else the Ferry installed there (``labferry zstd``, the zstandard
# package: ``zfilter.py``); ``ZSTD_SAMPLE`` says beforehand which one the server has, if any
_Z = 'if command -v zstd >/dev/null 2>&1; then z=zstd; else z="labferry zstd"; fi'

# a stream: one shell per connection serves many ranges (a login shell can take 100 ms to start:
# pyenv or conda in .bashrc). For each "SKIP COUNT" line in (in blocks of $1 bytes) it answers
# "FERRY LENGTH", exactly LENGTH bytes, then "FERRY-END"; the framing catches any desync. Every login of a
# download starts one before the path is known to be a file; when it is a folder, a "TAR" line turns the
# channel into ``TAR_CREATE`` for it (the names follow as in ``many_names``), without a new channel's round trips.
READ_RANGES = (
    _PATH + '; ' + _Z + '; while read -r o n y; do if [ "$o" = TAR ]; then cd "$f" || exit 91; '
    'if [ "$n" = Z ]; then exec 4>&1; r=$( { { tar -cf - --null -T -; echo $? >&3; } | $z -1 -cq >&4; } 3>&1 ); '
    'exit "$r"; fi; exec tar -cf - --null -T -; fi; '
    's=$(($(wc -c <"$f"))) || exit 91; a=$((o * $1)); e=$(((o + n) * $1)); '
    '[ "$e" -gt "$s" ] && e=$s; l=$((e - a)); [ "$l" -lt 0 ] && l=0; printf "FERRY %s\\n" "$l"; '
    'if [ "$l" -gt 0 ]; then if [ "$y" = Z ]; then dd if="$f" bs="$1" skip="$o" count="$n" 2>/dev/null '
    '| $z -1 -cq || exit 92; else dd if="$f" bs="$1" skip="$o" count="$n" 2>/dev/null || exit 92; fi; fi; '
    'printf "FERRY-END\\n"; done'
)
# write stdin at block $2, then read back exactly those $3 blocks and print their SHA-256 (empty: no tool)
WRITE_RANGE = (
    _PATH + '; dd of="$f" bs="$1" seek="$2" conv=notrunc || exit $?; dd if="$f" bs="$1" skip="$2" count="$3" '
    "2>/dev/null | { openssl dgst -sha256 -r 2>/dev/null || sha256sum 2>/dev/null || shasum -a 256 2>/dev/null "
    "|| true; }"
)
# ``WRITE_RANGE`` for a range sent as one zstd frame (``squeeze.py``): zstd's status comes back on fd 3, so a
# frame that fails its checksum answers "FERRY-BADFRAME" (sent again) instead of a read-back of damaged bytes
WRITE_RANGE_Z = (
    _PATH + '; ' + _Z + '; r=$( { { $z -dcq; echo $? >&3; } | dd of="$f" bs="$1" seek="$2" conv=notrunc '
    '2>/dev/null; } 3>&1 ); '
    '[ "$r" = 0 ] || { echo FERRY-BADFRAME; exit 0; }; dd if="$f" bs="$1" skip="$2" count="$3" 2>/dev/null '
    "| { openssl dgst -sha256 -r 2>/dev/null || sha256sum 2>/dev/null || shasum -a 256 2>/dev/null || true; }"
)
# "TOOL CORES SENT PACKED NANOSECONDS": the server's compressor on the first $1 bytes of the file (0: only which
# it has, "TOOL CORES"); TOOL is zstd, or ferry (``labferry zstd``: a server with Ferry and no zstd); "none"
# without either. BSD date has no %N: the time is then left out
ZSTD_SAMPLE = (
    _PATH + '; if command -v zstd >/dev/null 2>&1; then z=zstd; w=zstd; '
    'elif labferry zstd --can >/dev/null 2>&1; then z="labferry zstd"; w=ferry; else echo none; exit 0; fi; '
    'c=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); '
    'if [ "$1" -eq 0 ]; then echo "$w $c"; exit 0; fi; n=$(head -c "$1" "$f" | wc -c); t=$(date +%s%N); '
    'p=$(head -c "$1" "$f" | $z -1 -cq | wc -c); u=$(date +%s%N); '
    'case "$t$u" in *[!0-9]*) d=;; *) d=$((u - t));; esac; echo "$w $c $n $p $d"'
)
PROBE = "echo ferry-exec-ok"
# everything under the current folder (GNU find): "TYPE SIZE MTIME MODE PATH" records separated by NULs
_FIND_TREE = "find -L . -mindepth 1 \\( -type f -o -type d \\) -printf '%y %s %T@ %m %P\\0'"
# for each path line in: "FERRY-STAT MODE_HEX SIZE MTIME" (symlinks followed) then the login folder and a NUL,
# "FERRY-NONE" when there is no such file, or "FERRY-ERR MESSAGE". A folder's answer goes on with its listing
# (``_FIND_TREE`` records, then "END STATUS" and a NUL; a record never starts with "END": its first field is
# f or d): a folder download needs it next, and this saves the round trips of another channel. Where the
# server has gzip, a "GZ" record comes first and the rest arrives as one gzip member (``gzip -1``: 2,000
# files' 100 KB listing is 21 KB, two round trips fewer of slow start on a fresh connection). GNU and
# BusyBox stat take -c; BSD's (no -c, tried on "/") takes -f, with %Xp for the mode in hex. One channel
# answers a job's stats, one round trip each.
STAT_EACH = (
    "export LC_ALL=C; if stat -L -c %s / >/dev/null 2>&1; then g=1; else g=; fi; "
    'while IFS= read -r p; do f=$(printf "$p."); f=${f%.}; '
    'if [ -n "$g" ]; then m=$(stat -L -c "%f %s %Y" -- "$f" 2>&1); else m=$(stat -L -f "%Xp %z %m" "$f" 2>&1); fi; '
    'r=$?; if [ "$r" -eq 0 ]; then printf "FERRY-STAT %s\\n%s\\0" "$m" "$PWD"; '
    'if [ -d "$f" ]; then if command -v gzip >/dev/null 2>&1; then printf "GZ\\0"; '
    '{ (cd "$f" && exec ' + _FIND_TREE + ') 2>/dev/null; printf "END %s\\0" "$?"; } | gzip -1; '
    'else (cd "$f" && exec ' + _FIND_TREE + ') 2>/dev/null; printf "END %s\\0" "$?"; fi; fi; '
    'else case $m in *"No such file"*) printf "FERRY-NONE\\n";; '
    '*) printf "FERRY-ERR %s\\n" "$(printf %s "$m" | tr "\\n" " ")";; esac; fi; done'
)
# OpenSSL first: it uses the CPU's SHA extensions (0.85 s per GiB here, coreutils' sha256sum 4.0 s)
SHA256 = (
    _PATH + "; if command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r <\"$f\"; "
    "elif command -v sha256sum >/dev/null 2>&1; then sha256sum <\"$f\"; "
    "elif command -v shasum >/dev/null 2>&1; then shasum -a 256 <\"$f\"; "
    "elif command -v sha256 >/dev/null 2>&1; then sha256 -q <\"$f\"; else exit 127; fi"
)
# many files in one process: the folder line, then "./NAME" entries separated by NULs; one "HEX  NAME" line
# out per file, in order (GNU sha256sum escapes odd names onto one line, prefixed with a backslash)
SHA256_MANY = (
    _PATH + '; cd "$f" || exit 91; if command -v sha256sum >/dev/null 2>&1; then exec xargs -0 sha256sum --; '
    "elif command -v shasum >/dev/null 2>&1; then exec xargs -0 shasum -a 256 --; else exit 127; fi"
)
# everything under a folder in one round trip (``_FIND_TREE``)
LIST_TREE = _PATH + '; cd "$f" || exit 91; exec ' + _FIND_TREE
# each line in: an encoded folder path, given owner rwx (a read-only folder an upload writes into again)
OPEN_FOLDERS = 'while IFS= read -r p; do f=$(printf "$p."); f=${f%.}; chmod u+rwx -- "$f" || exit 93; done'
# each line in: "MODE STAMP PATH" (octal mode and ``touch -t`` time, in UTC, as Ferry formats them; the path
# encoded): the folders' own mode and time, set once every file is in them (a read-only folder set earlier would
# stop the tar streams still writing into it; and each file added changes its folder's time)
SET_FOLDERS = (
    'export TZ=UTC0; while read -r m t p; do f=$(printf "$p."); f=${f%.}; '
    'chmod -- "$m" "$f" && touch -m -t "$t" -- "$f" || exit 93; done'
)
# a tar stream of the named files (NUL-separated list after the folder line), relative to the folder
TAR_CREATE = _PATH + '; cd "$f" || exit 91; exec tar -cf - --null -T -'
TAR_EXTRACT = _PATH + '; mkdir -p "$f" && cd "$f" || exit 91; exec tar -xpf -'
# the same as one zstd frame (``--compress``): tar's own status is the answer (it comes back on fd 3), so a file
# that could not be read fails the stream as it does without compression
TAR_CREATE_Z = (
    _PATH + '; ' + _Z + '; cd "$f" || exit 91; exec 4>&1; r=$( { { tar -cf - --null -T -; echo $? >&3; } '
    '| $z -1 -cq >&4; } 3>&1 ); exit "$r"'
)
TAR_EXTRACT_Z = _PATH + '; ' + _Z + '; mkdir -p "$f" && cd "$f" || exit 91; $z -dcq | tar -xpf -'
FREE_BYTES = _PATH + '; df -Pk "$f" | awk \'NR==2 {print $4 * 1024}\''


def sha256_answer(status: int, out: bytes) -> str | None:
    """The digest ``SHA256`` printed, or None (no tool, or the command failed)."""
    digest = out.split()[0].decode("ascii", "replace").lower() if out.split() else ""
    return digest if status == 0 and len(digest) == 64 else None


def many_names(root: str, rels: list[str]) -> bytes:
    """``SHA256_MANY``'s and ``TAR_CREATE``'s stdin: the folder line, then "./NAME" entries, NUL-separated
    ("./" first: a name such as "--to-command=…" never reaches a remote tool as an option)."""
    return encode_path(root) + _names(rels)


def tar_request(rels: list[str], packed: bool = False) -> bytes:
    """What turns a ``READ_RANGES`` channel opened on a folder into a tar stream of ``rels`` in it (``packed``:
    as one zstd frame)."""
    return (b"TAR Z\n" if packed else b"TAR\n") + _names(rels)


def _names(rels: list[str]) -> bytes:
    return b"".join(b"./" + r.encode("utf-8", "surrogateescape") + b"\0" for r in rels)


def sha256_many_answer(status: int, out: bytes, count: int) -> list[str | None]:
    """The digests ``SHA256_MANY`` printed, in order; all None when it failed or could not say."""
    lines = out.split(b"\n")[:-1] if out.endswith(b"\n") else out.split(b"\n")
    if status != 0 or len(lines) != count:
        return [None] * count
    digests = [line.lstrip(b"\\")[:64].decode("ascii", "replace").lower() for line in lines]
    return [d if len(d) == 64 and all(c in "0123456789abcdef" for c in d) else None for d in digests]


def tree_answer(out: bytes | list[bytes]) -> list[Entry]:
    """The entries ``_FIND_TREE`` printed (its output, or its records), sorted by relative path."""
    entries = []
    for record in out.split(b"\0") if isinstance(out, bytes) else out:
        parts = record.split(b" ", 4)
        if len(parts) != 5:
            continue
        kind, size, mtime, mode, rel = parts
        file_type = statmod.S_IFDIR if kind == b"d" else statmod.S_IFREG
        entries.append(Entry(rel.decode("utf-8", "surrogateescape"), int(size), int(float(mtime)),
                             file_type | int(mode, 8)))
    return sorted(entries, key=lambda e: e.rel)


def encode_path(path: str | bytes) -> bytes:
    """One stdin line that the remote ``printf`` decodes back to exactly ``path``."""
    raw = path.encode("utf-8", "surrogateescape") if isinstance(path, str) else path
    return "".join(f"\\{b:03o}" for b in raw).encode("ascii") + b"\n"


def command(script: str, *numbers: int) -> str:
    """The command line for ``sh -c SCRIPT ferry N...``; the numbers are ints Ferry made."""
    for n in numbers:
        if not isinstance(n, int) or n < 0:
            raise ValueError("remote arguments must be non-negative integers")
    return " ".join(["sh", "-c", shlex.quote(script), "ferry", *(str(n) for n in numbers)])
