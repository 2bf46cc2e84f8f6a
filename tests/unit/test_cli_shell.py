"""The command line as scripts and shells expect it: completion scripts run by the shells themselves (bash,
fish, zsh; PowerShell's read, as there is none here), -v/-q on every command, and the one progress line that
rewrites itself on a terminal and prints a plain line every few seconds into a log."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import time

import pytest

from app.cli import build_parser
from app.cli.progress import ProgressLine


def _script(shell: str, tmp_path) -> str:
    proc = subprocess.run([sys.executable, "-m", "app", "completion", shell], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / f"labferry.{shell}"
    path.write_text(proc.stdout)
    return str(path)


def _shell(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; run tests/system-deps.sh as root", pytrace=False)
    return found


BASH_CASES = {
    "labferry co": "compare completion copy",
    "labferry copy --stre": "--streams",
    "labferry sites a": "add",
    "labferry completion ": "bash fish powershell zsh",
    "labferry copy --streams 4 --ca": "--ca-file",
}


@pytest.mark.parametrize("line", BASH_CASES)
def test_bash_completes_commands_sub_commands_options_and_values(line, tmp_path):
    script = _script("bash", tmp_path)
    words = line.split(" ")
    program = (f"source {script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\nCOMP_CWORD={len(words) - 1}\n"
               "_labferry\necho \"${COMPREPLY[*]}\"")
    proc = subprocess.run([_shell("bash"), "-c", program], capture_output=True, text=True, timeout=60)
    assert sorted(proc.stdout.split()) == sorted(BASH_CASES[line].split()), proc.stderr


def test_fish_completes_from_its_own_complete_command(tmp_path):
    script = _script("fish", tmp_path)
    program = (f"source {script}; complete -C 'labferry co'; echo ---; complete -C 'labferry sites a'; echo ---; "
               "complete -C 'labferry completion '")
    proc = subprocess.run([_shell("fish"), "-c", program], capture_output=True, text=True, timeout=60)
    first, second, third = proc.stdout.split("---\n")
    assert [line.split("\t")[0] for line in first.splitlines()] == ["compare", "completion", "copy"], proc.stderr
    assert [line.split("\t")[0] for line in second.splitlines()] == ["add"]
    assert sorted(third.split()) == ["bash", "fish", "powershell", "zsh"]


def test_zsh_dispatches_to_the_commands_and_their_options(tmp_path):
    """zsh's completion widgets need a terminal; the script's own logic runs with them stubbed to print what
    they were given."""
    script = _script("zsh", tmp_path)
    stubs = ("compdef() { :; }; _describe() { shift; print -r -- \"describe: ${(P)1}\"; }; "
             "_arguments() { print -r -- \"arguments: $*\"; }; _files() { print files; }")
    program = (f"source {script}; {stubs}; words=(labferry sites ''); CURRENT=3; _labferry; "
               "words=(labferry copy --streams 4 ''); CURRENT=5; _labferry")
    proc = subprocess.run([_shell("zsh"), "-fc", program], capture_output=True, text=True, timeout=60)
    sites, copy = proc.stdout.splitlines()
    assert sites.startswith("describe: add:add or update a site list:") and "remove:" in sites, proc.stderr
    assert copy.startswith("arguments: *:file:_files ") and "--streams" in copy and "--ca-file" in copy


def test_powershell_registers_a_completer_for_every_command(tmp_path):
    text = open(_script("powershell", tmp_path)).read()
    assert "Register-ArgumentCompleter -Native -CommandName labferry, labferry.exe" in text
    for command in ("copy", "sites add", "preflight", "completion"):
        assert f"    '{command}' = @(" in text


def test_every_command_and_sub_command_takes_verbose_and_quiet():
    parser = build_parser()
    for argv in (["copy", "a", "b"], ["sites", "list"], ["history"], ["report", "-o", "x.html"], ["queue"],
                 ["preflight", "https://h/x"], ["completion", "bash"]):
        args = parser.parse_args([*argv, "-v", "-v", "-q"])
        assert args.verbose == 2 and args.quiet is True, argv


def test_the_progress_line_in_a_log_is_one_plain_line_every_few_seconds():
    log = io.StringIO()
    line = ProgressLine(stream=log, every=0.3)
    assert line.mode == "log"
    for i in range(50):
        line.show(f"{i}%")
        time.sleep(0.01)
    time.sleep(0.3)
    line.show("99%")
    line.say("labferry: note: a note")
    line.done()
    lines = log.getvalue().splitlines()
    assert lines[0] not in ("0%", "1%") and "99%" in lines and lines[-1] == "labferry: note: a note"  # not at once
    assert 2 <= len(lines) <= 4 and "\r" not in log.getvalue()  # not 51 lines, no carriage returns


def test_quiet_shows_no_progress_line_at_all():
    log = io.StringIO()
    line = ProgressLine(enabled=False, stream=log)
    line.show("50%")
    line.done()
    assert log.getvalue() == ""
