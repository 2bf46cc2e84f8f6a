"""Functions of at most 60 lines and modules of at most 400, in the application and the backends: split by
meaning when they grow (a function that does two things is two functions), so that a newcomer reads one whole
thing at a time. Lines count as the file has them, docstring and comments included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LONGEST_FUNCTION = 60
LONGEST_MODULE = 400


def _sources() -> list[Path]:
    return sorted(p for folder in ("app", "backends") for p in (ROOT / folder).rglob("*.py"))


def test_no_module_is_over_400_lines():
    long = [f"{p.relative_to(ROOT)} ({n})" for p in _sources() if (n := p.read_text().count("\n")) > LONGEST_MODULE]
    assert not long, f"modules over {LONGEST_MODULE} lines: {', '.join(long)}"


def test_no_function_is_over_60_lines():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LONGEST_FUNCTION:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length})")
    assert not long, f"functions over {LONGEST_FUNCTION} lines: {', '.join(long)}"
