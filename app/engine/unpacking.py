"""``copy URL/NAME.tar DEST/ --unpack``: the engine's side of unpacking an archive while it arrives.

The download runs as any other (retries, pauses, resume by range); ``backends.archive.follow`` unpacks beside
it. Once the download has checked the archive as a whole, every member is checked against the archive's index
and named, and the job's result says both checks and where the members went.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from backends.archive.follow import Follower
from backends.core.base import Result
from backends.core.words import human_size


async def unpacking(attempts, archive: str, sink) -> Result:
    """``attempts()``: the download's run to ``archive`` (the engine's retry loop)."""
    follower = Follower(Path(archive))
    follower.start()
    try:
        result = await attempts()
    except BaseException:
        await asyncio.to_thread(follower.stop)
        raise
    sink.stage("verifying")
    try:
        unpacked = await asyncio.to_thread(follower.complete)
    except asyncio.CancelledError:
        follower.halt.set()  # the pass ends at its next read and removes what it made
        raise
    where = Path(archive).parent / unpacked.top if unpacked.top else Path(archive).parent
    said = (f"Unpacked {unpacked.restored:,} members ({human_size(unpacked.bytes)}) into {where} as the archive "
            f"arrived; the archive itself was removed.")
    if unpacked.indexed:
        method = (f"every member's SHA-256 matched the archive's index; the archive: {result.verify_method}")
    else:
        method = f"members' sizes checked (the archive has no index); the archive: {result.verify_method}"
    return replace(result, dest=str(where), verify_method=method,
                   verified=result.verified or unpacked.indexed, notes=[*result.notes, said, *unpacked.notes])
