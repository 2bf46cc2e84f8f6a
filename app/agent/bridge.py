"""``labferry agent --stdio``: what ``ssh HOST labferry agent --stdio`` runs on the DTN. It joins its stdin and
stdout to the agent's socket, starting the agent first when none answers, so the desktop needs no port and no
password of its own: the SSH login it already has is the only way in."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.paths import data_dir, private_file

from .protocol import socket_path, unsafe_socket

START_SECONDS = 20.0


def agent_argv(*args: str) -> list[str]:
    """This Ferry again, as a bundle (its own executable) or as a Python module."""
    if getattr(sys, "frozen", False):
        return [sys.executable, "agent", *args]
    return [sys.executable, "-m", "app", "agent", *args]


def connect(path: Path) -> socket.socket | None:
    """A connection to the agent at ``path``, or None when none answers there; an unsafe socket is refused."""
    if not (path.exists() or path.is_symlink()):
        return None
    problem = unsafe_socket(path)
    if problem:
        raise PermissionError(problem)
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.connect(str(path))
        return sock
    except OSError:
        sock.close()
        return None


def start_agent(folder: Path) -> None:
    """The agent in a session of its own (it outlives this bridge and the SSH login), logging to its folder."""
    log_folder = folder / "agent"
    log_folder.mkdir(parents=True, exist_ok=True)
    os.chmod(log_folder, 0o700)
    with open(private_file(log_folder / "agent.log"), "ab") as log:
        subprocess.Popen(agent_argv("--serve"), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True)


def reach(folder: Path | None = None) -> socket.socket:
    folder = folder or data_dir()
    path = socket_path(folder)
    sock = connect(path)
    if sock is not None:
        return sock
    start_agent(folder)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        sock = connect(path)
        if sock is not None:
            return sock
        time.sleep(0.05)
    raise TimeoutError(f"The agent did not start within {START_SECONDS:.0f} s; see {path.parent / 'agent.log'}.")


def stdio() -> int:
    try:
        sock = reach()
    except (PermissionError, TimeoutError) as exc:
        print(f"labferry agent: {exc}", file=sys.stderr)
        return 2

    def upstream() -> None:
        stdin = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
        try:
            while data := stdin.read(65536):
                sock.sendall(data)
        except OSError:
            pass
        finally:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    threading.Thread(target=upstream, daemon=True).start()
    out = sys.stdout.buffer
    try:
        while data := sock.recv(65536):
            out.write(data)
            out.flush()
    except (OSError, BrokenPipeError):
        return 1
    return 0
