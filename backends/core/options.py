"""Backend options, declared by each backend as a typed dataclass and checked at the front door.

A backend names its options class in ``options_type``; every field has a type, a default and a one-line
help (``option(default, "help")``), as rclone's ``RegInfo.Options`` do. ``check_backend_options`` refuses
an unknown or ill-typed option with a sentence before a job is queued, and ``read_options`` gives the
backend its typed settings, so no backend reads a bare dict with ``.get`` and silently falls back.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, Field, field, fields
from typing import Any, Literal

from .errors import BadRequest


def option(default: Any = None, help: str = "", *, flag: str | None = None, metavar: str | None = None,
           rate: bool = False) -> Any:
    """A declared option: its default, one line of help, the CLI flag that sets it (if any) and the flag's
    metavar; ``rate``: the flag takes a rate such as 50M or 400Mbit (stored as bytes per second)."""
    meta = {"help": help, "flag": flag, "metavar": metavar, "rate": rate}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


def declared(spec: type) -> list[tuple[Field, Any]]:
    """The options of ``spec`` with their resolved types (for help texts, dialogs and the checker)."""
    hints = typing.get_type_hints(spec)
    return [(f, hints[f.name]) for f in fields(spec)]


def check_backend_options(backend, values: dict, *, strict: bool = True) -> dict:
    """``values`` with every option known to ``backend`` and of its declared type; None means not given.

    ``strict=False`` drops the options ``backend`` does not declare instead of refusing them (a comparison of
    several protocols hands the same SSH flags to all of them)."""
    spec = getattr(backend, "options_type", None)
    given = {k: v for k, v in (values or {}).items() if v is not None}
    if not strict:
        names = {f.name for f in fields(spec)} if spec else set()
        given = {k: v for k, v in given.items() if k in names}
    if not given:
        return {}
    if spec is None:
        raise BadRequest(f"{backend.name} transfers take no options of their own; "
                         f"{', '.join(sorted(given))} {'does' if len(given) == 1 else 'do'} not apply to them.")
    known = {f.name: kind for f, kind in declared(spec)}
    shown = sorted(f.metadata.get("flag") or f.name for f in fields(spec))
    checked = {}
    for key, value in given.items():
        if key not in known:
            raise BadRequest(f"{backend.name} transfers have no option '{key}'. They take: {', '.join(shown)}.")
        checked[key] = _coerce(value, known[key], key, backend.name)
    return checked


def plain_type(kind: Any) -> Any:
    """``X | None`` as ``X`` (what a flag or a form field takes); any other type as it is."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return inner[0] if len(inner) == 1 else kind
    return kind


def read_options(spec: type, values: dict | None):
    """The typed settings for a backend (the values were checked at the front door; defaults fill the rest)."""
    names = {f.name for f in fields(spec)}
    return spec(**{k: v for k, v in (values or {}).items() if k in names and v is not None})


def defaults_of(spec: type) -> dict:
    return {f.name: (f.default if f.default is not MISSING else f.default_factory()) for f in fields(spec)}


def _coerce(value: Any, kind: Any, key: str, backend: str) -> Any:
    """``value`` as ``kind``: exact types, digit strings for numbers (site profiles edited by hand)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key, backend) if len(inner) == 1 else value
    if origin is Literal:
        if value not in args:
            raise BadRequest(f"The {backend} option {key} takes {' or '.join(map(str, args))}; got '{value}'.")
        return value
    if origin is list:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise BadRequest(f"The {backend} option {key} takes a list of texts; got {value!r}.")
        return list(value)
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise BadRequest(f"The {backend} option {key} is on or off (true or false); got {value!r}.")
    if kind in (int, float):
        if isinstance(value, str) and value.strip().replace(".", "", kind is float).isdigit():
            value = kind(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or kind is int and value != int(value):
            raise BadRequest(f"The {backend} option {key} takes a {'whole ' if kind is int else ''}number; "
                             f"got {value!r}.")
        if value < 0:
            raise BadRequest(f"The {backend} option {key} cannot be negative; got {value}.")
        return kind(value)
    if kind is str:
        if not isinstance(value, str):
            raise BadRequest(f"The {backend} option {key} takes a text; got {value!r}.")
        return value
    return value
