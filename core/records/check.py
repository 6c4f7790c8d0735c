"""The rule every contract is read and written by: a frozen dataclass's fields, checked against a dict read from
JSON by their type hints (str, int, float, bool, None, Literal, unions, tuple, list, dict and nested entries, at any
depth), each error naming the file, the line and the field's path (BadRecord: exit 2), never a TypeError.

`_checked` reads the raw records (core.records.raw) and the sections of the documents; `Entry` is a section of a
JSON document, kept key for key so that a file read and written again is the same bytes; `Document` a whole file,
refused when it is of a later version than this blindeval reads, migrated (core.records.migrate) when it is of an
earlier one.
"""
from __future__ import annotations

import json
import re
import types
import typing
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from .. import jsonl
from ..errors import BadInput, BadRecord
from .migrate import Migrated, upgrade

_QUALIFIED = re.compile(r"\btyping\.|\bcore\.records\.(?:\w+\.)*")  # module names in a printed type
# the fields an Entry keeps about how it was read, not of its contract: the keys as read, the migration steps taken
BOOKKEEPING = frozenset({"written", "migrated"})


def _accepted(hint: Any) -> tuple[frozenset[type], frozenset[str]] | None:
    """The exact JSON types (a bool is not an int; an int is a float) and the Literal strings a field of type `hint`
    accepts; None: anything."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        parts = [_accepted(h) for h in typing.get_args(hint)]
        if None in parts:
            return None
        return frozenset().union(*(t for t, _ in parts)), frozenset().union(*(v for _, v in parts))
    if origin is Literal:
        return frozenset(), frozenset(typing.get_args(hint))
    return frozenset({int, float} if hint is float else {origin or hint}), frozenset()


@cache
def _contract(cls: type) -> tuple[tuple[str, Any, bool, Any, Any], ...]:
    """(field, annotated type, required, what it accepts, its entries' plain types) of a record class, resolved once:
    records are read by the 100,000. What it accepts is None for a field that holds records or typed entries
    (checked by `_value`); of those, a list[str] or dict[str, int] gives (list or dict, the types of its entries), so
    the common case is checked in one pass."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        if f.name in BOOKKEEPING:
            continue
        hint = hints[f.name]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        inner = _plain_types(args[-1]) if origin in (list, dict) and args else None
        out.append((f.name, hint, f.default is MISSING and f.default_factory is MISSING,
                    None if _deep(hint) else _accepted(hint), (origin, inner) if inner else None))
    return tuple(out)


def _parts(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


@cache
def _deep(hint: Any) -> bool:
    """Whether a field of type `hint` holds more than one JSON value to check: an Entry, or a list or object whose
    entries have a type (list[str], dict[str, int], list[Cell])."""
    for h in _parts(hint):
        if isinstance(h, type) and issubclass(h, Entry):
            return True
        if typing.get_origin(h) in (list, dict) and typing.get_args(h)[-1:] not in ((), (Any,)):
            return True
        if typing.get_origin(h) is tuple:
            return True
    return False


def _type_name(hint: Any) -> str:
    """A field's type as a message names it: `list[Cell] | None`, without the modules the names come from."""
    return hint.__name__ if isinstance(hint, type) else _QUALIFIED.sub("", str(hint))


@cache
def _plain_types(hint: Any) -> frozenset[type] | None:
    """The JSON types a value of type `hint` may have when no more is checked inside it (str, a number, a list or
    object of anything); None: it holds entries or typed values to check one by one."""
    if hint is Any:
        return None
    if hint is float:
        return frozenset({int, float})
    if hint in (str, int, bool):
        return frozenset({hint})
    origin = typing.get_origin(hint)
    if origin in (list, dict) and typing.get_args(hint)[-1:] in ((), (Any,)):
        return frozenset({origin})
    return None


def _value(v: Any, hint: Any, file: str | Path, line: int | None, where: str) -> Any:
    """`v` checked against `hint` (entries of lists and objects too, each error naming its path: `cells[2].mean`,
    `judge_totals['j/correctness'].scored`); an Entry is read as its class. BadRecord if it is of another type."""
    for h in _parts(hint):
        origin = typing.get_origin(h)
        if h is Any:
            return v
        if isinstance(h, type) and issubclass(h, Entry):
            if type(v) is dict:
                return h.read(v, file, line, where)
        elif origin is list:
            if type(v) is list:
                (arg,) = typing.get_args(h) or (Any,)
                plain = _plain_types(arg)
                if arg is Any or plain is not None and all(type(x) in plain for x in v):  # list[str]: read by
                    return v  # the 100,000
                return [_value(x, arg, file, line, f"{where}[{i}]") for i, x in enumerate(v)]
        elif origin is dict:
            if type(v) is dict:
                arg = (typing.get_args(h) or (str, Any))[1]
                plain = _plain_types(arg)
                if arg is Any or plain is not None and all(type(x) in plain for x in v.values()):
                    return v
                return {k: _value(x, arg, file, line, f"{where}[{k!r}]") for k, x in v.items()}
        elif origin is tuple:  # a list of a fixed length (an interval, the rubric's scale)
            args = typing.get_args(h)
            if type(v) is list and len(v) == len(args):
                return [_value(x, a, file, line, f"{where}[{i}]") for i, (x, a) in enumerate(zip(v, args, strict=True))]
        elif origin is Literal:
            if type(v) is str and v in typing.get_args(h):
                return v
        elif type(v) is h or (h is float and type(v) is int) or (h is type(None) and v is None):
            return v
    raise BadRecord(file, f"reads {_short(v)}, which is not of type {_type_name(hint)}", line=line, field=where)


def _checked(cls: type, values: dict[str, Any], file: str | Path, line: int | None, prefix: str,
             what: str) -> dict[str, Any]:
    """The contract fields of `values`, each present (or defaulted) and of its type; BadRecord naming file, line and
    field (`prefix` + its name) otherwise. A field holding entries (list[Comparison], dict[str, JudgeTotal]) is read
    entry by entry."""
    kept = {}
    for name, hint, required, accepted, plain in _contract(cls):
        if name not in values:
            if required:
                raise BadRecord(file, f"missing from {what}", line=line, field=prefix + name)
            continue
        v = values[name]
        if plain is not None and type(v) is plain[0] and all(type(x) in plain[1]
                                                              for x in (v if plain[0] is list else v.values())):
            pass  # a list[str] (an answer's calls), a dict[str, int]: of its type, entries included
        elif accepted is None:
            v = _value(v, hint, file, line, prefix + name)
        elif accepted[0] and type(v) not in accepted[0] and not (type(v) is str and v in accepted[1]):
            raise BadRecord(file, f"reads {_short(v)}, which is not of type {_type_name(hint)}", line=line,
                            field=prefix + name)
        elif not accepted[0] and not (type(v) is str and v in accepted[1]):  # a Literal
            raise BadRecord(file, f"reads {_short(v)}, which is not one of {sorted(accepted[1])}", line=line,
                            field=prefix + name)
        kept[name] = v
    return kept


# ----------------------------------------------------------------------------------------
# binding.json, run.json and numbers.json: whole JSON documents, read by the same rule as the raw records, one
# contract per section down to its rows, so that every reader (verify's second path included) reads what it promises
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """An object inside a JSON document (run.json's judge, a comparison of numbers.json): its contract fields checked
    and typed by the raw records' rule (`_checked`), every other key kept as written (`written`), so that `to_dict`
    gives back the object it was read from, key for key and in order, and a file rewritten through its contract is
    the same bytes. A field absent from an older file stays absent. A field with a default and a type without None
    (`family: ComparisonFamily = None`) may be absent (an older file) but never null: the writer never writes null
    there, and its readers read it whenever it is present."""

    WHAT: ClassVar[str]
    # every key as read, in order; None: built by a writer, so its fields are written in their declared order (an
    # absent one, None in a field whose type has no None, left out). Keyword-only, so each section's own fields come
    # first and need no default
    written: dict[str, Any] | None = field(default=None, repr=False, compare=False, kw_only=True)

    @classmethod
    def read(cls, d: Any, file: str | Path, line: int | None = None, prefix: str = ""):
        """The entry `d` holds (at `prefix` in its file); BadRecord naming file and field if it breaks the contract."""
        if type(d) is not dict:
            raise BadRecord(file, f"reads {_short(d)}, which is not an object ({cls.WHAT})", line=line,
                            field=prefix or None)
        return cls(**_checked(cls, d, file, line, prefix + "." if prefix else "", cls.WHAT), written=dict(d))

    def to_dict(self) -> dict[str, Any]:
        if self.written is None:
            return {name: _plain(getattr(self, name)) for name, hint, required, _, _ in _contract(type(self))
                    if required or getattr(self, name) is not None or type(None) in _parts(hint)}
        out = dict(self.written)
        for name, _, required, _, _ in _contract(type(self)):
            if name in out or required:
                out[name] = _plain(getattr(self, name))
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, Entry):
        return v.to_dict()
    if type(v) in (list, tuple):
        return [_plain(x) for x in v]
    if type(v) is dict:
        return {k: _plain(x) for k, x in v.items()}
    return v


def _nullable(hint: Any) -> bool:
    return hint is Any or any(h is type(None) or h is Any for h in _parts(hint))


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass(frozen=True)
class Document(Entry):
    """A whole JSON file (run.json, numbers.json). Its version is read from VERSION_KEY (absent: version 1, as a raw
    record without `version`): a file of a later version than this blindeval reads is refused, never misread; one of
    an earlier version is migrated to this one before its contract checks it (core.records.migrate), and `migrated`
    says each step taken (empty for a file of this version). The file itself is never rewritten by a read."""

    VERSION: ClassVar[int] = 1
    VERSION_KEY: ClassVar[str] = "version"

    migrated: tuple[Migrated, ...] = field(default=(), repr=False, compare=False, kw_only=True)

    @classmethod
    def from_dict(cls, d: Any, file: str | Path):
        if type(d) is not dict:
            raise BadRecord(file, f"holds {type(d).__name__} {_short(d)}, not the JSON object of {cls.WHAT}")
        version = d.get(cls.VERSION_KEY, 1)
        if type(version) is not int or not 1 <= version <= cls.VERSION:
            raise BadRecord(file, f"reads {version!r}; this version of blindeval reads {cls.WHAT} of version 1 to "
                            f"{cls.VERSION}", field=cls.VERSION_KEY)
        d, taken = upgrade(cls.__name__, d, cls.VERSION_KEY, cls.VERSION, file)
        doc = cls.read(d, file)
        return replace(doc, migrated=taken) if taken else doc

    @classmethod
    def read_file(cls, path: str | Path):
        """The document in the file at `path`: BadInput naming the file and line if it is not JSON (a duplicate key
        included), BadRecord naming the field if it breaks the contract."""
        path = Path(path)
        try:
            doc = jsonl.loads(path.read_text(encoding="utf-8"))
        except jsonl.DuplicateKey as e:
            raise BadInput(path, "appears twice in one JSON object", field=e.key) from None
        except json.JSONDecodeError as e:
            raise BadInput(path, f"not valid JSON: {e.msg} (column {e.colno})", line=e.lineno) from None
        except UnicodeDecodeError as e:
            raise BadInput(path, f"not UTF-8 text: {e.reason} at byte {e.start}") from None
        return cls.from_dict(doc, path)

    def text(self) -> str:
        """The file's text, as `judge run` writes it (indent 1, one newline at the end)."""
        return json.dumps(self.to_dict(), indent=1) + "\n"
