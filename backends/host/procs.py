"""Child processes every backend starts (ssh, scp, tar, globus-url-copy) share these settings.

Every helper gets SIGTERM when Ferry dies, even by SIGKILL, so none outlives it (Linux's
``PR_SET_PDEATHSIG``). util-linux's ``setpriv --pdeathsig TERM`` sets it and then execs the
helper, so Python can start it with a plain vfork and exec; a ``preexec_fn`` that sets it makes
Python fork the whole interpreter instead: 3.3-4.3 ms a spawn on the event loop against ~1 ms
(measured with 20 spawns), and an SSH transfer starts ~20 helpers before its data flows. Without
``setpriv`` (older util-linux, or not Linux) the ``preexec_fn`` stays.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from functools import lru_cache

from . import portable

_LINUX = sys.platform.startswith("linux")


def _die_with_parent() -> None:
    """In the child: get SIGTERM when Ferry dies (even by SIGKILL), so no helper outlives it (Linux)."""
    die_with_parent(signal.SIGTERM)


def die_with_parent(sig: int) -> None:
    """This process gets ``sig`` when the one that started it ends, however it ends (Linux; elsewhere nothing):
    an MPI rank whose ``mpirun`` is gone must not spin on in its collective for ever."""
    if not _LINUX:
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, sig)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@lru_cache(maxsize=1)
def _setpriv() -> str | None:
    """util-linux's setpriv, if it has ``--pdeathsig`` (2.33 and later); asked once."""
    path = shutil.which("setpriv") if _LINUX else None
    if path is None:
        return None
    try:
        ok = subprocess.run([path, "--pdeathsig", "TERM", "--", "true"], capture_output=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return path if ok else None


def child_argv(argv: list[str]) -> list[str]:
    """How to start ``argv`` as a helper that dies with Ferry: behind ``setpriv --pdeathsig`` when there is one
    (pass ``child_kwargs()`` too)."""
    setpriv = _setpriv()
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else list(argv)


def child_kwargs() -> dict:
    """Keyword arguments for ``asyncio.create_subprocess_exec``/``subprocess.Popen`` that go with ``child_argv``."""
    return {"preexec_fn": _die_with_parent} if _LINUX and _setpriv() is None else {}


def other_process_alive(pid: int | None) -> bool:
    """Whether another process with this id still runs (this process counts as not: what it finds under its
    own id was left by an earlier process that had the same id)."""
    if not pid or pid == os.getpid():
        return False
    return portable.process_alive(pid) and not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has ended but was not reaped yet (Linux's /proc; elsewhere: not known, so not one). A
    killed agent, re-parented to an init that does not reap, stays one, and its jobs must not seem held."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2:][:1] == b"Z"


async def reap(proc) -> bytes:
    """Kill an asyncio subprocess (if it still runs) and wait until it has ended *and* its pipes have closed;
    returns what was left on its stderr (the last 64 KiB), which may say why it failed.

    ``Process.wait`` returns only once every pipe reported its end, and a pipe whose reader was paused (its
    buffer full of output nobody reads any more: a cancelled stream's answers) never looks again, so a bare
    ``kill(); await wait()`` can wait forever. Whatever is left on stdout is read and dropped here."""
    import asyncio

    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass

    async def drain(stream) -> bytes:
        kept = b""
        if stream is not None:
            try:
                while data := await stream.read(1 << 16):
                    kept = (kept + data)[-(1 << 16):]
            except (OSError, RuntimeError, ValueError):
                pass  # closed, or read elsewhere: nothing of ours to drop
        return kept

    _, err = await asyncio.gather(drain(proc.stdout), drain(proc.stderr))
    await proc.wait()
    return err
