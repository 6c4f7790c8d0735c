"""The review page's check of what it embeds (core.records.conform) against the JSON Schema emitted from the contracts,
held to a peer library: jsonschema (the test extra) says valid or not for the same documents, each damaged at a random
place, and the two agree; and a value the page cannot embed (a NaN, which JSON lacks) is bad input naming its field."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import BadInput
from core.records import Numbers, RunInfo
from core.records.conform import violation
from core.records.schema import schema
from judge.outputs.review import Review
from judge.outputs.view import conforming, review_data

pytestmark = pytest.mark.unit

LEGACY = Path(__file__).parent / "data" / "legacy" / "out"
DOCUMENTS = {"numbers": (schema(Numbers), json.loads((LEGACY / "numbers.json").read_text())),
             "run": (schema(RunInfo), json.loads((LEGACY / "run.json").read_text()))}
PEER = {name: jsonschema.Draft202012Validator(s) for name, (s, _) in DOCUMENTS.items()}
# what a damage puts in place of a value: every JSON type, an int and a fraction, and a string no enum holds
REPLACEMENTS = (None, True, 0, 3, -1, 1.5, "", "not a verdict", [], [1], {}, {"x": 1})


def places(value, path=()):
    """Every place inside a JSON value, as the keys and indices that reach it."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from places(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from places(v, (*path, i))


PLACES = {name: [p for p in places(doc) if p] for name, (_, doc) in DOCUMENTS.items()}


def damaged(doc, path, replacement, drop):
    out = copy.deepcopy(doc)
    *head, last = path
    parent = out
    for k in head:
        parent = parent[k]
    if drop and isinstance(parent, dict):
        del parent[last]
    else:
        parent[last] = replacement
    return out


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_document_its_contract_reads_conforms(name):
    s, doc = DOCUMENTS[name]
    assert violation(doc, s) is None
    PEER[name].validate(doc)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_check_agrees_with_jsonschema_wherever_a_document_is_damaged(data):
    name = data.draw(st.sampled_from(sorted(DOCUMENTS)))
    s, doc = DOCUMENTS[name]
    where = data.draw(st.sampled_from(PLACES[name]))
    bad = damaged(doc, where, data.draw(st.sampled_from(REPLACEMENTS)), data.draw(st.booleans()))
    assert (violation(bad, s) is None) == PEER[name].is_valid(bad), where


def test_a_field_the_damage_breaks_is_named_by_its_path():
    s, doc = DOCUMENTS["numbers"]
    bad = damaged(doc, ("comparisons", 0, "result", "n"), "40", False)
    assert violation(bad, s) == ("comparisons[0].result.n", "reads '40', which is not of type integer")
    bad = damaged(doc, ("judge_totals", next(iter(doc["judge_totals"])), "scored"), None, True)
    assert violation(bad, s) == (f"judge_totals[{next(iter(doc['judge_totals']))!r}].scored", "missing")


def test_the_page_refuses_a_number_json_cannot_hold_naming_the_file_and_field(tmp_path):
    text = (LEGACY / "numbers.json").read_text()
    doc = json.loads(text)
    doc["comparisons"][0]["result"]["se"] = float("nan")  # json writes NaN, which the contract reads as a float
    (tmp_path / "numbers.json").write_text(json.dumps(doc))
    numbers, run = Numbers.read_file(tmp_path / "numbers.json"), RunInfo.read_file(LEGACY / "run.json")
    data = review_data(Review(run, numbers, ("served",), (0, 1, 2), ()))
    with pytest.raises(BadInput) as e:
        conforming(data, tmp_path)
    assert str(e.value.file) == str(tmp_path / "numbers.json") and e.value.field == "comparisons[0].result.se"
    assert conforming(review_data(Review(run, Numbers.read_file(LEGACY / "numbers.json"), ("served",), (0, 1, 2), ())),
                      tmp_path)["numbers"] == {**json.loads(text), "schema": 2}  # a version 1 file, migrated
