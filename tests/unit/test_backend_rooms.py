"""Every backend that reaches a server's files has the same rooms under the same names, as rclone's backends
and curl's protocol handlers do: a newcomer who knows one knows where to look in the others.

The rooms: ``backend.py`` (the class), ``address.py`` (its addresses), ``browse.py`` (listings for the Files
tab), ``download.py``, ``upload.py`` (where the backend uploads at all), ``folder.py``, ``options.py`` (its typed
options) and ``faults.py`` (its errors as sentences). BitTorrent and the archive backend reach no server's
folders (a swarm, an archive on this disk): their rooms follow their data, and they are not held to these.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from backends.core.abilities import Lister

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("backend", "address", "browse", "download", "folder", "options", "faults")


def _server_backends() -> list[tuple[str, type]]:
    """The backends of Ferry's own distribution that list a server's folders (``Lister``)."""
    found = []
    for ep in entry_points(group="labferry.backends"):
        if not ep.value.startswith("backends."):
            continue
        cls = ep.load()
        if issubclass(cls, Lister) or hasattr(cls, "listdir"):
            found.append((ep.value.split(".")[1].split(":")[0], cls))
    return found


def test_the_server_backends_are_found():
    assert sorted(name for name, _ in _server_backends()) == ["ftp", "gridftp", "https", "ssh"]


@pytest.mark.parametrize("name,cls", _server_backends(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_server_backend_has_the_same_rooms(name, cls):
    package = ROOT / "backends" / name
    wanted = ROOMS + (("upload",) if cls.caps.upload else ())
    missing = [room for room in wanted if not (package / f"{room}.py").is_file()]
    assert not missing, f"backends/{name}/ lacks {', '.join(f'{m}.py' for m in missing)}"
    if not cls.caps.upload:
        assert not (package / "upload.py").exists(), f"backends/{name}/upload.py, but {name} does not upload"
