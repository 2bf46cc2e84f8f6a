"""A backend package whose backend loads at its first use (PEP 562).

Each backend package keeps its backend class in ``backend.py``; the package itself only says where it is, so
that importing one of its light modules (``options.py``, to build the command line's flags) does not load the
backend and what it imports (asyncio, a control channel, a stream tuner: the parser took 41 ms, now 13 ms,
before ENA's portal is asked for a study).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def loads_on_first_use(package: str) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: a name it lacks is looked up in ``package.backend``, imported then
    (the registry's entry point ``package:SomeBackend``, a test's ``from package import ...``)."""
    def attribute(name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(f"{package}.backend"), name)

    return attribute
