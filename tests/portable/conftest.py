"""The tests that need no Linux server, run by the CI on Linux, macOS and Windows: the modules import on the OS
at hand, an HTTPS download from a Python-started server, and the window offscreen."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def modal_dialogs_end(request):
    """A modal dialog nobody answered in a window test is closed before the test's timeout, so it fails instead
    of hanging the run (``windowing.modal_watchdog``)."""
    if "qtbot" not in request.fixturenames:
        yield
        return
    from .windowing import modal_watchdog, watchdog_limit

    request.getfixturevalue("qapp")
    with modal_watchdog(watchdog_limit(request.config)):
        yield


@pytest.fixture(scope="session")
def python_web(tmp_path_factory):
    from .web import PythonWeb

    server = PythonWeb(tmp_path_factory.mktemp("python-web")).start()
    yield server
    server.stop()


@pytest.fixture
def window(qtbot, ferry_home, tmp_path):
    """The real window (tests/portable/windowing.py), downloading into the test's folder."""
    from tests.portable.windowing import open_window

    with open_window(tmp_path) as win:
        yield win
