"""How deep a folder job goes below its source, and the one sentence past it, the same on every backend.

A server whose folder links lead back into themselves (or a listing that does) would be walked for ever; a listing
identical to one above it is known for a loop, and what is left is bounded by depth. The default is deeper than
any real data tree; ``--max-depth`` raises it up to ``MAX_DEPTH_LIMIT``, the levels a saved path may have
(``destination.names.MAX_LEVELS``).
"""

from __future__ import annotations

from .errors import BadRequest

MAX_DEPTH = 32
MAX_DEPTH_LIMIT = 64


def too_deep(where: str, limit: int) -> BadRequest:
    """A tree deeper than ``limit`` folder levels below ``where`` (exit 2)."""
    more = (f"Give --max-depth N (up to {MAX_DEPTH_LIMIT}) if it really is that deep, or copy a sub-folder"
            if limit < MAX_DEPTH_LIMIT else "Copy a sub-folder instead")
    return BadRequest(f"{where} has folders more than {limit} levels deep (--max-depth {limit}); Ferry stopped "
                      f"before copying any. {more}.")


def deepest(rels) -> int:
    """The most folder levels below the source among folder paths ``rels`` (``a/b`` is 2)."""
    return max((rel.count("/") + 1 for rel in rels if rel), default=0)
