"""The JSON Schemas emitted from the contracts (core/records/schema.py), checked by a peer validator (jsonschema):

- each is a valid draft 2020-12 schema, and the documents and raw records a run wrote (an older version's folder,
  tests/data/legacy, and a run of this version) are valid under it;
- a document or record drawn from the contract's own field types (tests/test_documents.py's generators), with one
  planted fault or none, is refused by the schema exactly when the contract's reader refuses it, and at the same
  field path: a required field dropped, a field of another JSON type at any depth, a version out of range, a record of
  another kind. Keys the contract does not name are planted too, and both accept them.
"""
from __future__ import annotations

import ast
import dataclasses
import json
import re
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_documents import OTHER_TYPE, SECTIONS, _contract, _documents, _fits, _parts, _typed_fields

from core.errors import BadRecord
from core.records import Document, Entry, Numbers, Record, RunInfo
from core.records.check import BOOKKEEPING
from core.records.schema import CONTRACTS, schema, schemas

LEGACY = Path(__file__).parent / "data" / "legacy" / "out"
VALIDATORS = {name: jsonschema.Draft202012Validator(s) for name, s in schemas().items()}
RAW_FILES = {"answers.jsonl": "answer", "judgments.jsonl": "judgment", "retests.jsonl": "retest"}


def _line_kind(d: dict[str, Any]) -> str:
    """A blinding.jsonl line's kind, as the file's format defines it: its `type`, else a pair key names a hypothesis."""
    return d.get("type") or ("pair" if "hypothesis" in d else "blinding")


def _invalid(name: str, doc: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATORS[name].iter_errors(doc)]


def _folder_is_valid(folder: Path) -> int:
    """Every document and raw record of a results folder checked against its schema; how many were checked."""
    checked = 0
    for file, name in (("binding.json", "binding"), ("run.json", "run"), ("numbers.json", "numbers")):
        assert _invalid(name, json.loads((folder / file).read_text())) == [], file
        checked += 1
    for file in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl", "retests.jsonl"):
        if not (folder / file).exists():
            continue
        for i, line in enumerate((folder / file).read_text().splitlines(), 1):
            d = json.loads(line)
            assert _invalid(RAW_FILES.get(file) or _line_kind(d), d) == [], f"{file}:{i}"
            checked += 1
    return checked


@pytest.mark.unit
def test_every_schema_is_a_draft_2020_12_schema_naming_every_contract_field():
    for name, cls in CONTRACTS.items():
        s = schema(cls)
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        fields = {f.name for f in dataclasses.fields(cls)} - BOOKKEEPING
        read_first = {cls.VERSION_KEY} if issubclass(cls, Document) else {"type", "version"}  # checked before them
        assert set(s["properties"]) == fields | read_first, name
        assert s["required"] == [f.name for f in dataclasses.fields(cls) if f.name in fields
                                 and f.default is f.default_factory is dataclasses.MISSING], name
    assert set(schema(Numbers)["$defs"]) >= {"Comparison", "Result", "JudgeError", "Estimate", "Stratum", "Cell"}


@pytest.mark.unit
def test_a_folder_written_by_the_previous_version_is_valid():
    assert _folder_is_valid(LEGACY) > 10


@pytest.mark.slow
def test_a_run_of_this_version_is_valid(small_run):
    assert _folder_is_valid(small_run) > 10


def _path(field: str) -> list[str | int]:
    """A contract error's field path (`comparisons[2].judge_error.ppi.low`, `judge_totals['j/c'].scored`) as the list
    of keys and indexes a JSON Schema error names."""
    token = re.compile(r"""\.?(\w+)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]""")
    out: list[str | int] = []
    pos = 0
    while pos < len(field):
        m = token.match(field, pos)
        assert m, f"cannot read the field path {field!r} at {pos}"
        name, index, key = m.groups()
        out.append(name if name is not None else int(index) if index is not None else ast.literal_eval(key))
        pos = m.end()
    return out


