"""Following an agent's queue from the desktop: a thread that asks the agent for its jobs each second and hands
them on, and takes pause/resume/cancel/submit for it. No Qt here: the window turns the callbacks into signals,
so it never waits on the SSH round trip (and never opens a connection itself).

It also keeps, per site, what trying found out (``agent.NAME`` in the settings): the agent's version and when
it answered, or the sentence that said there is none, so a site list can show which hosts run Ferry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from backends.core.errors import TransferError, Unavailable

POLL_SECONDS = 1.0


def note_agent(site_name: str, version: str | None, problem: str | None = None, db_path=None) -> None:
    """Remember whether the site's host runs an agent (found by trying)."""
    from app.store import Store

    with Store(db_path) as store:
        known = store.settings.get(f"agent.{site_name}") or {}  # keeps how Ferry starts there ("command")
        store.settings.set(f"agent.{site_name}", known | {"version": version, "problem": problem,
                                                          "checked": time.time()})


def agent_note(store, site_name: str) -> dict | None:
    return store.settings.get(f"agent.{site_name}")


class AgentWatch:
    """``on_jobs(list of job dicts)`` each second; ``on_error(sentence)`` when the agent cannot be reached (the
    watch keeps trying, more slowly); ``on_reached(version)`` once connected."""

    def __init__(self, site, command: str, on_jobs: Callable[[list[dict]], None],
                 on_error: Callable[[str], None], on_reached: Callable[[str], None] | None = None,
                 db_path=None) -> None:
        from app.agent.client import AgentLink

        self.site, self.command, self.db_path = site, command, db_path
        self.on_jobs, self.on_error, self.on_reached = on_jobs, on_error, on_reached
        self.link = AgentLink(self._connect, site.host, retries=0, then="Ferry tries again")  # the poll retries
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"agent-{site.name}", daemon=True)
        self._thread.start()

    def _connect(self):
        from app.agent.client import site_client

        client = site_client(self.site, self.command)
        version = client.version
        note_agent(self.site.name, version, db_path=self.db_path)
        if self.on_reached:
            self.on_reached(version)
        return client

    def _run(self) -> None:
        wait = POLL_SECONDS
        while not self._stop.is_set():
            try:
                jobs = self.call("jobs")
                wait = POLL_SECONDS
                self.on_jobs(jobs)
            except TransferError as exc:
                if isinstance(exc, Unavailable):  # no Ferry there: the site profile remembers it
                    note_agent(self.site.name, None, str(exc), db_path=self.db_path)
                self.on_error(str(exc))
                wait = min(30.0, wait * 2)
            self._stop.wait(wait)

    def call(self, verb: str, **params):
        """One request to the agent, from any thread (connecting first if needed)."""
        return self.link.call(verb, **params)

    def stop(self) -> None:
        self._stop.set()
        self.link.close()
