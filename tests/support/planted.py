"""A contract object (core.records) from a planted part of a document: the fields a test plants, every other required
field filled with a neutral value of its type (0, "", [], {}, None where the type allows it, a nested entry filled the
same way), then read through the contract, so the test holds what a reader of the file holds, checked by the same
rule. A reader that reads a filled field the test did not plant gets a value no test expects from it."""
from __future__ import annotations

import types
import typing
from typing import Any, Literal

from core.records import Entry
from core.records.check import _contract


def _parts(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _neutral(hint: Any) -> Any:
    parts = _parts(hint)
    if hint is Any or type(None) in parts:
        return None
    h = parts[0]
    origin = typing.get_origin(h)
    if isinstance(h, type) and issubclass(h, Entry):
        return filled(h, {})
    if origin is Literal:
        return typing.get_args(h)[0]
    if origin is tuple:
        return [_neutral(a) for a in typing.get_args(h)]
    return {str: "", int: 0, float: 0.0, bool: False, list: [], dict: {}}.get(origin or h)


def _filled_value(hint: Any, v: Any) -> Any:
    """A planted value, the entries inside it filled too."""
    for h in _parts(hint):
        origin = typing.get_origin(h)
        if isinstance(h, type) and issubclass(h, Entry) and isinstance(v, dict):
            return filled(h, v)
        if origin is list and isinstance(v, list) and typing.get_args(h):
            return [_filled_value(typing.get_args(h)[0], x) for x in v]
        if origin is dict and isinstance(v, dict) and typing.get_args(h):
            return {k: _filled_value(typing.get_args(h)[1], x) for k, x in v.items()}
    return v


def filled(cls: type, planted: dict[str, Any]) -> dict[str, Any]:
    """`planted` with every required field of `cls` it lacks filled, entries inside it filled too."""
    out = {}
    for name, hint, required, _, _ in _contract(cls):
        if name in planted:
            out[name] = _filled_value(hint, planted[name])
        elif required:
            out[name] = _neutral(hint)
    return out


def contract(cls: type, planted: dict[str, Any]):
    """The contract object of `cls` holding `planted`, read through its contract."""
    return cls.read(filled(cls, planted), "planted")
