"""The SSH backend, in ``backend.py``: loaded at the first use of a name from this package
(``backends/core/lazy.py``)."""

from ..core.lazy import loads_on_first_use

__getattr__ = loads_on_first_use(__name__)
