"""``host.procs.reap``: a killed process whose output nobody reads any more is still waited for to the end.

asyncio's ``Process.wait`` returns only once every pipe has closed, and a pipe whose reader paused (its buffer
full: a cancelled stream's unread answers) never looks again. Cancelling an SFTP-only download at 50 ms hung
this way for ever (found by tests/bench/global_cap.py)."""

from __future__ import annotations

import asyncio

from backends.host.procs import reap


async def _paused_child() -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec("cat", "/dev/zero", stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    await proc.stdout.read(1)
    await asyncio.sleep(0.3)  # the reader's buffer fills and it pauses
    return proc


def test_a_bare_kill_and_wait_hangs_on_a_paused_pipe():
    async def run() -> bool:
        proc = await _paused_child()
        proc.kill()
        try:
            await asyncio.wait_for(proc.wait(), 2)
            return True
        except asyncio.TimeoutError:
            await reap(proc)  # tidy up
            return False

    assert asyncio.run(run()) is False  # the hazard reap exists for (if asyncio fixes it, this test says so)


def test_reap_ends_a_process_with_a_paused_pipe():
    async def run() -> int | None:
        proc = await _paused_child()
        await asyncio.wait_for(reap(proc), 10)
        return proc.returncode

    assert asyncio.run(run()) == -9
