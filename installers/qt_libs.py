#!/usr/bin/env python3
"""The system libraries Qt's X11 plugin needs, checked before the window starts (``make run``).

Without them Qt aborts (exit 134) with a message that names ``xcb-cursor0`` whatever is really missing. So
before the window starts, ``ldd`` reads the plugin Ferry's PySide6 ships (``libqxcb.so``, which pulls in
``libQt6XcbQpa``) and lists each library it cannot find. As root on Debian or Ubuntu the missing packages are
installed; otherwise one sentence names them and the command that installs them. macOS and Windows need
nothing: their Qt plugins use the system's own frameworks.

    python installers/qt_libs.py            # check; install as root
    python installers/qt_libs.py --check    # check only: exit 1 when something is missing
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: the Debian/Ubuntu package of each library the xcb plugin links to
PACKAGES = {
    "libxcb-cursor.so.0": "libxcb-cursor0", "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1", "libxcb-image.so.0": "libxcb-image0",
    "libxcb-randr.so.0": "libxcb-randr0", "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0", "libxcb-shape.so.0": "libxcb-shape0", "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1", "libxcb-util.so.1": "libxcb-util1", "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xkb.so.1": "libxcb-xkb1", "libxcb-xinerama.so.0": "libxcb-xinerama0", "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1", "libX11.so.6": "libx11-6", "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0", "libEGL.so.1": "libegl1", "libGL.so.1": "libgl1",
    "libOpenGL.so.0": "libopengl0", "libfontconfig.so.1": "libfontconfig1", "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3", "libglib-2.0.so.0": "libglib2.0-0",
}


def plugin() -> Path | None:
    """The xcb platform plugin of the PySide6 this Python imports, if any."""
    try:
        import PySide6
    except ImportError:
        return None
    found = Path(PySide6.__file__).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return found if found.exists() else None


def not_found(ldd_output: str) -> list[str]:
    """The libraries ``ldd`` could not find (``libfoo.so.1 => not found``), in its order, once each."""
    missing: list[str] = []
    for line in ldd_output.splitlines():
        name, _, where = line.strip().partition("=>")
        if where.strip() == "not found" and name.strip() not in missing:
            missing.append(name.strip())
    return missing


def packages_for(libraries: list[str]) -> tuple[list[str], list[str]]:
    """(the packages that hold ``libraries``, the libraries no package here is known for)."""
    known = [PACKAGES[lib] for lib in libraries if lib in PACKAGES]
    return sorted(set(known)), [lib for lib in libraries if lib not in PACKAGES]


def missing_now(found: Path) -> list[str]:
    answer = subprocess.run(["ldd", str(found)], capture_output=True, text=True, check=False)
    return not_found(answer.stdout)


def main(argv: list[str]) -> int:
    if not sys.platform.startswith("linux") or shutil.which("ldd") is None:
        return 0
    found = plugin()
    if found is None:
        return 0  # no xcb plugin in this PySide6 (a wheel without it, or another platform): nothing to check
    missing = missing_now(found)
    if not missing:
        return 0
    packages, unknown = packages_for(missing)
    can_install = os.geteuid() == 0 and shutil.which("apt-get") and "--check" not in argv
    if can_install and packages:
        print(f"Ferry's window needs {', '.join(packages)}: installing.", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *packages], check=False, env=env,
                       stdout=subprocess.DEVNULL)
        missing = missing_now(found)
        if not missing:
            return 0
        packages, unknown = packages_for(missing)
    what = ", ".join(missing)
    how = f" Install them with: sudo apt-get install {' '.join(packages)}" if packages else ""
    other = f" (no package is known here for {', '.join(unknown)}: ask your system's package manager)" \
        if unknown else ""
    print(f"Ferry's window cannot start: Qt's X11 plugin needs system libraries that are missing: {what}.{how}"
          f"{other}.", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
