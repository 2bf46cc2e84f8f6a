"""Every test gets its own Ferry data folder (LABFERRY_HOME), never the user's."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def ferry_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("LABFERRY_HOME", str(home))
    return home
