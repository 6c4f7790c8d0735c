"""run.json and numbers.json read through their contracts (core.records.RunInfo, core.records.Numbers).

Documents are generated from the contracts' own field types (required fields always, optional ones sometimes, keys
the contract does not name beside them), so every field is exercised, not one example per line:
- a document read and written again is the same bytes (key order and unknown keys kept, absent fields left absent);
- a damaged document (a required field dropped, a typed field given a value of another JSON type, the file cut
  short) is bad input naming the file and the field (or the line, for text that is no longer JSON), never a
  traceback, through the readers of every command that reads them.
"""
from __future__ import annotations

import json
import types
import typing
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import BadInput, BadRecord
from core.records import Entry, Numbers, RunInfo
from judge.__main__ import main

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PLAIN = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner,
                                                                                 max_size=2), max_leaves=4)
# the JSON types a generated value can have, and one value of each to put where another type belongs
OTHER_TYPE = {"int": 7, "float": 2.5, "str": "x", "bool": True, "list": [], "dict": {}, "null": None}


def _parts(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value has the type a contract field names (a bool is not a number; an int is a float)."""
    if hint is Any:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in _parts(hint))
    if hint is type(None):
        return value is None
    if isinstance(hint, type) and issubclass(hint, Entry):
        return type(value) is dict
    origin = typing.get_origin(hint) or hint
    if hint is float:
        return type(value) in (int, float)
    return type(value) is origin


def _values(hint: Any) -> st.SearchStrategy:
    """A strategy for JSON values of the type a contract field names."""
    if hint is Any:
        return PLAIN
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return st.one_of(*(_values(h) for h in _parts(hint)))
    if hint is type(None):
        return st.none()
    if isinstance(hint, type) and issubclass(hint, Entry):
        return st.deferred(lambda: _documents(hint))
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return st.lists(_values(args[0]) if args else PLAIN, max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), PLAIN, max_size=2)
    return {str: st.text(max_size=6), int: st.integers(-10**6, 10**6),
            float: st.floats(allow_nan=False, allow_infinity=False) | st.integers(-9, 9)}[hint]


def _contract(cls: type) -> list[tuple[str, Any, bool]]:
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], f.default is f.default_factory is MISSING)
            for f in fields(cls) if f.name != "written"]


@st.composite
def _documents(draw, cls: type) -> dict[str, Any]:
    """A dict of the shape `cls` reads: every required field, some optional ones, and some keys it does not name,
    in a drawn order."""
    names = {name for name, _, _ in _contract(cls)}
    doc = {name: draw(_values(hint)) for name, hint, required in _contract(cls) if required or draw(st.booleans())}
    if cls is Numbers and "schema" in doc:
        doc["schema"] = 1
    extra = draw(st.dictionaries(st.text(min_size=1, max_size=5).filter(lambda k: k not in names), PLAIN,
                                 max_size=2))
    items = list({**doc, **extra}.items())
    order = draw(st.permutations(range(len(items))))
    return dict(items[i] for i in order)


def _typed_fields(doc: dict[str, Any], cls: type, path: str = "") -> list[tuple[str, Any, bool, dict, str]]:
    """Every field of the contract present in `doc` (nested entries included): (its name as an error names it, its
    type, whether it is required, the object holding it, its key)."""
    out = []
    for name, hint, required in _contract(cls):
        if name not in doc:
            continue
        where = f"{path}.{name}" if path else name
        out.append((where, hint, required, doc, name))
        entry = next((h for h in _parts(hint) if isinstance(h, type) and issubclass(h, Entry)), None)
        inner = next((typing.get_args(h)[0] for h in _parts(hint) if typing.get_origin(h) is list), None)
        if entry is not None and type(doc[name]) is dict:
            out += _typed_fields(doc[name], entry, where)
        elif isinstance(inner, type) and issubclass(inner, Entry) and type(doc[name]) is list:
            for i, x in enumerate(doc[name]):
                out += _typed_fields(x, inner, f"{where}[{i}]")
    return out


def _text(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


@SETTINGS
@given(st.sampled_from([RunInfo, Numbers]).flatmap(lambda cls: st.tuples(st.just(cls), _documents(cls))))
def test_a_document_read_through_its_contract_is_written_back_byte_for_byte(tmp_path, case):
    cls, doc = case
    path = tmp_path / "doc.json"
    path.write_text(_text(doc))
    assert cls.read_file(path).text() == _text(doc)
    assert cls.from_dict(doc, path).to_dict() == doc


@st.composite
def _damaged(draw) -> tuple[type, str, str, str | None]:
    """(contract, file name, damaged text, the field the error must name; None: the text is no longer JSON)."""
    cls = draw(st.sampled_from([RunInfo, Numbers]))
    name = "run.json" if cls is RunInfo else "numbers.json"
    doc = draw(_documents(cls))
    how = draw(st.sampled_from(["drop", "retype", "truncate"]))
    if how == "truncate":
        text = _text(doc)
        return cls, name, text[:draw(st.integers(0, len(text.rstrip()) - 1))], None
    candidates = [f for f in _typed_fields(doc, cls) if (f[2] if how == "drop" else f[1] is not Any)]
    where, hint, _, holder, key = draw(st.sampled_from(candidates))
    if how == "drop":
        del holder[key]
    else:
        holder[key] = draw(st.sampled_from([v for v in OTHER_TYPE.values() if not _fits(v, hint)]))
    return cls, name, _text(doc), where


@SETTINGS
@given(_damaged())
def test_a_damaged_document_is_bad_input_naming_the_file_and_the_field(tmp_path, case):
    cls, name, text, field = case
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        cls.read_file(path)
    assert e.value.file == str(path)
    if field is None:
        assert e.value.line is not None and "not valid JSON" in e.value.message, e.value
    else:
        assert isinstance(e.value, BadRecord) and e.value.field == field, e.value


def _folder(tmp_path: Path, run: str, numbers: str) -> Path:
    """A results folder holding every file the commands look for, its run.json and numbers.json as given."""
    d = tmp_path / "results"
    d.mkdir(exist_ok=True)
    for f in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl", "report.md", "binding.json"):
        (d / f).write_text("")
    (d / "run.json").write_text(run)
    (d / "numbers.json").write_text(numbers)
    return d


@settings(SETTINGS, max_examples=15)
@given(damage=_damaged(), run=_documents(RunInfo), numbers=_documents(Numbers),
       command=st.sampled_from(["verify", "export", "view", "publish"]))
def test_every_command_refuses_a_damaged_document_with_exit_2_naming_file_and_field(
        tmp_path, capsys, damage, run, numbers, command):
    """The damage is planted in the one file the command reads first that the contract covers: verify reads run.json
    then numbers.json before anything else; export, view and publish read run.json."""
    cls, name, text, field = damage
    if command != "verify" and cls is Numbers:
        return
    d = _folder(tmp_path, *((text, _text(numbers)) if cls is RunInfo else (_text(run), text)))
    args = {"export": ["--out", str(tmp_path / "t.csv")], "publish": ["--out", str(tmp_path / "bundle")]}
    capsys.readouterr()
    assert main([command, str(d), *args.get(command, [])]) == 2
    err = capsys.readouterr().err
    where = f"error: {d / name}"
    assert err.startswith(f"{where}: field '{field}':" if field else f"{where}:1" if text.count("\n") == 0
                          else where), err
    assert "Traceback" not in err


def test_a_later_version_is_refused_and_an_absent_one_is_the_first(tmp_path):
    run = {"name": "r", "arms": ["a"], "question_ids": ["q1"], "judge": {"primary": "j"}}
    assert RunInfo.from_dict(run, "run.json").judge.primary == "j"  # a folder written before run.json had versions
    with pytest.raises(BadRecord) as e:
        RunInfo.from_dict({**run, "version": 2}, "run.json")
    assert e.value.field == "version" and "version 1 to 1" in e.value.message
    with pytest.raises(BadRecord) as e:
        Numbers.from_dict({"schema": 2}, "numbers.json")
    assert e.value.field == "schema"


def test_writing_numbers_that_break_the_contract_is_refused_before_the_file_is_written(tmp_path):
    from judge.analysis import write_numbers

    path = tmp_path / "numbers.json"
    with pytest.raises(BadRecord) as e:
        write_numbers({"schema": 1, "experiment": "x", "judge": "j", "questions": "three"}, path)
    assert e.value.field == "questions" and not path.exists()
