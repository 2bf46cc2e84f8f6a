"""One file over GridFTP to a server: upload, or server to server (third party); what downloads share.

The bytes move with globus-url-copy; Ferry adds what an expert would do by hand around it:

* **Nothing half-written under the final name.** An upload or third-party copy goes to
  ``NAME.part`` on the server and is renamed there (``RNFR``/``RNTO``) when its checksum
  matched (``ftp://``; the Globus tools cannot rename on ``gsiftp://``/``sshftp://``, so
  there the file is written in place and checked with ``-verify-checksum``). Downloads:
  ``fetch``.
* **Verification without a second pass.** The source file already exists on the server,
  so its ``CKSM SHA256`` runs on a second control connection *while* the data moves.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from ..core.base import NOT_COMPARED, Result, Sink, TransferOptions
from ..core.claims import replaced
from ..core.errors import Corrupt, LocalError, TransferError
from ..core.made import Made, whole_sha256
from .address import GridUrl, local_url
from .checks import check_given, guc_options, server_sum
from .claim import claim, release
from .control import Control, Entry, open_control
from .copy import Copy
from .tuning import Plan


async def upload(source: Path | Made, remote: GridUrl, plan: Plan, options: TransferOptions, sink: Sink,
                 control: Control | None, token: str = "") -> Result:
    """A local file, or one made on demand (``--pack``: fed to globus-url-copy's stdin), to ``remote`` (a file
    path on the server), its part claimed for this upload (``claim``)."""
    began = time.monotonic()
    try:
        size = source.size if isinstance(source, Made) else source.stat().st_size
    except OSError as exc:
        raise LocalError(f"Cannot read {source}: {exc.strerror}. Check the file.") from None
    if control is not None:
        await asyncio.to_thread(claim, control, remote.path, token)
    try:
        return await _upload(source, remote, plan, options, sink, control, size, began)
    finally:
        if control is not None:
            await asyncio.to_thread(release, control, remote.path)


async def _upload(source: Path | Made, remote: GridUrl, plan: Plan, options: TransferOptions, sink: Sink,
                  control: Control | None, size: int, began: float) -> Result:
    staged = remote.sibling(remote.name + ".part") if control else remote
    halt = threading.Event()  # set when the upload stops: the digest's thread ends then, not at the file's end
    local_sum = asyncio.ensure_future(asyncio.to_thread(whole_sha256, source, halt))
    verify = None if control else "SHA256"
    made = source if isinstance(source, Made) else None
    tool_options = guc_options(plan, options, verify)
    if made is not None:
        tool_options.restart_retries = 0  # a pipe cannot be read again: the engine's retry sends it anew
    copy = Copy("-" if made else local_url(source), staged.text(), tool_options, sink, size, feed=made)
    try:
        await copy.run()
        sink.stage("verifying")
        digest = await local_sum
        verified, method = await _finish_remote(control, staged, remote, digest, size, options,
                                                 mtime=made.mtime if made else source.stat().st_mtime)
    except BaseException:
        halt.set()
        local_sum.cancel()
        if control is not None:
            await asyncio.to_thread(_remove_quietly, remote, staged.path)
        raise
    return Result(size, time.monotonic() - began, plan.streams, digest, verified, method,
                  peer_host=remote.host, bytes_fetched=size)


async def third_party(source: GridUrl, entry: Entry | None, dest: GridUrl, plan: Plan, options: TransferOptions,
                      sink: Sink, control: Control | None) -> Result:
    """Server to server: the two servers connect to each other; no data passes through here."""
    began = time.monotonic()
    size = entry.size if entry else None
    staged = dest.sibling(dest.name + ".part") if control else dest
    source_sum = asyncio.ensure_future(server_sum(source, source.path, options))
    verify = None if control and source.scheme == "ftp" else "SHA256"
    copy = Copy(source.text(), staged.text(), guc_options(plan, options, verify), sink, size)
    try:
        await copy.run()
        sink.stage("verifying")
        digest = await source_sum
        if control is None or digest is None:
            return Result(size or copy.done, time.monotonic() - began, plan.streams, digest, bool(verify),
                          "checked by globus-url-copy (-verify-checksum)" if verify else "sizes checked",
                          peer_host=source.host, bytes_fetched=size or copy.done)
        verified, method = await _finish_remote(control, staged, dest, digest, size, options,
                                                 mtime=entry.mtime if entry else None, what="source server's")
    except BaseException:
        source_sum.cancel()
        if control is not None:
            await asyncio.to_thread(_remove_quietly, dest, staged.path)
        raise
    return Result(size or 0, time.monotonic() - began, plan.streams, digest, verified, method,
                  peer_host=source.host, bytes_fetched=size or 0)


async def _finish_remote(control: Control | None, staged: GridUrl, final: GridUrl, digest: str, size: int | None,
                         options: TransferOptions, *, mtime: float | None, what: str = "local") -> tuple[bool, str]:
    """Check the server's copy against ``digest`` and give it its final name."""
    if control is None:
        return True, "sha256 checked by globus-url-copy (-verify-checksum)"
    entry = await asyncio.to_thread(control.stat, staged.path)
    if entry is None or (size is not None and entry.size != size):
        got = entry.size if entry else "no"
        raise Corrupt(f"The server's copy has {got} bytes instead of {size}; Ferry removed it. Run the transfer again.")
    remote_sum = await asyncio.to_thread(control.checksum, staged.path, "SHA256") if options.verify else None
    if not options.verify:
        verified, method = False, NOT_COMPARED
    elif remote_sum is None:
        verified, method = False, "sizes checked (the server cannot compute sha256)"
    elif remote_sum != digest:
        raise Corrupt(f"The server's copy has a different sha256 from the {what} file ({remote_sum[:12]}… vs "
                      f"{digest[:12]}…); Ferry removed it. Run the transfer again.")
    else:
        verified, method = True, f"sha256 computed by the destination server matched the {what} one"
    check_given(digest, options)
    if staged.path != final.path:
        await asyncio.to_thread(control.rename, staged.path, final.path)
        if verified:  # the word rests on the file at its final name: a second writer may have replaced it
            there = await asyncio.to_thread(control.checksum, final.path, "SHA256")
            if there != digest:
                raise replaced(final.path, final.where, f"sha256 {(there or 'none')[:16]}… there")
            method = f"sha256 of the whole file at its final name, computed by the destination server, matched " \
                     f"the {what} one"
    if mtime:
        await asyncio.to_thread(control.set_mtime, final.path, mtime)
    return verified, method


def _remove_quietly(url: GridUrl, path: str) -> None:
    try:
        control = open_control(url)
    except TransferError:
        return
    if control is not None:
        try:
            control.remove(path)
        finally:
            control.close()
