#!/usr/bin/env python3
"""Check a built bundle from the outside: version, a real HTTPS copy, the GUI offscreen; record size and start.

Runs the bundled ``dist/labferry/labferry`` (not the venv): ``--version``; a ``copy`` of a
64 MiB file from a local nginx with TLS (the test fixture) into a temp folder, checked by
sha256; ``gui --quit-after 0`` under ``QT_QPA_PLATFORM=offscreen`` three times (wall time =
cold start to a shown window, plus closing). Writes the figures to docs/benchmarks.md with
``--write``. ``--smoke`` (the CI on macOS and Windows, which have no nginx): the copy comes from a
Python-started HTTPS server (tests/portable/web.py) and nothing is written.

    make bundle-test
    python installers/bundle_test.py --smoke
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import __version__  # noqa: E402
from tests.bench.report import replace_section  # noqa: E402

BUNDLE = ROOT / "dist" / "labferry"


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", metavar="MARKDOWN")
    parser.add_argument("--smoke", action="store_true", help="any OS: a Python HTTPS server, nothing written")
    args = parser.parse_args()
    exe = ".exe" if sys.platform == "win32" else ""
    program = BUNDLE / f"labferry{exe}"
    for needed in (program, BUNDLE / f"Ferry{exe}"):
        if not needed.exists():
            print(f"no {needed}; run make bundle first", file=sys.stderr)
            return 2
    work = Path(tempfile.mkdtemp(prefix="ferry-bundle-"))
    venv_bin = Path(sys.executable).parent  # nothing from the venv on PATH
    path = "/usr/bin:/bin" if sys.platform.startswith("linux") else os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != venv_bin)
    env = dict(os.environ, LABFERRY_HOME=str(work / "home"), QT_QPA_PLATFORM="offscreen", PATH=path)
    env.pop("VIRTUAL_ENV", None)
    env.pop("PYTHONPATH", None)

    version = subprocess.run([str(program), "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert version.returncode == 0 and __version__ in version.stdout, version
    print(f"version: {version.stdout.strip()}")

    if args.smoke:
        from tests.portable.web import PythonWeb

        server = PythonWeb(work / "web").start()
    else:
        from tests.servers.nginx import Nginx

        server = Nginx(work / "nginx", work / "data").start()
    try:
        data = os.urandom(64 * 1024 * 1024)
        (server.data / "sample.bin").write_bytes(data)
        dest = work / "out"
        dest.mkdir()
        copy = subprocess.run([str(program), "copy", server.url("/sample.bin"), str(dest), "--ca-file",
                               server.ca_file, "--json", "-q"], capture_output=True, text=True, env=env, timeout=300)
        assert copy.returncode == 0, copy.stderr
        assert hashlib.sha256((dest / "sample.bin").read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
        print(f"copy: {copy.stdout.strip().splitlines()[-1][:120]}…")
    finally:
        server.stop()

    report = work / "versions.json"
    made = subprocess.run([str(program), "report", "-o", str(report)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    bundled = json.loads(report.read_text())["versions"]
    for library in ("PySide6", "paramiko", "aiohttp", "libtorrent"):
        assert library in bundled, f"{library} is not in the bundle: {bundled}"
    print("libraries: " + ", ".join(f"{k} {bundled[k]}" for k in ("PySide6", "paramiko", "aiohttp", "libtorrent")))

    starts = []
    for _ in range(3):
        began = time.monotonic()
        gui = subprocess.run([str(program), "gui", "--quit-after", "0"], capture_output=True, text=True, env=env,
                             timeout=120)
        starts.append(time.monotonic() - began)
        assert gui.returncode == 0, gui.stderr
    size = folder_size(BUNDLE)
    print(f"gui start-to-quit: {', '.join(f'{s:.2f}' for s in starts)} s; bundle {size / 2**20:.0f} MiB")
    text = "\n".join([
        "## Bundle (PyInstaller, one folder)",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on this 2-core machine with `make bundle-test`: the bundled "
        "`dist/labferry/labferry` (not the venv) printed its version, copied a 64 MiB file from a local nginx with "
        "TLS (sha256 checked), wrote a report listing the bundled PySide6, paramiko, aiohttp and libtorrent, and "
        "started the GUI offscreen and closed it again, three times.",
        "",
        "| bundle size | GUI start to shown window and quit (median of 3) | first run | target |",
        "|---|---|---|---|",
        f"| {size / 2**20:.0f} MiB | {statistics.median(starts):.2f} s | {starts[0]:.2f} s | ≤ 3 s |",
        "",
    ])
    if args.write and not args.smoke:
        replace_section(args.write, "## Bundle (PyInstaller", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
