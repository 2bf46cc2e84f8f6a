"""A host's Ferry for tests and benchmarks that play a DTN: the command that starts this Ferry with the DTN's
own data folder, as ``--agent-command`` takes it (on a real DTN, ``labferry`` on its PATH)."""

from __future__ import annotations

import sys
from pathlib import Path


def ferry_command(path: Path, home: Path) -> Path:
    """Write ``path``: a script that runs this Ferry with ``LABFERRY_HOME=home``; returns it."""
    home.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nLABFERRY_HOME={home} exec {sys.executable} -m app \"$@\"\n")
    path.chmod(0o755)
    return path
