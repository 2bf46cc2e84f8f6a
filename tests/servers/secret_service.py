"""A real Secret Service for the tests: gnome-keyring-daemon on a private D-Bus session bus.

The OS keyring Ferry keeps site secrets in is, on a Linux desktop, the freedesktop Secret Service that
gnome-keyring (or KWallet) provides over the session bus. Here a ``dbus-daemon --session`` of the test's own
listens on a socket in a fresh folder, and ``gnome-keyring-daemon --foreground --unlock --components=secrets``
on it creates and unlocks a ``login`` keyring under its own ``XDG_DATA_HOME``: the same daemon and protocol a
researcher's desktop runs, nothing of the machine's own. ``env`` is what a process needs to reach it.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

UNLOCK = "ferry-test-keyring"


class SecretService:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen] = []
        self.env: dict[str, str] = {}

    def start(self) -> SecretService:
        run, data = self.root / "run", self.root / "data"
        for folder in (run, data):
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o700)
        bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1",
                                f"--address=unix:path={run / 'bus'}"], stdout=subprocess.PIPE, text=True)
        self.procs.append(bus)
        address = bus.stdout.readline().strip()
        if not address:
            raise RuntimeError("dbus-daemon did not start a session bus")
        self.env = {"DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": str(run), "XDG_DATA_HOME": str(data),
                    "PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"}
        daemon = subprocess.Popen(["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, **self.env))
        self.procs.append(daemon)
        daemon.stdin.write(UNLOCK.encode())
        daemon.stdin.close()
        deadline = time.monotonic() + 15
        while not (data / "keyrings" / "login.keyring").exists() and not self._answers():
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise RuntimeError("gnome-keyring-daemon did not come up on the test's bus")
            time.sleep(0.1)
        return self

    def _answers(self) -> bool:
        """The daemon owns org.freedesktop.secrets on the bus."""
        proc = subprocess.run(["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus",
                               "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
                               "string:org.freedesktop.secrets"], capture_output=True, text=True,
                              env=dict(os.environ, **self.env), check=False)
        return "boolean true" in proc.stdout

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
