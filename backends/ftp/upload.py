"""Uploads to an FTP server: a file goes to ``NAME.part`` there and is renamed (``RNFR``/``RNTO``) only once
complete and checked, so nobody on the server ever reads half a file under its real name.

Resume: an upload cut short leaves ``NAME.part`` and a record here of the local file it came from (size and
modification time); the same upload again continues the part (``REST`` + ``STOR``, or ``APPE`` where the
server announced no ``REST STREAM``) only while that record still holds, else it starts over. The part's size
on the server is compared with the local file at the end, and its checksum when the server offers one
(``HASH``, ``XSHA256``, ``XMD5``). Folders: the sub-folders are made (``MKD``), the files sent
``UPLOAD_AT_ONCE`` at a time over a pool of logged-in connections.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path

import aioftp

from ..core.base import NOT_COMPARED, Result, Sink, TransferRequest
from ..core.claims import new_token, replaced
from ..core.errors import Corrupt, LocalError, TransferError
from ..core.made import Made, described, open_local, whole_digest
from ..core.words import counted, human_size
from ..streams.folder import FileSink, Totals
from ..streams.hashing import manifest_digest
from ..streams.holds import Held
from ..streams.ratelimit import limiter_for
from .address import FtpAddress
from .claim import claim, release
from .control import Entry, FtpControl
from .download import server_checksum
from .faults import ftp_error
from .folder import Pool

BLOCK = 1 << 20
#: files of a folder sent at once. Each costs about ten round trips (its lock, its data connection, the checks
#: before and after the rename), so a run folder's small files wait on the path's delay, not its rate: lftp's
#: mirror sends 16. A server that refuses more logins (421, vsftpd's ``max_per_ip``) keeps the pool at what it took.
UPLOAD_AT_ONCE = 8


class UploadRecord(Held):
    """Which local file a ``NAME.part`` on the server came from (resume is trusted only while it matches), and this
    installation's owner token for the upload (``claim``), kept while the upload lives."""

    def __init__(self, folder: Path, key: str) -> None:
        self.path = folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")
        try:
            saved = json.loads(self.path.read_text())
        except (OSError, ValueError):
            saved = {}
        self.saved = saved if isinstance(saved, dict) else {}
        self.token = self.saved.get("token") or new_token()

    def matches(self, local: Path | Made) -> bool:
        try:
            return self.saved.get("local") == _identity(local)
        except OSError:
            return False

    def save(self, local: Path | Made) -> None:
        self.saved = {"local": _identity(local), "token": self.token}
        self.path.write_text(json.dumps(self.saved))

    def drop(self) -> None:
        self.path.unlink(missing_ok=True)
        self.let_go()


