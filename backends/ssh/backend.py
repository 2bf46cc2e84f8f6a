"""SSH: ``sftp://`` and ``scp://``, downloads and uploads, files and folders.

Metadata and checksums go over a paramiko control connection (SFTP needs no shell, so
file names never meet one); bulk data goes over parallel OpenSSH connections running
fixed ``dd`` scripts at offsets; folders of small files go as one ``tar`` stream. See
docs/backends/ssh.md for the measurements behind that split.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.base import (
    ASK_TRUST,
    COMPRESSED_NOTE,
    Availability,
    Capabilities,
    ProbeResult,
    RemoteInfo,
    Result,
    Sink,
    TransferOptions,
    TransferRequest,
)
from ..core.browsing import BrowsesFolders
from ..core.errors import BadRequest, LocalError, NotFound, TransferError
from ..core.made import packed_name
from ..core.registry import scheme_of
from ..destination import PartFile, check_destination
from ..host.netprobe import begin_handshake
from ..streams.arriving import arrivals_of
from .address import SCHEMES, parse_target, remote_join
from .options import SshOptions

if TYPE_CHECKING:
    from .session import SshSession


# The working modules (.files, .session, .tree: paramiko and the rest) are imported inside the
# methods that use them, so a CLI run for another protocol does not pay for them.


def _is_remote(location: str) -> bool:
    return scheme_of(location) in SCHEMES


def check_identity(identity: str) -> None:
    """A key file given with --identity (or a site's key) that cannot be a private key is bad input at once,
    not a login that fails five times as if the network did."""
    path = Path(identity).expanduser()
    if not path.is_file():
        raise BadRequest(f"The key file {path} does not exist. Give the private key you log in with "
                         "(for example ~/.ssh/id_ed25519).")
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        raise BadRequest(f"Ferry cannot read the key file {path} ({exc.strerror}). Check its permissions.") from None
    if path.suffix == ".pub" or head.startswith((b"ssh-", b"ecdsa-", b"sk-")):
        raise BadRequest(f"{path} is a public key. Give the private key instead: the same name without .pub "
                         f"({path.with_suffix('') if path.suffix == '.pub' else 'the file beside it'}).")


class SshBackend(BrowsesFolders):
    name = "ssh"
    schemes = SCHEMES
    caps = Capabilities(streams=True, resume=True, download=True, upload=True, folders=True, checksums=("sha256",),
                        made=True)
    options_type = SshOptions

    def available(self) -> Availability:
        if not shutil.which("ssh"):
            return Availability(True, "The OpenSSH client (ssh) is missing: sftp:// works, but slower and "
                                      "scp:// does not. Install openssh-client.")
        return Availability(True)

    def check(self, request: TransferRequest) -> None:
        remote, local = (request.source, request.dest) if _is_remote(request.source) else (request.dest, request.source)
        if not _is_remote(remote):
            raise BadRequest("One side of an SSH transfer must be an sftp:// or scp:// address.")
        if _is_remote(local):
            raise BadRequest("Copying between two SSH servers directly is not supported yet; copy to here first.")
        from .session import ssh_options

        options = ssh_options(request.options)
        if options.identity:
            check_identity(options.identity)
        target = parse_target(remote, options)
        if request.options.streams == "auto":
            begin_handshake(target.host, target.port)  # its round trip decides how many logins start at once
        path = Path(local)
        if _is_remote(request.source):
            if not path.parent.is_dir():
                raise LocalError(f"The destination folder {path.parent} does not exist. Create it first.")
        elif not path.exists():
            raise LocalError(f"{path} does not exist. Check the path of the file or folder to send.")

    def discard(self, request: TransferRequest) -> None:
        """A cancelled download loses its ``.part`` here; a cancelled file upload its ``.part`` on the server
        (and its resume record), which the user guide promises ("Cancel removes partial data")."""
        if _is_remote(request.source):
            PartFile(request.dest).discard()
            return
        local = Path(request.source)
        if request.options.pack:
            local = Path(packed_name(request.source))  # the archive's part goes, as a file upload's does
        elif local.is_dir():
            return  # a folder's files arrive whole under their names: what arrived stays, as with scp -r
        from .control import Control
        from .session import ssh_options

        target = parse_target(request.dest, ssh_options(request.options))
        try:
            with Control(target, ssh_options(request.options)).connect() as control:
                remote = control.absolute(target.path)
                there = control.stat(remote)
                if request.dest.endswith("/") or (there is not None and there.is_dir):
                    remote = remote_join(remote, local.name)
                record = _record_of(request, f"{target.display}|{remote}")
                from ..core.claims import ours_to_remove
                from .claim import owner_of, release

                if not ours_to_remove(owner_of(control, remote), _token_in(record)):
                    return  # another upload's part and lock: not this job's to remove
                control.remove(remote + ".part")
                release(control, remote)
        except TransferError:
            return  # the server cannot be reached now: nothing to remove from here; a later upload replaces it
        if record is not None:
            record.unlink(missing_ok=True)

    async def stat(self, url: str, options: TransferOptions) -> RemoteInfo:
        from .session import SshSession

        session = await SshSession.open(url, options, ASK_TRUST.get())  # the window's question, where there is one
        try:
            path = await asyncio.to_thread(session.control.absolute, session.target.path)
            entry = await asyncio.to_thread(session.control.stat, path)
        finally:
            await session.close()
        if entry is None:
            raise NotFound(f"There is no {path} on {session.target.host}.")
        return RemoteInfo(url, entry.size, None, str(entry.mtime), True, entry.is_dir)

    async def _browse(self, url: str, options: TransferOptions, action: str, *args):
        """``browse.<action>(control, absolute path, *args)`` in a thread, on a paramiko login of its own: a pane
        needs neither the OpenSSH streams nor the round-trip probe a transfer starts with."""
        from . import browse
        from .control import Control
        from .session import ssh_options

        settings = ssh_options(options)
        target = parse_target(url, settings)
        work = getattr(browse, action)
        ask = ASK_TRUST.get()  # read here, on the loop: the window's question, where there is one

        def run():
            with Control(target, settings, ask).connect() as control:
                return work(control, control.absolute(target.path), *args)

        return await asyncio.to_thread(run)

    async def transfer(self, request: TransferRequest, sink: Sink) -> Result:
        self.check(request)
        began = time.monotonic()
        download = _is_remote(request.source)
        url = request.source if download else request.dest
        from .session import SshSession

        session = await SshSession.open(url, request.options, request.ask_trust, lead=download)
        notes: list[str] = []
        if session.control is not None and session.control.accepted_key:
            notes.append(f"Trusted the new host key of {session.target.host}: {session.control.accepted_key}.")
            sink.note(notes[-1])
        try:
            outcome = await (self._download(session, request, sink) if download
                             else self._upload(session, request, sink))
        finally:
            await session.close()
        seconds = time.monotonic() - began
        if outcome.on_wire:
            notes.append(wire_note(outcome.moved, outcome.on_wire, seconds))
            sink.note(notes[-1])
        return Result(
            bytes=outcome.bytes, seconds=seconds, streams=outcome.streams, sha256=outcome.sha256,
            verified=outcome.verified, verify_method=outcome.verify_method, peer_host=session.target.host,
            rtt_ms=session.rtt_s * 1000 if session.rtt_s else None, bytes_fetched=outcome.moved,
            resumed_from=outcome.resumed_from, notes=notes, bytes_on_wire=outcome.on_wire,
        )

    async def _download(self, session: SshSession, request: TransferRequest, sink: Sink):
        entry = session.entry
        if entry is not None:
            remote = entry.rel
        else:
            control = await session.ensure_control()
            remote = await asyncio.to_thread(control.absolute, session.target.path)
            entry = await asyncio.to_thread(control.stat, remote)
        if entry is None:
            raise NotFound(f"There is no file or folder {remote} on {session.target.host}. Check the path.")
        dest = Path(request.dest)
        if entry.is_dir:
            from .folder import download_tree

            return await download_tree(session, remote, dest, request.options, sink)
        check_destination(dest, request.options.overwrite)
        from .download import download_file

        return await download_file(session, entry, remote, dest, request.options, sink, _source_id(request),
                                   arrivals_of(request))

    async def _upload(self, session: SshSession, request: TransferRequest, sink: Sink):
        control = session.control
        local = request.made or Path(request.source)  # ``--pack``: the folder as an archive made on demand
        remote = await asyncio.to_thread(control.absolute, session.target.path)
        existing = await asyncio.to_thread(control.stat, remote)
        if request.dest.endswith("/") or (existing is not None and existing.is_dir):
            remote = remote_join(remote, local.name)
            existing = await asyncio.to_thread(control.stat, remote)
        if request.made is None and local.is_dir():
            from .folder_upload import upload_tree

            there = existing if existing is not None and existing.is_dir else None
            records = request.state_folder("uploads")
            return await upload_tree(session, local, remote, request.options, sink, records, there)
        if existing is not None and not request.options.overwrite and request.options.sync is None:
            raise LocalError(f"{remote} already exists on {session.target.host}. Pass --overwrite to replace it.")
        parent = remote.rsplit("/", 1)[0] or "/"
        if await asyncio.to_thread(control.stat, parent) is None:
            raise NotFound(f"The folder {parent} does not exist on {session.target.host}. Create it first.")
        from .upload import upload_file

        return await upload_file(session, local, remote, request.options, sink, request.state_folder("uploads"),
                                 arrivals_of(request), request.on_ranges)

    def forwards_arriving(self) -> bool:
        """Uploads from a relay's spool and downloads of one follow its arrivals (``ParallelTransfer``'s gate);
        the paramiko fallbacks wait for the whole file."""
        return True

    async def probe(self, url: str, streams: int, seconds: float, options: TransferOptions) -> ProbeResult:
        """``streams`` OpenSSH connections reading the file (or zeros) for ``seconds`` (one sweep step)."""
        return (await self.sweep(url, [streams], seconds, options))[0]

    async def sweep(self, url: str, counts: list[int], seconds: float, options: TransferOptions,
                    on_level=None) -> list[ProbeResult]:
        """The preflight's sweep from the most streams down, over OpenSSH (``probe.py``)."""
        from .probe import sweep

        return await sweep(url, counts, seconds, options, on_level)


def wire_note(delivered: int, on_wire: int, seconds: float) -> str:
    """Both rates of a compressed transfer, for its notes and history."""
    from ..core.words import human_size

    def rate(n: int) -> str:
        return f"{n * 8 / seconds / 1e6:,.0f} Mbit/s" if seconds > 0 else "?"

    return (f"{COMPRESSED_NOTE} {human_size(on_wire)} crossed it for {human_size(delivered)} delivered "
            f"({delivered / max(1, on_wire):.1f}×); delivered {rate(delivered)}, wire {rate(on_wire)}.")


def _source_id(request: TransferRequest) -> str:
    from ..core.urls import redact

    return redact(request.source)


def _record_of(request: TransferRequest, key: str) -> Path | None:
    """The upload's resume record here (it holds the owner token), None without a state folder."""
    if not request.state_dir:
        return None
    from .upload import UploadRecord

    return UploadRecord(request.state_folder("uploads"), key).path


def _token_in(record: Path | None) -> str | None:
    import json

    try:
        return json.loads(record.read_text()).get("token") if record else None
    except (OSError, ValueError, AttributeError):
        return None
