"""A JSON Schema (draft 2020-12) of each contract, walked from its dataclass fields and type hints, so that a tool
that does not run blindeval (a viewer, a bundle's reader) can check a file by the same rule as the contract's reader.

What a schema says is what the reader does: a required field is one without a default; a field with a default is
optional, and null only where its type says None; int is "integer" and never a bool, float is "number" (an int
included); Literal is an enum; tuple is an array of that length; list[X] and dict[str, X] check their entries; a
nested contract is a `$ref` into `$defs`. A key the contract does not name is accepted (a document keeps it as
written; a raw record drops it). A document's version key, and a raw record's `type` and `version`, are checked as
`Document.from_dict` and `Record.from_dict` check them. Each class's docstring and each field's comment become
"description"s. One difference JSON Schema cannot express: it counts 1.0 as an integer, which the reader refuses.
"""
from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import tokenize
import types
import typing
from typing import Any, Literal

from .binding import Binding
from .bundle import BundleInfo
from .check import Document, Entry, _contract
from .numbers import Numbers
from .raw import (
    AnswerRow,
    GoldLabel,
    HumanLabel,
    Judgment,
    KeyRow,
    LabelSample,
    PairKey,
    PublicQuestion,
    Record,
    Retest,
)
from .run import RunInfo

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# every document and raw record kind, by the name its schema is published under
CONTRACTS: dict[str, type] = {
    "binding": Binding, "run": RunInfo, "numbers": Numbers, "bundle": BundleInfo,
    "answer": AnswerRow, "blinding": KeyRow, "pair": PairKey, "judgment": Judgment, "retest": Retest,
    "label": HumanLabel, "gold": GoldLabel, "label_sample": LabelSample, "question": PublicQuestion,
}


def field_comments(cls: type) -> dict[str, str]:
    """The comment beside each field of a dataclass, or on the lines just above it: the contract's own why (a field
    a class inherits keeps its base's). Empty for a class whose source cannot be read."""
    out: dict[str, str] = {}
    for c in reversed(cls.__mro__):
        if dataclasses.is_dataclass(c) and "__dataclass_fields__" in vars(c):
            out.update(_own_comments(c))
    return out


def _own_comments(cls: type) -> dict[str, str]:
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    out = {}
    body = ast.parse(source).body[0].body
    starts = {n.lineno for n in body}
    for node in body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above, line = [], node.lineno - 1
            while line in comments and line not in starts:
                above.insert(0, comments[line])
                line -= 1
            text = " ".join(above + ([comments[node.lineno]] if node.lineno in comments else []))
            if text:
                out[node.target.id] = text
    return out


def docstring(cls: type) -> str:
    return " ".join(inspect.cleandoc(cls.__doc__ or "").split())


def _type(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of a value of type `hint`; a nested contract is added to `defs` (once) and referred to."""
    if hint is Any:
        return {}
    if hint is type(None):
        return {"type": "null"}
    if isinstance(hint, type) and issubclass(hint, Entry):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # taken before it is walked: a contract that holds itself refers back to it
            defs[hint.__name__] = _object(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    plain = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
    if hint in plain:
        return {"type": plain[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        parts = [_type(a, defs) for a in args]
        if all(set(p) == {"type"} for p in parts):  # str | int | None: one list of types
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is tuple:  # a list of a fixed length (an interval, the rubric's scale)
        return {"type": "array", "prefixItems": [_type(a, defs) for a in args], "items": False,
                "minItems": len(args)}
    if origin is list:
        return {"type": "array", **({"items": _type(args[0], defs)} if args and args[0] is not Any else {})}
    if origin is dict:
        return {"type": "object", **({"additionalProperties": _type(args[1], defs)}
                                     if args and args[1] is not Any else {})}
    raise TypeError(f"no JSON Schema for the type {hint!r}")  # a contract field of a type the reader cannot check


def _version(cls: type) -> dict[str, Any]:
    """The versions a reader of `cls` accepts in its version key."""
    return {"type": "integer", "minimum": 1, "maximum": cls.VERSION}


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of one contract class: its fields, which are required, and what it says of itself and them."""
    comments = field_comments(cls)
    props: dict[str, Any] = {}
    if issubclass(cls, Record):  # read by Record.from_dict: the kind, and a version it reads (absent: 1)
        props["type"] = {"const": cls.TYPE, "description": "the record's kind (absent: its file's)"}
        props["version"] = {**_version(cls), "description": "absent: version 1"}
    required = []
    for name, hint, needed, _, _ in _contract(cls):
        props[name] = _type(hint, defs)
        if comments.get(name):
            props[name]["description"] = comments[name]
        if needed:
            required.append(name)
    if issubclass(cls, Document):  # read by Document.from_dict before the fields
        key = cls.VERSION_KEY
        props[key] = {**props.get(key, {}), **_version(cls)}
        props[key].setdefault("description", "the document's version (absent: 1)")
    out: dict[str, Any] = {"type": "object", "title": cls.__name__}
    if docstring(cls):
        out["description"] = docstring(cls)
    out["properties"] = props
    if required:
        out["required"] = required
    return out


def schema(contract: type) -> dict[str, Any]:
    """The JSON Schema of a document (`Numbers`, `RunInfo`, `Binding`, `BundleInfo`), a raw record's class
    (`AnswerRow`, `Judgment`, ...) or any section of a document: the contracts it holds are in its `$defs`."""
    if not (isinstance(contract, type) and issubclass(contract, (Entry, Record))
            and dataclasses.is_dataclass(contract)):
        raise TypeError(f"{contract!r} is not a contract of core.records")
    defs: dict[str, Any] = {}
    body = _object(contract, defs)
    title = getattr(contract, "WHAT", None) or f"a raw record of type {contract.TYPE!r}"
    return {"$schema": DRAFT, **body, "title": title, **({"$defs": defs} if defs else {})}


def schemas() -> dict[str, dict[str, Any]]:
    """The schema of every document and raw record kind, by its name in CONTRACTS."""
    return {name: schema(cls) for name, cls in CONTRACTS.items()}
