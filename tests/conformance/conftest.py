"""The conformance and fault suite: the same cases against every backend that claims the capability.

Each case is a test parametrized over the targets it applies to (``over``); where a case does not apply, the
reason is in ``NOT_APPLICABLE`` and the table says so. When the whole suite has run, its outcomes are written to
docs/reliability.md (cases × targets), so the table is always what the last full run saw.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conformance import servers
from tests.integration.conftest import (  # noqa: F401  (fixtures shared with the integration tests)
    gridftp,
    nginx,
    proftpd,
    sshd,
    sshd_sftp_only,
    vsftpd,
    vsftpd_tls,
)

TARGETS = ("https", "sftp", "scp", "sftp-only", "gridftp", "ftp", "proftpd", "ftps", "torrent")
#: case name → title, in the table's order (filled by the test module)
CASES: dict[str, str] = {}
#: (case, target) → why the case does not apply, or which open bug keeps it from being run
NOT_APPLICABLE: dict[tuple[str, str], str] = {}
_outcomes: dict[tuple[str, str], str] = {}
_expected: set[tuple[str, str]] = set()
_NODE = re.compile(r"::test_(\w+)\[([\w-]+)\]$")


def over(*names: str):
    return pytest.mark.parametrize("target", names, indirect=True)


@pytest.fixture
def target(request, tmp_path_factory):
    name = request.param
    if name == "https":
        made = servers.Https(request.getfixturevalue("nginx"))
    elif name in ("sftp", "scp"):
        made = (servers.Sftp if name == "sftp" else servers.Scp)(request.getfixturevalue("sshd"))
    elif name == "sftp-only":
        made = servers.SftpOnly(request.getfixturevalue("sshd_sftp_only"))
    elif name == "gridftp":
        made = servers.Gridftp(request.getfixturevalue("gridftp"))
    elif name == "ftp":
        made = servers.Ftp(request.getfixturevalue("vsftpd"))
    elif name == "proftpd":
        made = servers.Proftpd(request.getfixturevalue("proftpd"))
    elif name == "ftps":
        made = servers.Ftps(request.getfixturevalue("vsftpd_tls"))
    else:
        made = servers.Torrent(tmp_path_factory.mktemp("torrent-target"))
    yield made
    made.cleanup()


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        match = _NODE.search(item.nodeid)
        if match and "tests/conformance/" in item.nodeid:
            _expected.add((match.group(1), match.group(2)))


def pytest_xdist_node_collection_finished(node, ids):
    """Under pytest-xdist the controller collects nothing itself (the workers do, and send their reports to it,
    where the table is written): what they collected is expected."""
    for nodeid in ids:
        match = _NODE.search(nodeid)
        if match and "tests/conformance/" in nodeid:
            _expected.add((match.group(1), match.group(2)))


def pytest_runtest_logreport(report):
    match = _NODE.search(report.nodeid)
    if not match or "tests/conformance/" not in report.nodeid:
        return
    key = (match.group(1), match.group(2))
    if report.when == "call" or report.failed:
        if _outcomes.get(key) != "failed":
            _outcomes[key] = "passed" if report.passed else "failed"
            how = dict(report.user_properties).get("how")
            if report.passed and how:
                _outcomes[key] = f"passed ({how})"


def pytest_sessionfinish(session, exitstatus):
    from tests import hostile

    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: it saw its own share; the controller writes the table

    if not CASES:  # the pytest-xdist controller collected nothing: the cases' titles come with their module
        import importlib

        for module in sorted(Path(__file__).parent.glob("test_*.py")):
            importlib.import_module(f"tests.conformance.{module.stem}")
    if not _expected or set(_outcomes) != _expected or not _every_cell() or not hostile.complete():
        return  # a partial run (-k, one file, interrupted): the table stays as the last full run wrote it
    write_table(Path(__file__).resolve().parents[2] / "docs" / "reliability.md", hostile.table())


def _every_cell() -> bool:
    """Whether every case ran against every target it applies to (a ``-k`` run collects, and runs, a part)."""
    return all((case, name) in _outcomes or (case, name) in NOT_APPLICABLE for case in CASES for name in TARGETS)


def write_table(path: Path, more: list[str] = ()) -> None:
    passed = sum(1 for v in _outcomes.values() if v.startswith("passed"))
    lines = [
        "# Reliability: every case against every backend",
        "",
        "Written by the conformance suite (`tests/conformance/`, part of `make test`) after its last full run,",
        "against the real servers the suite starts on 127.0.0.1: nginx with TLS (https), OpenSSH's sshd (sftp, scp,",
        "and an account allowed only SFTP), globus-gridftp-server (gridftp, over ftp:// with `--backend gridftp`),",
        "a stock vsftpd (ftp, Ferry's own FTP client, a password user), ProFTPD (proftpd, the same client, a password",
        "user kept in its home), the same vsftpd with explicit FTPS required on every login and data connection",
        "(ftps, TLS sessions resumed, its own CA) and `labferry seed` (torrent). Apache httpd's and lighttpd's",
        "cases (logins, redirect loops, names, bodies without a size or compressed, their folder listings) are in",
        "tests/integration/test_http_behaviour.py. globus-url-copy takes no rate cap, so the GridFTP cases that",
        "must act mid-transfer freeze globus-gridftp-server (SIGSTOP) once the part file holds data.",
        "A cell is *passed* or *FAILED* as that run saw it, or says why the case does not apply, or names",
        "the open bug that keeps it from being run yet.",
        "",
        f"{passed} of {len(_outcomes)} run cells passed.",
        "",
        "| case | " + " | ".join(TARGETS) + " |",
        "|---|" + "---|" * len(TARGETS),
    ]
    for case, title in CASES.items():
        cells = []
        for name in TARGETS:
            if (case, name) in _outcomes:
                outcome = _outcomes[case, name]
                cells.append(outcome if outcome.startswith("passed") else "**FAILED**")
            else:
                cells.append(NOT_APPLICABLE.get((case, name), "not in the suite yet"))
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines += ["", "Reasons and open bugs are kept in `tests/conformance/test_cases.py` (`NOT_APPLICABLE`).", ""]
    path.write_text("\n".join([*lines, *more]))
