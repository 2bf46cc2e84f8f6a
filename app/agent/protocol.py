"""The agent's wire format: JSON lines. The agent speaks first (``hello``: its version); then each request
``{"id": N, "verb": …, …}`` gets one answer ``{"id": N, "ok": true, "result": …}`` or ``{"id": N, "ok": false,
"error": SENTENCE, "kind": KIND}``. Both ends refuse a peer of another version, naming both."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from app import __version__
from backends.host import portable

PROTOCOL = 1
HELLO = "labferry-agent"
#: what a desktop may ask
VERBS = ("submit", "jobs", "pause", "resume", "cancel", "stop", "preflight")
#: a relay's verbs (``app.agent.relay``), answered by ``Relays``
RELAY_VERBS = ("relay_open", "relay_ranges", "relay_arrived", "relay_status", "relay_done", "relay_cancel")


def hello() -> dict:
    return {"hello": HELLO, "version": __version__, "protocol": PROTOCOL}


def encode(message: dict) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def socket_path(data_folder: Path) -> Path:
    return data_folder / "agent" / "agent.sock"


def job_dict(view) -> dict:
    """What a desktop is told of a job (``JobView.to_dict`` without the per-stream detail)."""
    d = view.to_dict()
    d.pop("stream_rates", None)
    return d


def unsafe_socket(path: Path) -> str | None:
    """Why ``path`` must not be trusted (another owner, or others may open it), or None."""
    folder = path.parent
    for item, wanted in ((folder, 0o700), (path, 0o600)):
        info = item.lstat()
        if info.st_uid != portable.my_uid():
            return f"{item} belongs to another user (uid {info.st_uid}); Ferry's agent uses only its own."
        if stat.S_IMODE(info.st_mode) & 0o077:
            return (f"{item} may be opened by other users (mode {stat.S_IMODE(info.st_mode):o}, not {wanted:o}); "
                    "Ferry refuses it. Remove it and start the agent again.")
    return None
