"""Verdict parsing: strict, then one documented lenient repair, else `unscored`. Never a zero.

docs/reward-telemetry.md: every "zero" in a collapse window was a JSON parse failure, 83% of them raw newlines
inside a JSON string. The repair handles exactly the two common, meaning-preserving faults:
  1. the object wrapped in prose or a ``` code fence -> take the outermost {...};
  2. raw control characters (newline, tab, CR) inside strings -> escape them.
Anything else (wrong types, out-of-scale scores, missing fields, no JSON at all) is unscored,
with the raw text and the error kept for the report.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Parsed:
    fields: dict[str, Any] | None  # None when unscored
    error: str | None
    repaired: bool = False

    @property
    def ok(self) -> bool:
        return self.fields is not None


def _escape_controls_in_strings(text: str) -> str:
    out, in_str, esc = [], False, False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            elif ch in "\n\r\t":
                ch = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
        elif ch == '"':
            in_str = True
        out.append(ch)
    return "".join(out)


def _outer_object(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else None


def _check(obj: Any, schema: dict) -> str | None:
    """A small validator for the verdict schemas rubrics use (object of scalar fields)."""
    if not isinstance(obj, dict):
        return "verdict is not a JSON object"
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in obj:
            return f"missing field {key!r}"
    for key, spec in props.items():
        if key not in obj:
            continue
        v, t = obj[key], spec.get("type")
        if t == "integer" and (isinstance(v, bool) or not isinstance(v, int)):
            return f"field {key!r} is not an integer: {v!r}"
        if t == "boolean" and not isinstance(v, bool):
            return f"field {key!r} is not a boolean: {v!r}"
        if t == "string" and not isinstance(v, str):
            return f"field {key!r} is not a string: {v!r}"
        if "enum" in spec and v not in spec["enum"]:
            return f"field {key!r} = {v!r} is outside {spec['enum']}"
    return None


def parse_verdict(text: str, schema: dict) -> Parsed:
    try:
        obj = json.loads(text)
        err = _check(obj, schema)
        return Parsed(obj, None) if err is None else Parsed(None, err)
    except (json.JSONDecodeError, RecursionError) as e:
        strict_error = f"invalid JSON: {e}"
    candidate = _outer_object(text)
    if candidate is None:
        return Parsed(None, strict_error + "; no JSON object found")
    try:
        obj = json.loads(_escape_controls_in_strings(candidate))
    except (json.JSONDecodeError, RecursionError) as e:
        return Parsed(None, f"{strict_error}; repair failed: {e}")
    err = _check(obj, schema)
    return Parsed(obj, None, repaired=True) if err is None else Parsed(None, err)

