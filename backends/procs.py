"""Child processes every backend starts (ssh, scp, globus-url-copy) share these settings."""

from __future__ import annotations

import os
import signal
import sys


def _die_with_parent() -> None:
    """In the child: get SIGTERM when Ferry dies (even by SIGKILL), so no helper outlives it (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


#: keyword arguments for ``asyncio.create_subprocess_exec``/``subprocess.Popen``
CHILD = {"preexec_fn": _die_with_parent} if sys.platform.startswith("linux") else {}


def other_process_alive(pid: int | None) -> bool:
    """Whether another process with this id still runs (this process counts as not: what it finds under its
    own id was left by an earlier process that had the same id)."""
    if not pid or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    return True
