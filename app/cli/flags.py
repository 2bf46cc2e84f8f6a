"""CLI flags made from the backends' own option declarations (``backends.core.options``): an option is
written once, in its backend, and reaches ``labferry copy --help`` and the front door from there."""

from __future__ import annotations

import argparse
import typing
from typing import Literal

from backends.core.options import declared, plain_type


def add_option_flags(group, spec: type) -> None:
    """One flag per declared option that names one; a flag another backend already added is left as it is."""
    for f, kind in declared(spec):
        flag = f.metadata.get("flag")
        if not flag or flag in group._option_string_actions:
            continue  # none, or one flag that two backends share (--stall-timeout): added once
        kw: dict = {"dest": _dest(flag), "help": f.metadata.get("help")}
        if f.metadata.get("metavar"):
            kw["metavar"] = f.metadata["metavar"]
        base = plain_type(kind)
        if base is bool:
            kw["action"] = "store_true"
            kw["default"] = None
        elif typing.get_origin(base) is list:
            kw["action"] = "append"
        elif typing.get_origin(base) is Literal:
            kw["choices"] = typing.get_args(base)
        elif base in (int, float) and not f.metadata.get("rate"):
            kw["type"] = base
        group.add_argument(flag, **kw)


def options_from_flags(args: argparse.Namespace, spec: type) -> dict:
    """The options the user gave as flags, by field name (flags not given are left out)."""
    from app.units import parse_rate

    found = {}
    for f, _ in declared(spec):
        flag = f.metadata.get("flag")
        value = getattr(args, _dest(flag), None) if flag else None
        if value is None or value is False:
            continue
        found[f.name] = parse_rate(value) if f.metadata.get("rate") else value
    return found


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")
