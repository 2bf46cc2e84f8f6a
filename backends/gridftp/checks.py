"""What a GridFTP download and upload share: the part file's name, globus-url-copy's options for a plan, and
the checks of a copy's SHA-256 (the server's, the user's ``--checksum``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..core.base import TransferOptions
from ..core.errors import Corrupt, TransferError
from ..core.options import read_options
from . import guc
from .address import GridUrl
from .control import Entry, open_control
from .options import GridftpOptions
from .tuning import Plan


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def guc_options(plan: Plan, options: TransferOptions, verify: str | None = None) -> guc.Options:
    own = read_options(GridftpOptions, options.backend_options)
    return guc.Options(streams=plan.streams, tcp_bs=plan.tcp_bs, verify=verify, restart_retries=own.restart_retries,
                       udt=own.transport == "udt")


async def server_sum(url: GridUrl, path: str, options: TransferOptions | None = None) -> str | None:
    """The server's sha256 of ``path`` on a connection of its own (so it can run during the copy)."""
    if options is not None and not options.verify:
        return None
    def work() -> str | None:
        control = open_control(url)
        if control is None:
            return None
        try:
            return control.checksum(path, "SHA256")
        finally:
            control.close()
    try:
        return await asyncio.to_thread(work)
    except TransferError:
        return None


def check_given(got: str, options: TransferOptions) -> None:
    """The user's ``--checksum sha256:…``, when given, must match."""
    if options.checksum and options.checksum.algorithm == "sha256" and options.checksum.hexdigest.lower() != got:
        raise Corrupt(f"The copy's sha256 ({got[:12]}…) differs from the one you gave "
                      f"({options.checksum.hexdigest[:12]}…). The source may have changed; check it.")


def compare(expected: str | None, got: str, what: str, options: TransferOptions) -> tuple[bool, str]:
    check_given(got, options)
    if expected is None:
        given = options.checksum is not None and options.checksum.algorithm == "sha256"
        return given, "sha256 matched the checksum given" if given else "sha256 computed; size checked"
    if expected != got:
        raise Corrupt(f"The {what}'s sha256 differs from the copy's ({expected[:12]}… vs {got[:12]}…). "
                      "The data was damaged on the way; Ferry will not keep it.")
    return True, f"sha256 computed by the {what} matched"


class IsFolder(Exception):
    """The address named a folder after all; the caller copies it as one."""

    def __init__(self, entry: Entry) -> None:
        super().__init__(entry.rel)
        self.entry = entry
