"""Every test gets its own Ferry data folder (LABFERRY_HOME), never the user's; the servers the tests start
reach pytest's folders."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def servers_reach_pytest_folders(tmp_path_factory):
    """As root, servers that drop privileges (sshd's test user, vsftpd's and gridftp's nobody) must reach the
    folders below pytest's temp folder: every folder from the temp folder down (pytest-of-root/pytest-N, and
    popen-gwN under pytest-xdist) is opened, never narrowed (a --basetemp right under /tmp keeps 1777). Done
    for the whole session at its start, so no test depends on which test opened them first."""
    if os.name != "posix" or os.geteuid() != 0:
        return
    base = tmp_path_factory.getbasetemp()
    top = Path(tempfile.gettempdir())
    for folder in [base, *base.parents[:-1]]:
        if folder == top or top not in folder.parents:
            break
        os.chmod(folder, os.stat(folder).st_mode & 0o7777 | 0o755)


@pytest.fixture(autouse=True)
def ferry_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("LABFERRY_HOME", str(home))
    return home
