"""The hostile-server suite's outcomes, for the table in docs/reliability.md (written by the conformance suite's
session end, once both suites ran whole)."""

from __future__ import annotations

import re

_NODE = re.compile(r"tests/hostile/test_(\w+)\.py::test_(\w+?)(?:\[(.+)\])?$")
_expected: set[str] = set()
_outcomes: dict[str, str] = {}


def _key(nodeid: str) -> str | None:
    match = _NODE.search(nodeid)
    return nodeid if match else None


def expect(nodeid: str) -> None:
    if _key(nodeid):
        _expected.add(nodeid)


def record(nodeid: str, passed: bool) -> None:
    if _key(nodeid) and _outcomes.get(nodeid) != "**FAILED**":
        _outcomes[nodeid] = "passed" if passed else "**FAILED**"


def complete() -> bool:
    """Whether every case of every module in tests/hostile/ ran (what was collected may be a part: ``-k``)."""
    from pathlib import Path

    modules = {path.stem.removeprefix("test_") for path in Path(__file__).parent.glob("test_*.py")}
    ran = {_NODE.search(nodeid).group(1) for nodeid in _outcomes}
    return bool(_expected) and set(_outcomes) == _expected and ran == modules


def table() -> list[str]:
    rows = ["## Hostile servers", "",
            "Written by the same run, from `tests/hostile/`: servers the tests start on 127.0.0.1 that misbehave on",
            "purpose (`tests/servers/hostile_http.py`, `hostile_ftp.py`, a relay that drops logins in front of the",
            "real globus-gridftp-server: `dropping_relay.py`), and Ferry run as a user runs it, the CLI in",
            "its own process. Each case asserts what reached disk (inside DEST, within what the server announced),",
            "the process's peak memory and the time it took to end; the threat model is in docs/security.md.", "",
            f"{sum(v == 'passed' for v in _outcomes.values())} of {len(_outcomes)} cases passed.", "",
            "| server | case | outcome |", "|---|---|---|"]
    for nodeid in sorted(_outcomes):
        module, name, param = _NODE.search(nodeid).groups()
        title = name.replace("_", " ") + (f" ({param})" if param else "")
        rows.append(f"| {module} | {title} | {_outcomes[nodeid]} |")
    return [*rows, ""]
