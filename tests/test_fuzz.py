"""Fuzzing the parsers that read untrusted text: no crash, no hang, every failure a clean error."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import jsonl
from core.errors import BadInput
from judge.judging.verdict import parse_verdict
from registration.rubric import load_rubric

pytestmark = pytest.mark.unit

SCHEMA = load_rubric("correctness").schema
json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_verdict_parser_never_crashes_on_text(text):
    p = parse_verdict(text, SCHEMA)
    assert p.ok == (p.fields is not None) and (p.ok or p.error)
    if p.ok:
        assert p.fields["score"] in (0, 1, 2) and isinstance(p.fields["harmful"], bool)


@settings(max_examples=200, deadline=None)
@given(json_like)
def test_verdict_parser_validates_any_json(value):
    import json

    p = parse_verdict(json.dumps(value), SCHEMA)
    if p.ok:
        assert p.fields["score"] in (0, 1, 2)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_jsonl_reader_gives_records_or_a_bad_input(tmp_path, data):
    p = tmp_path / "f.jsonl"
    p.write_bytes(data)
    try:
        for no, rec in jsonl.read(p, required=("id",)):
            assert isinstance(rec, dict) and "id" in rec and no >= 1
    except BadInput as e:
        assert "f.jsonl" in str(e)
