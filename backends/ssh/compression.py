"""Whether a file, or a folder's small files, travel compressed (``--compress``): asked of the server, said in
the job's notes, applied to a running transfer. The frames themselves are ``squeeze.py``'s."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from pathlib import Path

from ..core.base import Arriving, Sink, TransferOptions
from ..core.errors import TransferError
from ..core.made import Made
from . import squeeze
from .session import SshSession, ssh_options

#: seconds the streams wait for the choice before they start plain
DECIDE_WAIT = 1.0


@contextlib.asynccontextmanager
async def deciding(run, choosing: Coroutine | None):
    """Runs ``choosing`` (``compress_file``) before ``run``: the choice takes a round trip and a sample (~20 ms of
    zstd), and the first ranges wait for it, as they would each go plain otherwise (a stream's first two
    leases can be most of a 1 GiB file). A server slower than ``DECIDE_WAIT`` to answer does not hold the
    streams: they start plain, and the ranges asked after the choice travel as it says."""
    if choosing is None:
        yield
        return
    task = asyncio.ensure_future(choosing)

    def chosen(done: asyncio.Future) -> None:
        if done.cancelled() or done.exception() is not None or not done.result():
            return
        run.packed = True
        # a third of the bytes need a third of the streams; each more costs a zstd process on the server and CPU
        # the compressors need (measured on 50 ms / 1e-4: auto let grow to 64 streams moved 4 GiB at 790 Mbit/s,
        # slower than the same file plain; with 16, 985)
        run.max_streams = min(run.max_streams, squeeze.MAX_STREAMS)
        if run.tuner is not None:
            run.tuner.maximum = min(run.tuner.maximum, squeeze.MAX_STREAMS)
            run.tuner.streams = min(run.tuner.streams, run.tuner.maximum)
            run.tuner.settled = run.tuner.settled or run.tuner.streams >= run.tuner.maximum

    task.add_done_callback(chosen)
    try:
        await asyncio.wait({task}, timeout=DECIDE_WAIT)
        yield
    finally:
        task.cancel()


async def compress_file(session: SshSession, options: TransferOptions, remote: str, left: int, sink: Sink | None,
                        local: Path | Made | None, arriving: Arriving | None = None) -> bool:
    """Whether this file's ranges travel as zstd frames (``squeeze.decide``).

    A download samples the file's start with the server's own zstd (its speed is what counts); an upload
    compresses its start here and asks the server only whether it has zstd to unpack with. A relay's spool
    still arriving is sampled once its start is there (before, it reads as zeros, which shrink to nothing)."""
    mode = ssh_options(options).compress
    name = local.name if local else remote.rsplit("/", 1)[-1]
    if left <= 0:
        return False  # all of it is there already
    if mode == "off" or mode == "auto" and (left < squeeze.AUTO_MIN_BYTES or squeeze.known_compressed(name)):
        return _said(squeeze.decide(mode, name, left, None, None, True), sink)
    if mode == "auto" and arriving is not None:
        head = min(squeeze.SAMPLE_BYTES, arriving.size)
        while not any(s == 0 and e >= head for s, e in arriving.ready()):
            await arriving.more(1.0)
    here = (lambda: squeeze.sample_local(local)) if local is not None else None
    return await _ask(session, options, name, left, sink, remote, here)


async def compress_tar(session: SshSession, options: TransferOptions, small: list[tuple[str, int]], sink: Sink | None,
                       remote_root: str, local_root: Path | None = None) -> bool:
    """Whether a folder's small files travel in zstd-framed tar streams.

    ``auto`` asks it only of ≥ 32 MiB of small files, most of them not of a compressed type, and samples their
    start: a download the largest one with the server's zstd, an upload the first ones here."""
    from .untar import native_tar

    mode = ssh_options(options).compress
    total = sum(size for _, size in small)
    plain = [(rel, size) for rel, size in small if not squeeze.known_compressed(rel)]
    if mode == "off" or not small or local_root is None and native_tar() is None:
        return False  # without GNU tar or bsdtar here the stream is read by tarfile, which takes it plain
    if mode == "auto" and (total < squeeze.AUTO_MIN_BYTES or sum(size for _, size in plain) < total / 2):
        return False
    label = f"The folder's {len(small)} small files"
    if local_root is not None:
        return await _ask(session, options, label, total, sink, remote_root,
                          lambda: squeeze.sample_files([local_root / rel for rel, _ in plain]))
    biggest = max(plain or small, key=lambda item: item[1])[0]
    return await _ask(session, options, label, total, sink, remote_root.rstrip("/") + "/" + biggest, None)


async def _ask(session: SshSession, options: TransferOptions, label: str, size: int, sink: Sink | None, remote: str,
               here: Callable[[], squeeze.Sample] | None) -> bool:
    """Ask the server whether it has zstd (and, for ``auto`` where the server compresses, how ``remote``'s start
    shrinks under it); ``here``: the sample this side takes instead (an upload). Then decide and say."""
    mode = ssh_options(options).compress
    sample = None
    try:
        if here is not None:
            if mode == "auto":
                sample = await asyncio.to_thread(here)
            answer = await session.zstd_sample(remote, 0)
            has_zstd, _ = squeeze.remote_sample(answer)
        else:
            answer = await session.zstd_sample(remote, squeeze.SAMPLE_BYTES if mode == "auto" else 0)
            has_zstd, sample = squeeze.remote_sample(answer)
    except (TransferError, OSError) as exc:
        if sink:
            sink.note(f"{label} went uncompressed: Ferry could not ask the server about zstd ({exc}).")
        return False
    choice = squeeze.decide(mode, label, size, sample, options.path_rate, has_zstd)
    if choice.on and squeeze.by_ferry(answer):
        choice = squeeze.Choice(True, f"{choice.why} {squeeze.BY_FERRY}")
    return _said(choice, sink)


def _said(choice: squeeze.Choice, sink: Sink | None) -> bool:
    if choice.why and sink:
        sink.note(choice.why)
    return choice.on
