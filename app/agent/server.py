"""The agent process: the engine, its queue in the agent's data folder, and the socket desktops reach it on.

It stays while a desktop is connected or a job is queued or running, and leaves after ``idle`` seconds of
neither (a desktop's next ``--stdio`` starts it again). Jobs survive it: a restarted agent resumes them, as a
restarted window does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from pathlib import Path

from app.engine import Engine, JobState
from app.paths import data_dir, database_path
from app.requests import overrides_from_wire
from backends.core.errors import BadRequest, TransferError

from .protocol import RELAY_VERBS, VERBS, encode, hello, job_dict, socket_path

log = logging.getLogger(__name__)
IDLE_SECONDS = 600.0


class Agent:
    def __init__(self, folder: Path | None = None, idle: float = IDLE_SECONDS, max_jobs: int = 3) -> None:
        self.folder = folder or data_dir()
        self.path = socket_path(self.folder)
        self.idle = idle
        self.max_jobs = max_jobs
        self.clients = 0
        self.last_busy = time.monotonic()
        self.stopping = asyncio.Event()

    # -- the socket ------------------------------------------------------------------------------
    def _bind(self) -> socket.socket:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        if self.path.exists() or self.path.is_symlink():
            probe = socket.socket(socket.AF_UNIX)
            try:
                probe.connect(str(self.path))
                raise BadRequest(f"An agent already runs here ({self.path}); `labferry agent --status` shows it.")
            except OSError:
                self.path.unlink()  # left by an agent that was killed
            finally:
                probe.close()
        server = socket.socket(socket.AF_UNIX)
        old = os.umask(0o177)  # the socket is born 0600: no moment when others may open it
        try:
            server.bind(str(self.path))
        finally:
            os.umask(old)
        server.listen(16)
        server.setblocking(False)
        return server

    async def run(self) -> None:
        listener = self._bind()
        pid_file = self.path.with_name("agent.pid")
        pid_file.write_text(f"{os.getpid()}\n")
        self.engine = Engine(database_path(), max_jobs=self.max_jobs, run_queue=True).start()
        from .relay import Relays

        self.relays = Relays(self.folder, self.engine)
        server = await asyncio.start_unix_server(self._client, sock=listener)
        log.info("agent listening on %s", self.path)
        try:
            async with server:
                while not self.stopping.is_set():
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self.stopping.wait(), 1.0)
                    await asyncio.to_thread(self.relays.tend)
                    if self._busy():
                        self.last_busy = time.monotonic()
                    elif self.idle and time.monotonic() - self.last_busy > self.idle:
                        log.info("agent idle for %.0f s: leaving", self.idle)
                        break
        finally:
            await asyncio.to_thread(self.engine.close)
            for gone in (self.path, pid_file):
                with contextlib.suppress(OSError):
                    gone.unlink()

    def _busy(self) -> bool:
        if self.clients:
            return True
        return any(v.state == JobState.QUEUED or v.state.active for v in self.engine.jobs())

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients += 1
        try:
            writer.write(encode(hello()))
            await writer.drain()
            while line := await reader.readline():
                answer = await self._answer(line)
                writer.write(encode(answer))
                await writer.drain()
                if answer.get("result") == "stopping":
                    self.stopping.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.clients -= 1
            self.last_busy = time.monotonic()
            writer.close()

    # -- requests -------------------------------------------------------------------------------
    async def _answer(self, line: bytes) -> dict:
        ident = None
        try:
            request = json.loads(line)
            ident, verb = request.get("id"), request.get("verb")
            if verb in RELAY_VERBS:
                work = getattr(self.relays, verb.removeprefix("relay_"))
            elif verb in VERBS:
                work = getattr(self, f"_{verb}")
            else:
                raise BadRequest(f"The agent does not know '{verb}'; it takes {', '.join(VERBS + RELAY_VERBS)}.")
            result = await asyncio.to_thread(work, request)
            return {"id": ident, "ok": True, "result": result}
        except TransferError as exc:
            return {"id": ident, "ok": False, "error": str(exc), "kind": exc.kind}
        except (ValueError, KeyError, TypeError) as exc:
            return {"id": ident, "ok": False, "error": f"The agent could not read that request ({exc}).",
                    "kind": "bad-request"}

    def _submit(self, request: dict) -> dict:
        """Through the front door, as a local copy: the agent's own sites, settings and defaults."""
        from app.requests import resolve_here

        resolved = resolve_here(request["source"], request["dest"], overrides_from_wire(request.get("overrides")))
        return job_dict(self.engine.submit(*resolved.submit_args()))

    def _jobs(self, request: dict) -> list[dict]:
        return [job_dict(v) for v in self.engine.jobs()]

    def _pause(self, request: dict) -> dict:
        return job_dict(self.engine.pause(int(request["job"])))

    def _resume(self, request: dict) -> dict:
        return job_dict(self.engine.resume(int(request["job"])))

    def _cancel(self, request: dict) -> dict:
        return job_dict(self.engine.cancel(int(request["job"])))

    def _preflight(self, request: dict) -> dict:
        """A relay's second hop, measured from here: TARGET as this host sees it (its own sites)."""
        from app.preflight import resolve_target, run_preflight
        from app.store import Store
        from backends.core.base import TransferOptions
        from backends.core.registry import registry

        with Store(database_path()) as store:
            limit = TransferOptions(max_streams=max(1, min(64, int(request.get("max_streams") or 64))))
            url, site, options = resolve_target(store, request["target"], limit)
            analysis = asyncio.run(run_preflight(store, registry, url, options, site=site,
                                                 quick=bool(request.get("quick"))))
        return analysis.to_dict()

    def _stop(self, request: dict) -> str:
        return "stopping"
