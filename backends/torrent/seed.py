"""Seeding: a long-running job that serves a torrent's data until it is stopped.

The seed runs ``connections`` sessions on consecutive ports over the same files (read
only), so a fetcher that dials them all gets that many TCP connections — several windows
to fill a long lossy path, as GridFTP's parallel streams do. Data is trusted at start
(``seed_mode``: no full re-hash of hundreds of gigabytes) and each piece is checked
against the torrent the first time it is sent, so a damaged piece is never served: it
is dropped and the fetchers take it from another peer.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import NoReturn

import libtorrent as lt

from ..core.base import Sink
from ..core.errors import LocalError
from .browse import data_files
from .swarm import Swarm

TICK = 0.5


async def seed(params: lt.add_torrent_params, data: Path, swarm: Swarm, sink: Sink) -> NoReturn:
    """Serve until cancelled (the job's Cancel or Pause, Ctrl-C in the CLI)."""
    info = params.ti
    first = data_files(info)[0].path.replace("\\", "/").split("/")[0]
    save_path = data.parent if data.name == first else data
    if not (save_path / first).exists():
        raise LocalError(f"{save_path / first} does not exist: --data must be the torrent's file or folder, or the "
                         "folder that holds it.")
    began = time.monotonic()
    ports = await swarm.listening()
    swarm.add(params, save_path, seed=True)
    sink.note(f"Seeding {info.name()} on port(s) {', '.join(str(p) for p in ports)}"
              f"{' (TLS only: peers need a certificate from its lab CA)' if swarm.tls else ''}.")
    size = info.total_size()
    uploaded = 0
    try:
        while True:
            await asyncio.sleep(TICK)
            for alert in swarm.alerts():
                if isinstance(alert, lt.hash_failed_alert):
                    sink.note(f"Piece {alert.piece_index} of the local data does not match the torrent; it is not "
                              "served (the file changed or is damaged).")
                elif isinstance(alert, (lt.file_error_alert, lt.torrent_error_alert)):
                    raise LocalError(f"Reading the data failed: {alert.message()}.")
                elif (refused := swarm.tls_refusal(alert)) is not None:
                    sink.note(refused)
            statuses = [h.status() for h in swarm.handles]
            uploaded = sum(s.all_time_upload for s in statuses)
            peers = sum(s.num_peers for s in statuses)
            sink.progress(uploaded, None, peers)
    finally:
        spent = time.monotonic() - began
        sink.note(f"Served {uploaded} bytes ({uploaded / size if size else 0:.2f}× the data) in {spent:.0f} s.")
