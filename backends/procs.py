"""Child processes every backend starts (ssh, scp, globus-url-copy) share these settings."""

from __future__ import annotations

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
