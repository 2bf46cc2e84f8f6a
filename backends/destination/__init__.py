"""The one way out to disk: every byte a backend writes under DEST goes through this package.

It is the mirror of the application's one front door (``app.requests``): whatever a server sends, what lands
is inside DEST (``names``, ``place``), never through a link (``place``), never more than the server announced
(``partfile``, ``whole``), and never under its final name before it is whole and checked (a ``.part`` file
until then). ``tests/unit/test_one_way_out.py`` checks that no other module opens a file for writing.
"""

from .names import Renamed, portable_name, portable_path
from .partfile import STATE_SUFFIX, Identity, PartFile, kept_bytes, open_new, oversize, write_atomic
from .place import Destination, check_destination, no_space, os_error, refuse_link, room_for
from .tally import check_folder, unaccounted
from .whole import WholeFile, move_into_place, write_whole

__all__ = [
    "STATE_SUFFIX", "Destination", "Identity", "PartFile", "Renamed", "WholeFile", "check_destination", "check_folder",
    "kept_bytes",
    "move_into_place", "no_space", "open_new", "os_error", "oversize", "portable_name", "portable_path",
    "refuse_link", "room_for", "unaccounted", "write_atomic", "write_whole",
]