def _places(error: jsonschema.ValidationError) -> list[list[str | int]]:
    """Where a schema error says the value is wrong: inside a union (anyOf), where the branch that got deepest into
    the value failed; a required property's error names the first one missing, in the contract's order, as the
    reader meets them."""
    if error.context:
        branches: dict[Any, list[jsonschema.ValidationError]] = {}
        for e in error.context:
            branches.setdefault(e.relative_schema_path[0], []).append(e)
        best = max(branches.values(), key=lambda es: max(len(e.absolute_path) for e in es))
        return [p for e in best for p in _places(e)]
    where = list(error.absolute_path)
    if error.validator == "required":
        where.append(next(p for p in error.validator_value if p not in error.instance))
    return [where]


def _agree(where: list[str | int], errors: list[jsonschema.ValidationError], within: list[str | int]) -> bool:
    """Whether the schema's errors name the place the reader named, and none outside the planted field `within`."""
    places = [p for e in errors for p in _places(e)]
    return where in places and all(p[:len(within)] == within for p in places)


@st.composite
def _planted(draw, name: str) -> tuple[dict[str, Any], list[str | int] | None]:
    """A document or record of the contract `name`, drawn from its field types with keys it does not name beside
    them, and one fault planted in it or none: (the value, the path of the fault; None: no fault)."""
    cls = CONTRACTS[name]
    doc = draw(_documents(cls))
    if issubclass(cls, Record):  # its kind and version as a record of this kind is written, or absent
        doc.pop("type", None), doc.pop("version", None)
        if draw(st.booleans()):
            doc.update(type=cls.TYPE, version=draw(st.integers(1, cls.VERSION)))
    key = cls.VERSION_KEY if issubclass(cls, Document) else "version"
    if key in doc or issubclass(cls, Document) and draw(st.booleans()):
        doc[key] = draw(st.integers(1, cls.VERSION))
    how = draw(st.sampled_from(["none", "drop", "retype", "version", "kind"]))
    if how == "version":  # a version this reader does not read (1.0, an integer to JSON Schema, is left out)
        doc[key] = draw(st.sampled_from([0, cls.VERSION + 1, -3, "1", 1.5, True, None, [1]]))
        return doc, [key]
    if how == "kind" and issubclass(cls, Record):
        doc["type"] = draw(st.sampled_from([c.TYPE for c in CONTRACTS.values()
                                            if issubclass(c, Record) and c.TYPE != cls.TYPE]))
        return doc, ["type"]
    candidates = [f for f in _typed_fields(doc, cls) if (f[2] if how == "drop" else f[1] is not Any)]
    if how not in ("drop", "retype") or not candidates:
        return doc, None
    where, hint, _, holder, k = draw(st.sampled_from(candidates))
    if how == "drop":
        del holder[k]
    else:
        holder[k] = draw(st.sampled_from([v for v in OTHER_TYPE.values() if not _fits(v, hint)]))
    return doc, _path(where)


def _read(cls: type, doc: dict[str, Any]) -> None:
    if issubclass(cls, Document):
        cls.from_dict(doc, "doc.json")
    else:
        cls.from_dict(doc, "doc.jsonl", 1)


