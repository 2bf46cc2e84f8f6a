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


@pytest.fixture(autouse=True)
def modal_dialogs_end(qapp, request):
    """A modal dialog nobody answered is closed before the test's timeout, so it fails instead of hanging the
    run (``windowing.modal_watchdog``)."""
    from tests.portable.windowing import modal_watchdog, watchdog_limit

    with modal_watchdog(watchdog_limit(request.config)):
        yield


@pytest.fixture(autouse=True)
def real_keyring(secret_service):  # noqa: F811  (the fixture imported above)
    """The window keeps site secrets in a real Secret Service (gnome-keyring on the tests' own session bus),
    as on a Linux desktop; the keyring library is pointed at it whatever an earlier test chose. For each test,
    not the session: under pytest-xdist a worker runs integration modules after window tests, and a secret a
    window test saved for a site (its password for "collab") reached their Ferry processes through the
    environment and turned a key login into a password one."""
    import keyring
    from keyring.backends.SecretService import Keyring

    previous = keyring.get_keyring()  # chosen before the test bus is in the environment, not with it
    before = {k: os.environ.get(k) for k in secret_service.env}
    os.environ.update(secret_service.env)
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
    """The real window (tests/portable/windowing.py), downloading into the test's folder."""
    from tests.portable.windowing import open_window

    with open_window(tmp_path) as win:
        yield win