def _identity(local: Path | Made) -> dict:
    """What the part on the server was made from: a file's path, size and time, or a made file's key (an
    archive's plan: the same sources unchanged make the same bytes)."""
    if isinstance(local, Made):
        return {"made": local.key, "size": local.size}
    st = local.stat()
    return {"path": str(local), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def part_of(path: str) -> str:
    return path + ".part"


async def target_path(control: FtpControl, address: FtpAddress, local: Path | Made) -> tuple[str, bool]:
    """Where ``local`` goes: into the folder DEST names (``…/`` or an existing folder), else DEST itself;
    and whether something is there already."""
    there = None if address.folder else await entry_or_none(control, address.path)
    if address.folder or (there is not None and there.kind == "dir"):
        path = address.child(local.name).path
        return path, await entry_or_none(control, path) is not None
    return address.path, there is not None


async def entry_or_none(control: FtpControl, path: str) -> Entry | None:
    """What is at ``path`` on the server, or None when nothing is (other failures are raised)."""
    try:
        return await control.entry(path)
    except TransferError as exc:
        if exc.kind == "not-found":
            return None
        raise


async def send_file(control: FtpControl, address: FtpAddress, local: Path | Made, remote: str,
                    record: UploadRecord, sink: Sink, limiter, *, note=None) -> tuple[str, bool, str, int, int]:
    """``local`` (a file, or one made on demand: ``--pack``) → ``remote`` via ``remote.part``; (sha256,
    verified, how, bytes sent, resumed from)."""
    size = described(local)[0]
    record.hold(remote, address.where)
    try:
        mine = await claim(control, remote, record.token)
        resumable = record.matches(local)
        record.save(local)  # the token kept before the first byte: a crash resumes as the owner
        result = await _send(control, address, local, remote, record, sink, limiter, note, size, resumable)
    except BaseException:
        record.let_go()
        raise
    await release(control, remote, mine)
    record.drop()
    return result


async def _send(control: FtpControl, address: FtpAddress, local: Path | Made, remote: str, record: UploadRecord,
                sink: Sink, limiter, note, size: int, resumable: bool) -> tuple[str, bool, str, int, int]:
    part = part_of(remote)
    offset = 0
    if resumable:
        there = await _size(control, part)
        if there and there <= size:
            offset = there
            if note:
                note(f"Resuming the upload: {human_size(offset)} of {human_size(size)} was already on the server.")
    digest = hashlib.sha256()
    sent = 0
    try:
        with open_local(local) as source:
            at = 0
            while at < offset and (block := await source.read_at(min(BLOCK, offset - at), at)):
                digest.update(block)  # the bytes the part already holds, hashed here without sending them
                at += len(block)
            if offset:
                opened = (control.client.upload_stream(part, offset=offset) if control.can_resume
                          else control.client.append_stream(part))
            else:
                opened = control.client.upload_stream(part)
            async with opened as stream:
                while block := await source.read_at(BLOCK, offset + sent):
                    await stream.write(block)
                    digest.update(block)
                    sent += len(block)
                    sink.progress(offset + sent, size, 1)
                    if limiter:
                        await limiter.consume(len(block))
    except OSError as exc:
        if isinstance(exc, (ConnectionError, TimeoutError)):
            raise ftp_error(exc, address, step="write", path=part, started=True) from exc
        raise LocalError(f"Could not read {local} ({exc.strerror or exc}).") from None
    except (TransferError, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise ftp_error(exc, address, step="write", path=part, started=sent > 0) from exc
    there = await _size(control, part)
    if there is not None and there != size:
        record.drop()
        raise Corrupt(f"The server holds {there} bytes of {remote} but {local} has {size}. Run the upload again.")
    try:
        await control.in_one_trip([f"RNFR {part}", f"RNTO {remote}"], ["350", "2xx"])
    except Exception as exc:
        raise ftp_error(exc, address, step="write", path=remote) from exc
    verified, how = await final_check(control, address, local, remote, digest.hexdigest(), size)
    return digest.hexdigest(), verified, how, sent, offset


async def final_check(control: FtpControl, address: FtpAddress, local: Path | Made, remote: str, sha256: str,
                      size: int) -> tuple[bool, str]:
    """The word "verified": the whole file at its final name, after the rename, by the server's own checksum
    command; without one, its size there, and the word is not said. What is there and is not what this upload
    wrote is ``Corrupt`` (exit 6): a second writer, or a program that replaced it after the rename."""
    there = await _size(control, remote)
    if there is not None and there != size:
        raise replaced(remote, address.where, f"{there} bytes there, {size} sent")
    theirs = await server_checksum(control, remote)
    if theirs is None:
        return False, ("size at its final name checked on the server; it offers no checksum command"
                       if there is not None else "the server tells neither sizes nor checksums; the upload ended "
                       "without an error")
    ours = sha256 if theirs.algorithm == "sha256" else await asyncio.to_thread(whole_digest, local, "md5")
    if ours != theirs.hexdigest:
        raise replaced(remote, address.where, f"its {theirs.algorithm} from {theirs.source} differs")
    return True, f"{theirs.algorithm} of the whole file at its final name, from {theirs.source}, matched"


async def _size(control: FtpControl, path: str) -> int | None:
    return await control.size_of(path)


async def upload(request: TransferRequest, sink: Sink, connect, lead: FtpControl) -> Result:
    began = time.monotonic()
    address = FtpAddress.parse(request.dest)
    local = request.made or Path(request.source)  # ``--pack``: the folder as an archive made on demand
    options = request.options
    records = request.state_folder("ftp-uploads")
    remote, exists = await target_path(lead, address, local)
    limiter = limiter_for(options)
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        sink.note(text)

    sink.stage("transferring")
    if request.made is None and local.is_dir():
        return await _folder(request, sink, connect, lead, address, remote, began)
    if exists and not options.overwrite:
        raise LocalError(f"{remote} already exists on {address.where}. Pass --overwrite to replace it.")
    record = UploadRecord(records, f"{address.where}|{address.user}|{remote}")
    sha256, verified, how, sent, resumed = await send_file(lead, address, local, remote, record, sink, limiter,
                                                           note=note)
    return Result(bytes=described(local)[0], seconds=time.monotonic() - began, streams=1, sha256=sha256,
                  verified=verified, verify_method=how if options.verify else NOT_COMPARED, peer_host=address.host,
                  bytes_fetched=sent, resumed_from=resumed, notes=notes)


async def _folders_made(lead: FtpControl, address: FtpAddress, paths: list[str]) -> dict[str, int | None]:
    """Every folder of the upload there (made with ``MKD`` when missing), and what files those that were there
    already hold ({path: size}): one listing per folder, where asking for each file would cost a round trip."""
    there: dict[str, int | None] = {}
    for path in paths:
        try:
            await lead.client.command(f"MKD {path}", "257")  # raw: aioftp's make_directory asks first (5 trips)
            continue  # made now: nothing in it yet
        except aioftp.StatusCodeError as exc:
            found = await entry_or_none(lead, path)
            if found is None or found.kind != "dir":
                raise ftp_error(exc, address, step="write", path=path) from exc
        base = path.rstrip("/")
        there.update({f"{base}/{e.name}" if base else e.name: e.size
                      for e in await lead.listing(path) if e.kind != "dir"})
    return there


async def _folder(request: TransferRequest, sink: Sink, connect, lead: FtpControl, address: FtpAddress,
                  remote: str, began: float) -> Result:
    local = Path(request.source)
    options = request.options
    files = sorted(p for p in local.rglob("*") if p.is_file())
    folders = sorted({p.parent for p in files} | {p for p in local.rglob("*") if p.is_dir()} | {local})
    top = replace(address, path=remote, folder=True)
    there = await _folders_made(lead, address, [top.child(rel).path if rel != "." else remote
                                                for rel in (f.relative_to(local).as_posix() for f in folders)])
    totals = Totals(sum(p.stat().st_size for p in files))
    limiter = limiter_for(options)
    pool = Pool(connect, UPLOAD_AT_ONCE)
    records = request.state_folder("ftp-uploads")
    done: dict[str, tuple[str, bool, str, int]] = {}
    skipped = 0

    async def one(path: Path) -> None:
        nonlocal skipped
        rel = path.relative_to(local).as_posix()
        target = top.child(rel).path
        control = await pool.take()
        try:
            if target in there and not options.overwrite:
                if options.sync and there[target] == path.stat().st_size:
                    skipped += 1
                    totals.done += there[target]
                    await pool.give_back(control)
                    return
                raise LocalError(f"{target} already exists on {address.where}. Use --sync to skip files that "
                                 "are already there, or --overwrite to replace them.")
            record = UploadRecord(records, f"{address.where}|{address.user}|{target}")
            sha, verified, how, sent, _ = await send_file(control, address, path, target, record,
                                                          FileSink(totals, rel, sink, 0), limiter)
        except BaseException:
            await pool.give_back(None)
            control.abandon()
            raise
        await pool.give_back(control)
        done[rel] = (sha, verified, how, sent)
        totals.live.pop(rel, None)
        totals.done += path.stat().st_size
        totals.report(sink)

    try:
        await asyncio.gather(*(one(p) for p in files))
    finally:
        await pool.close()
    hows = sorted({how for _, _, how, _ in done.values()}) or ["nothing needed sending"]
    were = "was" if skipped == 1 else "were"
    notes = [f"Sync: {counted(skipped, 'file')} {were} already on the server with the same size; skipped."] \
        if skipped else []
    for text in notes:
        sink.note(text)
    how = f"{counted(len(files), 'file')}, {pool.size} at a time; " + "; ".join(hows) if options.verify \
        else NOT_COMPARED
    return Result(bytes=totals.total, seconds=time.monotonic() - began, streams=min(pool.size, len(files)) or 1,
                  sha256=manifest_digest({rel: v[0] for rel, v in done.items()}),
                  verified=bool(done) and all(v[1] for v in done.values()), verify_method=how,
                  peer_host=address.host, bytes_fetched=sum(v[3] for v in done.values()), notes=notes)
