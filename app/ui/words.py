"""One place that turns Ferry's sentences into the window's: the buttons and boxes to use, never a command-line
flag, an errno or empty parentheses.

Backends and the engine say what happened and what to do in the CLI's terms (``--sync``, "run the same command
again"), and the CLI prints them as they are. The window shows every such sentence through ``for_window``: a
status line, the queue's error column, the details pane, a notification. A sentence with no CLI words in it
passes unchanged.
"""

from __future__ import annotations

import re

#: (what the CLI says, what the window says instead), applied in order
_REWRITES: tuple[tuple[str, str], ...] = (
    # the CLI names a flag and, in parentheses, the window's control: keep the control
    (r"Use --sync \(in the app: ([^)]+)\) to keep", r"Choose \1 (under If files exist) to keep"),
    (r"--sync \(in the app: ([^)]+)\)", r"\1"),
    (r"--overwrite \(([^)]+)\)", r"\1"),
    (r"[Uu]se --sync to keep[^.;]*", "choose Skip unchanged files under If files exist to keep those that are "
                                      "unchanged"),
    (r",? ?(or )?pass --overwrite", r", or choose Replace them under If files exist"),
    (r"--overwrite", "Replace them (under If files exist)"),
    (r"--sync", "Skip unchanged files (under If files exist)"),
    (r"then run again with --accept-new-host-key to trust it", "then connect again and choose Trust"),
    (r"Connect once with --accept-new-host-key \(after checking its fingerprint\)",
     "Connect from the window and trust the key when asked (after checking its fingerprint)"),
    (r"--accept-new-host-key", "Trust (when the window asks)"),
    (r"\(labferry sites add … --ask-secret stores the password in the keyring\)",
     "(save it in the site profile: Sites → Edit)"),
    (r"pass --ca-file with that CA", "give that CA in the site profile (CA file)"),
    (r",? ?or --ca-file[^.;]*", ""),
    (r"--ca-file", "the site profile's CA file"),
    (r"; use --insecure only on a network you trust", ""),
    (r"--identity", "the site's key file"),
    (r"\(--stall-timeout\)", "(the site's stall time)"),
    (r"--stall-timeout", "the site's stall time"),
    (r"give --web-page to save the page itself", "the page itself cannot be saved from the window"),
    (r"--checksum", "the Checksum box"),
    (r"--limit-rate", "the rate limit"),
    (r"--streams", "the Streams box"),
    (r"--retries \d+", "the retries"),
    (r"[Rr]un the same command again to resume( from where it stopped)?", "press Resume (or Retry) to go on"),
    (r"[Rr]un the same command again", "press Retry"),
    (r"[Rr]un the transfer again", "press Retry"),
    (r"[Rr]un again with Skip unchanged files \(under If files exist\)",
     "press Retry with Skip unchanged files chosen"),
    (r"labferry copy URL ([^ ]+)/NEW-NAME", r"a new name in New transfer's To box"),
    (r"--([a-z][a-z-]+)", r"the \1 option (in the site's options)"),
    # what Python and the libraries add to their messages
    (r"\[Errno (?:-?\d+|None)\] ", ""),
    (r" \(\)", ""),
    (r"\(\s*\)", ""),
)
_COMPILED = tuple((re.compile(pattern), repl) for pattern, repl in _REWRITES)


def for_window(text: str | None) -> str:
    """``text`` in the window's words (an empty string for None)."""
    if not text:
        return ""
    for pattern, repl in _COMPILED:
        text = pattern.sub(repl, text)
    # a space left before a sentence's full stop goes; one before a name (" .sra", " .part") stays
    return re.sub(r" \.(?=\s|$)", ".", re.sub(r"  +", " ", text)).replace(",.", ".").strip()


def as_folder(dest: str) -> str:
    """A destination the window names as a folder (the download folder, a pane's folder, New transfer's To box)
    is one: ``run42/`` goes into ``X/run42/`` whether X exists yet or not, as in every file manager. (The front
    door takes a local path without a trailing separator that does not exist as the name to give the copy.)"""
    import os

    if "://" in dest or dest.startswith("site:") or dest.endswith(("/", os.sep)) or not dest:
        return dest
    return dest + os.sep


def file_name(location: str) -> str:
    """What a transfer is called in a list: the last part of its source (an address's path, a local path),
    undecoded from %XX; the whole location when it has no such part."""
    from pathlib import PurePosixPath
    from urllib.parse import unquote, urlsplit

    path = urlsplit(location).path if "://" in location else location.replace("\\", "/")
    return unquote(PurePosixPath(path.rstrip("/")).name) or location