@pytest.mark.unit
@pytest.mark.parametrize("name", list(CONTRACTS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_schema_refuses_what_the_reader_refuses_at_the_same_field(name, data):
    cls = CONTRACTS[name]
    doc, fault = data.draw(_planted(name))
    errors = list(VALIDATORS[name].iter_errors(doc))
    if fault is None:
        assert errors == [], [e.message for e in errors]
        _read(cls, doc)  # the contract reads it too, the keys it does not name included
        return
    with pytest.raises(BadRecord) as e:
        _read(cls, doc)
    assert _path(e.value.field) == fault, e.value
    assert errors and _agree(fault, errors, fault), [e.message for e in errors]


@pytest.mark.unit
def test_planted_faults_in_a_real_document_are_named_alike_by_the_schema_and_the_reader():
    """One fault at a time in the older version's numbers.json and run.json, each written out by hand."""
    numbers = json.loads((LEGACY / "numbers.json").read_text())
    run = json.loads((LEGACY / "run.json").read_text())
    assert numbers["comparisons"][0]["result"] is not None and "judge" in run

    def faults():
        wrong = json.loads(json.dumps(numbers))
        wrong["comparisons"][0]["result"]["n"] = "12"  # an int given as text
        yield Numbers, "numbers", wrong, ["comparisons", 0, "result", "n"]
        wrong = json.loads(json.dumps(numbers))
        del wrong["judge_totals"][next(iter(wrong["judge_totals"]))]["scored"]  # a required count missing
        yield Numbers, "numbers", wrong, ["judge_totals", next(iter(numbers["judge_totals"])), "scored"]
        wrong = {k: v for k, v in run.items() if k != "judge"}  # run.json's judge missing
        yield RunInfo, "run", wrong, ["judge"]
        yield RunInfo, "run", {**run, "version": RunInfo.VERSION + 1}, ["version"]  # a later version

    for cls, name, doc, where in faults():
        with pytest.raises(BadRecord) as e:
            cls.from_dict(doc, f"{name}.json")
        assert _path(e.value.field) == where
        errors = list(VALIDATORS[name].iter_errors(doc))
        assert errors and _agree(where, errors, where)
    extra = {**run, "viewer_note": {"any": ["thing"]}}  # a key the contract does not name: kept, and valid
    assert RunInfo.from_dict(extra, "run.json").to_dict()["viewer_note"] == {"any": ["thing"]}
    assert _invalid("run", extra) == []


# every JSON type, and values of the right type holding a wrong one (entries, a tuple's length, a Literal's word)
PLANTS = [7, 2.5, "x", True, [], {}, None, [0, 0, 0, 0], [7], ["x"], [[7, "x"]], {"k": 7}, {"k": "x"}, {"k": [7]}]


def _minimal(hint: Any) -> Any:
    """The smallest value of type `hint` its reader accepts: a contract's required fields only."""
    h = next((p for p in _parts(hint) if p is not type(None)), type(None))
    if h is Any or h is type(None):
        return None
    if isinstance(h, type) and (issubclass(h, Entry) or issubclass(h, Record)):
        return {name: _minimal(t) for name, t, required in _contract(h) if required}
    origin, args = typing.get_origin(h), typing.get_args(h)
    if origin is typing.Literal:
        return args[0]
    if origin is tuple:
        return [_minimal(a) for a in args]
    return {list: [], dict: {}, str: "", int: 0, float: 0.5, bool: False}[origin or h]


def _reads(cls: type, doc: dict[str, Any]) -> BadRecord | None:
    """The contract's reader on `doc`: None if it reads it, else its error."""
    try:
        if issubclass(cls, Document):
            cls.from_dict(doc, "doc.json")
        elif issubclass(cls, Record):
            cls.from_dict(doc, "doc.jsonl", 1)
        else:
            cls.read(doc, "doc.json")
    except BadRecord as e:
        return e
    return None


@pytest.mark.unit
@pytest.mark.parametrize("cls", sorted({*SECTIONS, *CONTRACTS.values()}, key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_every_field_of_every_contract_refuses_in_the_schema_what_the_reader_refuses(cls):
    """Each field of each contract (a document, a section, a raw record), in the smallest document the reader
    accepts: left out, and given each of PLANTS. The schema and the reader agree on every one, and a refusal is named
    at the same path, inside the planted field."""
    validator = jsonschema.Draft202012Validator(schema(cls))
    base = _minimal(cls)
    assert _reads(cls, base) is None and list(validator.iter_errors(base)) == []
    for name, _, required in _contract(cls):
        for planted in ["absent", *PLANTS]:
            doc = {k: v for k, v in base.items() if k != name}
            if planted != "absent":
                doc[name] = json.loads(json.dumps(planted))
            refused, errors = _reads(cls, doc), list(validator.iter_errors(doc))
            case = f"{cls.__name__}.{name} = {planted!r}"
            assert (refused is None) == (errors == []), f"{case}: {refused}, {[e.message for e in errors]}"
            if refused is not None:
                where = _path(refused.field)
                assert _agree(where, errors, [name]), f"{case}: {refused}"
            elif planted == "absent":
                assert not required, case
