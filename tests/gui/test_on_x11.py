"""The Files tab on a real X server as well as offscreen: Qt's xcb platform (the one a Linux desktop uses)
under Xvfb runs the browse, folder-action and drag tests of test_files_tab.py in a process of its own, and
x11_drag.py's drags made with the real pointer (xdotool)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_files_tab_under_xvfb():
    if shutil.which("xvfb-run") is None:
        pytest.fail("xvfb-run is not installed; run tests/system-deps.sh as root (it installs xvfb).",
                    pytrace=False)
    # its own SSH test user: the worker that runs this test keeps its user's home and sessions
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", PYTEST_XDIST_WORKER="gwx11")
    # a folder right under /tmp: the SSH test user must reach its home below it (pytest's own tmp_path sits
    # below folders only this user may enter)
    base = Path(tempfile.mkdtemp(prefix="ferry-x11-"))
    os.chmod(base, 0o755)
    proc = subprocess.run(["xvfb-run", "-a", "-s", "-screen 0 1400x900x24", sys.executable, "-m", "pytest", "-q",
                           "-p", "no:cacheprovider", "--basetemp", str(base / "run"),
                           "tests/gui/test_files_tab.py", "tests/gui/x11_drag.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    shutil.rmtree(base, ignore_errors=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    wanted = sum(f.read_text().count("\ndef test_") for f in (ROOT / "tests/gui/test_files_tab.py",
                                                                ROOT / "tests/gui/x11_drag.py"))
    assert f"{wanted} passed" in proc.stdout and "failed" not in proc.stdout, proc.stdout[-2000:]  # none skipped
