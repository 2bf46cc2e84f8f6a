"""Transfer backends: one module or package per protocol, no Qt.

``backends.base`` defines the interface, ``backends.errors`` the errors, and the
shared helpers for splitting files (``chunks``, ``partfile``, ``hashing``,
``ratelimit``) live next to them so no backend carries its own copy.
"""
