"""Every backend package has the same rooms under the same names, as rclone's backends and curl's protocol
handlers do: a newcomer who knows one knows where to look in the others.

The rooms: ``backend.py`` (the class), ``address.py`` (what names its sources and destinations), ``browse.py``
(what it lists: a server's folders, a torrent's files, an archive's members), ``download.py``, ``upload.py``
(exactly where the backend uploads), ``folder.py`` (a whole folder, and how it lands below DEST),
``options.py`` (its typed options) and ``faults.py`` (its errors as sentences). What is truly a backend's own
sits beside them (BitTorrent's ``seed.py``, the archive's ``pack.py``). The relay (``app/relay``) is not a
backend package: it is composed above them from the agent and a backend.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ("backend", "address", "browse", "download", "folder", "options", "faults")


def _backend_packages() -> list[tuple[str, type]]:
    """The backends of Ferry's own distribution that are packages of ``backends/``."""
    found = []
    for ep in entry_points(group="labferry.backends"):
        if ep.value.startswith("backends."):
            found.append((ep.value.split(".")[1].split(":")[0], ep.load()))
    return found


def test_every_backend_package_is_found():
    assert sorted(name for name, _ in _backend_packages()) == ["archive", "ftp", "gridftp", "https", "ssh", "torrent"]


@pytest.mark.parametrize("name,cls", _backend_packages(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_backend_has_the_same_rooms(name, cls):
    package = ROOT / "backends" / name
    wanted = ROOMS + (("upload",) if cls.caps.upload else ())
    missing = [room for room in wanted if not (package / f"{room}.py").is_file()]
    assert not missing, f"backends/{name}/ lacks {', '.join(f'{m}.py' for m in missing)}"
    if not cls.caps.upload:
        assert not (package / "upload.py").exists(), f"backends/{name}/upload.py, but {name} does not upload"
