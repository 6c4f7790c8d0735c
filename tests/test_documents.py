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
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from core import records
from core.errors import BadInput, BadRecord
from core.records import Document, Entry, Numbers, RunInfo
from core.records.check import BOOKKEEPING
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
    if typing.get_origin(hint) is typing.Literal:
        return type(value) is str and value in typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        return type(value) is list and len(value) == len(args) and all(map(_fits, value, args))
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
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(_values(args[0]) if args else PLAIN, max_size=2)
    if origin is tuple:
        return st.tuples(*map(_values, args)).map(list)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), _values(args[1]) if args else PLAIN, max_size=2)
    return {str: st.text(max_size=6), int: st.integers(-10**6, 10**6), bool: st.booleans(),
            float: st.floats(allow_nan=False, allow_infinity=False) | st.integers(-9, 9)}[hint]


def _contract(cls: type) -> list[tuple[str, Any, bool]]:
    hints = typing.get_type_hints(cls)
    return [(f.name, hints[f.name], f.default is f.default_factory is MISSING)
            for f in fields(cls) if f.name not in BOOKKEEPING]


@st.composite
def _documents(draw, cls: type) -> dict[str, Any]:
    """A dict of the shape `cls` reads: every required field, some optional ones, and some keys it does not name,
    in a drawn order."""
    names = {name for name, _, _ in _contract(cls)}
    doc = {name: draw(_values(hint)) for name, hint, required in _contract(cls) if required or draw(st.booleans())}
    if cls in (Numbers, RunInfo):  # of this version: an older one is read migrated (tests/test_versions.py)
        doc[cls.VERSION_KEY] = cls.VERSION
    extra = draw(st.dictionaries(st.text(min_size=1, max_size=5).filter(lambda k: k not in names), PLAIN,
                                 max_size=2))
    items = list({**doc, **extra}.items())
    order = draw(st.permutations(range(len(items))))
    return dict(items[i] for i in order)


def _typed_fields(doc: dict[str, Any], cls: type, path: str = "") -> list[tuple[str, Any, bool, Any, Any]]:
    """Every field of the contract present in `doc`, nested entries and the entries of typed lists and objects
    included: (its name as an error names it, its type, whether it is required, the object or list holding it, its
    key or index)."""
    out = []
    for name, hint, required in _contract(cls):
        if name in doc:
            where = f"{path}.{name}" if path else name
            out.append((where, hint, required, doc, name))
            out += _inside(doc[name], hint, where)
    return out


def _inside(value: Any, hint: Any, where: str) -> list[tuple[str, Any, bool, Any, Any]]:
    """The typed fields within a value of type `hint`: an entry's fields, a typed list's or object's entries (never
    required: an object may lack any key, a list any entry)."""
    out = []
    for h in _parts(hint):
        origin, args = typing.get_origin(h), typing.get_args(h)
        if isinstance(h, type) and issubclass(h, Entry) and type(value) is dict:
            return _typed_fields(value, h, where)
        if origin is tuple and type(value) is list and len(value) == len(args):
            for i, (x, a) in enumerate(zip(value, args, strict=True)):
                out += [(f"{where}[{i}]", a, False, value, i), *_inside(x, a, f"{where}[{i}]")]
            return out
        if origin is list and type(value) is list and args and args[0] is not Any:
            for i, x in enumerate(value):
                out += [(f"{where}[{i}]", args[0], False, value, i), *_inside(x, args[0], f"{where}[{i}]")]
            return out
        if origin is dict and type(value) is dict and args and args[1] is not Any:
            for k, x in value.items():
                out += [(f"{where}[{k!r}]", args[1], False, value, k), *_inside(x, args[1], f"{where}[{k!r}]")]
            return out
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
    run = {"name": "r", "arms": ["a"], "question_ids": ["q1"], "judge": {"primary": "j", "identity": {"backend": "b"}},
           "audit_gate": "none registered"}
    assert RunInfo.from_dict(run, "run.json").judge.primary == "j"  # a folder written before run.json had versions
    with pytest.raises(BadRecord) as e:
        RunInfo.from_dict({**run, "version": 3}, "run.json")
    assert e.value.field == "version" and "version 1 to 2" in e.value.message
    with pytest.raises(BadRecord) as e:
        Numbers.from_dict({"schema": 3}, "numbers.json")
    assert e.value.field == "schema"


def test_writing_numbers_that_break_the_contract_is_refused_before_the_file_is_written(tmp_path):
    from dataclasses import replace

    from judge.numbers.analysis import write_numbers

    path = tmp_path / "numbers.json"
    numbers = Numbers.read_file(Path(__file__).parent / "data" / "legacy" / "out" / "numbers.json")
    with pytest.raises(BadRecord) as e:
        write_numbers(replace(numbers, questions="three"), path)
    assert e.value.field == "questions" and not path.exists()


SECTIONS = sorted((c for c in vars(records).values() if isinstance(c, type) and issubclass(c, Entry)
                   and c not in (Entry, Document) and not issubclass(c, Document)), key=lambda c: c.__name__)


@st.composite
def _damaged_entry(draw, cls: type) -> tuple[dict[str, Any], str]:
    """An entry of `cls` with one typed field (its own or one nested in it) dropped, if required, or given a value of
    another JSON type; and the path the error must name."""
    doc = draw(_documents(cls))
    candidates = [f for f in _typed_fields(doc, cls, "x") if f[1] is not Any]
    assume(candidates)  # an entry of optional fields only may be drawn without any
    where, hint, required, holder, key = draw(st.sampled_from(candidates))
    if required and draw(st.booleans()):
        del holder[key]
    else:
        holder[key] = draw(st.sampled_from([v for v in OTHER_TYPE.values() if not _fits(v, hint)]))
    return doc, where


@pytest.mark.parametrize("cls", SECTIONS, ids=lambda c: c.__name__)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_damage_to_any_section_names_the_file_and_the_field_path(cls, data):
    """Each section of run.json, numbers.json and binding.json (an entry at `x` in its file): the error names the file
    and the field's whole path, a list's index and an object's key included (`x.judge_error.ppi.strata[0].low`)."""
    doc, where = data.draw(_damaged_entry(cls))
    with pytest.raises(BadRecord) as e:
        cls.read(doc, "numbers.json", prefix="x")
    assert e.value.file == "numbers.json" and e.value.field == where, e.value
