"""The real window, offscreen, driving a real engine against the real servers of tests/integration."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from tests.integration.conftest import (  # noqa: E402,F401  (fixtures shared with the integration tests)
    big_file,
    collab,
    dtn,
    nginx,
    plain_file,
    remote_big,
    secret_service,
    sshd,
)


@pytest.fixture(scope="session", autouse=True)
def real_keyring(secret_service):  # noqa: F811  (the fixture imported above)
    """The window keeps site secrets in a real Secret Service (gnome-keyring on the tests' own session bus),
    as on a Linux desktop; the keyring library is pointed at it whatever an earlier test chose."""
    import keyring
    from keyring.backends.SecretService import Keyring

    before = {k: os.environ.get(k) for k in secret_service.env}
    os.environ.update(secret_service.env)
    previous = keyring.get_keyring()
    keyring.set_keyring(Keyring())
    yield secret_service
    keyring.set_keyring(previous)
    for k, v in before.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def keyring_home(real_keyring):
    """Where the Secret Service keeps its keyrings (encrypted files)."""
    return real_keyring.root / "data" / "keyrings"


@pytest.fixture
def window(qtbot, ferry_home, tmp_path):
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    from app.ui.app import build

    _, engine, win = build([])
    win.quit_on_close = False
    win.settings["download_folder"] = str(tmp_path)
    win.show()
    yield win
    win._really_quit = True
    win.close()
    engine.close()
    # destroyed here, on this (the GUI) thread, before the next test: left to a later event loop, the
    # window's destruction once ran while a report thread's garbage collection freed Qt wrappers, and the two
    # threads deadlocked on the GIL and PySide's own lock
    win.deleteLater()
    del win
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
