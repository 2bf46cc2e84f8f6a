"""A desktop's side of the agent: a process whose stdin and stdout reach it (``ssh HOST labferry agent
--stdio`` for a site, or the same command here), one request and one answer at a time."""

from __future__ import annotations

import json
import shlex
import subprocess
import threading
import time

from app import __version__
from backends.core.errors import BadRequest, TransferError, Unavailable

from .protocol import HELLO

#: the command that runs Ferry on the agent's host (a site whose Ferry is elsewhere than on PATH: --agent-command)
REMOTE_COMMAND = "labferry"


class AgentClient:
    def __init__(self, argv: list[str], where: str) -> None:
        self.where = where
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._next = 0
        first = self.proc.stdout.readline()
        if not first:
            self._no_agent()
        said = json.loads(first)
        self.version = said.get("version")
        if said.get("hello") != HELLO:
            self.close()
            raise TransferError(f"What answered on {where} is not Ferry's agent.")
        if said.get("version") != __version__:
            self.close()
            raise TransferError(f"The agent on {where} is Ferry {said.get('version')}, this is Ferry {__version__}; "
                                "install the same version on both.")

    def _no_agent(self) -> None:
        err = self.proc.stderr.read().decode("utf-8", "replace").strip()
        self.close()
        if "not found" in err or "No such file" in err or "No module named" in err:
            raise Unavailable(f"There is no Ferry on {self.where} ({err.splitlines()[-1] if err else 'no answer'}). "
                              "Install it there (the bundle, or pip install labferry), or give its path with "
                              "--agent-command.")
        raise TransferError(f"The agent on {self.where} did not answer"
                            f"{' (' + err.splitlines()[-1] + ')' if err else ''}.")

    def call(self, verb: str, **params):
        self._next += 1
        self.proc.stdin.write(json.dumps({"id": self._next, "verb": verb, **params}).encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self._no_agent()
        answer = json.loads(line)
        if not answer.get("ok"):
            error = BadRequest(answer.get("error") or "The agent refused that.")
            error.kind = answer.get("kind") or error.kind
            raise error
        return answer.get("result")

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AgentLink:
    """The agent over a site's SSH login, shared by several threads (one request at a time), and reached again
    when it went away: an agent killed mid-job is started anew by the next ``--stdio`` and resumes its queue.
    Connects on the first request; an agent not reached then (no Ferry there, another version) is said at once.
    ``retries``: how often a link that was up is tried again before its sentence is raised (the window's watch
    asks again each second by itself: 0). A refusal by the agent is raised at once."""

    def __init__(self, connect, where: str, retries: int = 6,
                 then: str = "run the same command again to go on") -> None:
        """``then``: what to do when the link stays lost, the end of its sentence."""
        self.connect, self.where, self.retries, self.then = connect, where, retries, then
        self.lock = threading.Lock()
        self.client: AgentClient | None = None
        self.reached = False

    def call(self, verb: str, **params):
        with self.lock:
            for attempt in range(self.retries + 1):
                try:
                    if self.client is None:
                        self.client = self.connect()
                        self.reached = True
                    return self.client.call(verb, **params)
                except BadRequest:
                    raise  # the agent answered: a refusal, not a lost link
                except (TransferError, OSError, ValueError) as exc:
                    self._drop()
                    if attempt == self.retries or not self.reached:
                        if isinstance(exc, TransferError):
                            raise
                        raise TransferError(f"The link to the agent on {self.where} broke ({exc}); {self.then}.") \
                            from None
                    time.sleep(min(0.5 * 2 ** attempt, 8.0))

    def _drop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def close(self) -> None:
        with self.lock:
            self._drop()


def site_client(site, command: str = REMOTE_COMMAND) -> AgentClient:
    """The agent on an SSH site's host, reached over that site's own SSH login (its key and known_hosts)."""
    from app.requests import site_options
    from backends.ssh.address import parse_target
    from backends.ssh.openssh import OpenSsh
    from backends.ssh.session import ssh_options

    if site.protocol not in ("sftp", "scp"):
        raise BadRequest(f"The agent is reached over SSH; site {site.name} is {site.protocol}. Use an SSH site of "
                         "the same host.")
    options = ssh_options(site_options(site))
    target = parse_target(site.url(), options)
    argv = [*OpenSsh(target, options).base_argv(), target.alias, f"{shlex.quote(command)} agent --stdio"]
    return AgentClient(argv, site.host)
