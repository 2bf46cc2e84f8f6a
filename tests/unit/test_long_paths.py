"""Windows refuses a path of 260 characters or more unless it is written in extended form (``\\\\?\\``) or the
registry's LongPathsEnabled is set, which most lab laptops do not have. A study's folders below a deep DEST
reach that. Destination and PartFile open every path in extended form on Windows; the rules that make the
form are checked here for each kind of Windows path, and the portable tests download into a folder path over
260 characters on the CI's Windows runner (tests/portable/test_runs_here.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backends.destination import Destination, PartFile
from backends.host import portable
from backends.host.portable import extended_windows_path


@pytest.mark.parametrize(("given", "extended"), [
    ("C:\\data\\run1.fq.gz", "\\\\?\\C:\\data\\run1.fq.gz"),
    ("C:/data/study/run1.fq.gz", "\\\\?\\C:\\data\\study\\run1.fq.gz"),  # extended paths take no forward slash
    ("C:\\data\\.\\a\\..\\b", "\\\\?\\C:\\data\\b"),  # nor . or ..: Windows does not resolve them there
    ("\\\\server\\share\\lab\\x", "\\\\?\\UNC\\server\\share\\lab\\x"),  # a network share
    ("\\\\?\\C:\\already", "\\\\?\\C:\\already"),
    ("\\\\.\\PhysicalDrive0", "\\\\.\\PhysicalDrive0"),  # a device path is left alone
])
def test_each_kind_of_windows_path_gets_its_extended_form(given, extended):
    assert extended_windows_path(given) == extended


def test_a_long_windows_destination_stays_under_its_root_in_extended_form():
    deep = "C:\\Users\\researcher\\" + "\\".join(["PRJEB12345-single-cell-atlas"] * 9)
    assert len(deep) > 260
    root = extended_windows_path(deep)
    assert root.startswith("\\\\?\\C:\\Users\\researcher\\") and root.endswith("atlas")


def test_the_destination_module_opens_paths_through_long_path(monkeypatch, tmp_path):
    """Off Windows the path is kept as it is; the destination's root and a part file both go through the one
    function, so on Windows every file under DEST is opened in extended form."""
    seen: list[str] = []
    real = portable.long_path

    def spy(path):
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(portable, "long_path", spy)
    dest = Destination(tmp_path / "study")
    part = PartFile(tmp_path / "run1.fq.gz")
    assert seen == [str(tmp_path / "study"), str(tmp_path / "run1.fq.gz")]
    assert dest.root == tmp_path / "study" and part.dest == tmp_path / "run1.fq.gz"
    if os.name == "nt":
        assert str(real(tmp_path)).startswith("\\\\?\\")
    else:
        assert real(tmp_path) == tmp_path and isinstance(real("relative/x"), Path)
