"""The CI workflow for the laptop OSes (.github/workflows/ci.yml) cannot run here; what can be checked is: it
parses, it covers Linux, macOS on Apple silicon and Windows, it runs the tests that need no Linux server and
builds the bundle and the installers from files that exist, and actionlint (when this machine has it) finds
nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


def _job() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]["tests"]


def _runs() -> str:
    return "\n".join(step.get("run", "") for step in _job()["steps"])


def test_it_covers_the_three_laptop_oses_and_the_pythons_ferry_supports():
    matrix = _job()["strategy"]["matrix"]
    assert matrix["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    assert set(matrix["python"]) == {"3.11", "3.13"}
    assert _job()["strategy"]["fail-fast"] is False  # one OS failing still shows the others


def test_it_runs_the_tests_that_need_no_linux_server_and_builds_from_files_that_exist():
    runs = _runs()
    assert "pytest" in runs and "tests/unit" in runs and "tests/portable" in runs
    assert "installers/labferry.spec" in runs and "bundle_test.py --smoke" in runs
    for path in re.findall(r"(?:installers|tests)[/\\][\w./\\-]+", runs):
        assert (ROOT / path.replace("\\", "/")).exists(), path
    assert '".[all,test]"' in runs  # the desktop extras, as a researcher installs them


def test_actionlint_finds_nothing_where_this_machine_has_it():
    found = shutil.which("actionlint") or next(
        (str(p) for p in (Path.home() / "go" / "bin" / "actionlint",) if p.exists()), None)
    if found is None:  # the structure above is still checked; actionlint ran on the commit that wrote the file
        return
    proc = subprocess.run([found, str(WORKFLOW)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
