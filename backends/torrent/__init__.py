"""The BitTorrent backend. It is in ``backend.py``, loaded at the first use of a name from this package (the
registry's entry point, a test's import), so that a module of this package is imported without it: a command
line builds its flags from ``options.py`` without loading every backend (~25 ms of imports before ENA's portal
is asked)."""

from __future__ import annotations

import importlib


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module(f"{__name__}.backend"), name)
