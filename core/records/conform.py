"""Whether a JSON value conforms to a JSON Schema that core.records.schema emits, checked by our own code (jsonschema
is a test dependency only): a page or a bundle built from a document can check what it embeds against the schema a
reader outside blindeval checks it by.

The keywords are those `schema` emits, and only those: a schema holding another validation keyword is refused
(ValueError), never passed unchecked. As the contracts' reader does, and JSON Schema does not, an "integer" is an int
and never a float such as 1.0; neither "integer" nor "number" is a bool.
"""
from __future__ import annotations

from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
                                       "array": (list,), "object": (dict,), "null": (type(None),)}
_NOTES = {"$schema", "$defs", "title", "description"}  # annotations: they check nothing
_CHECKS = {"$ref", "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems",
           "minItems", "anyOf", "minimum", "maximum"}


def _is(v: Any, name: str) -> bool:
    return isinstance(v, _TYPES[name]) and (name in ("boolean", "null") or not isinstance(v, bool))


def violation(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
              where: str = "") -> tuple[str, str] | None:
    """The first place `value` breaks `schema`, as (its path: `comparisons[2].result.n`, what is wrong); None when it
    conforms. `root`: the document's schema, whose `$defs` a `$ref` names."""
    root = schema if root is None else root
    unknown = set(schema) - _NOTES - _CHECKS
    if unknown:
        raise ValueError(f"a schema keyword this check does not know: {sorted(unknown)}")
    if "$ref" in schema:
        return violation(value, root["$defs"][schema["$ref"].removeprefix("#/$defs/")], root, where)
    if "anyOf" in schema:
        found = [violation(value, s, root, where) for s in schema["anyOf"]]
        if all(found):  # named by the form it came closest to: the one whose violation lies deepest inside it
            return max(found, key=lambda f: len(f[0]))
    types = schema.get("type")
    if types is not None and not any(_is(value, t) for t in ([types] if isinstance(types, str) else types)):
        return where, f"reads {_short(value)}, which is not of type {types}"
    if "const" in schema and value != schema["const"]:
        return where, f"reads {_short(value)}, not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        return where, f"reads {_short(value)}, not one of {schema['enum']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            return where, f"reads {value!r}, outside {schema.get('minimum')} to {schema.get('maximum')}"
    if isinstance(value, dict):
        return _object(value, schema, root, where)
    if isinstance(value, list):
        return _array(value, schema, root, where)
    return None


def _object(value: dict[str, Any], schema: dict[str, Any], root: dict[str, Any], where: str) -> tuple[str, str] | None:
    at = f"{where}." if where else ""
    for name in schema.get("required", ()):
        if name not in value:
            return at + name, "missing"
    props = schema.get("properties", {})
    rest = schema.get("additionalProperties", True)
    for k, v in value.items():
        inner = props[k] if k in props else rest
        if inner is False:
            return at + k, "is not a field of this object"
        if isinstance(inner, dict):
            found = violation(v, inner, root, at + k if k in props else f"{where}[{k!r}]")
            if found:
                return found
    return None


def _array(value: list[Any], schema: dict[str, Any], root: dict[str, Any], where: str) -> tuple[str, str] | None:
    fixed = schema.get("prefixItems", [])
    if len(value) < schema.get("minItems", 0):
        return where, f"holds {len(value)} entries, fewer than {schema['minItems']}"
    for i, v in enumerate(value):
        inner = fixed[i] if i < len(fixed) else schema.get("items", True)
        if inner is False:
            return f"{where}[{i}]", f"is beyond the {len(fixed)} entries it holds"
        if isinstance(inner, dict):
            found = violation(v, inner, root, f"{where}[{i}]")
            if found:
                return found
    return None


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."
