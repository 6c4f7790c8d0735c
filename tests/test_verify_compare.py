"""Verify compares any stored JSON value with any recomputed one without raising: a number edited into a list, a
string, null or an object is a mismatch, never a traceback; an entry renamed (a comparison's id) is one finding naming
its place and the name expected there."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.verify.compare import same

pytestmark = pytest.mark.unit

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                                  max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(a=JSON, b=JSON)
def test_any_two_json_values_compare_without_raising(a, b):
    assert same(a, b) in (True, False)
    assert same(a, a)


@settings(max_examples=100, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
       other=st.none() | st.booleans() | st.text(max_size=3) | st.lists(st.floats(allow_nan=False), max_size=2))
def test_a_float_against_anything_but_a_number_is_a_mismatch(x, other):
    assert not same(x, other) and not same(other, x)


def test_floats_within_the_tolerance_are_the_same_and_beyond_it_not():
    assert same(0.1 + 0.2, 0.3) and same(1, 1.0)
    assert not same(True, 1.0) and not same(0.0, False) and not same(None, 0.0)
    assert not same(0.3, 0.31)


@given(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=6, unique=True), st.data())
def test_an_entry_renamed_in_numbers_json_is_one_finding_naming_its_place_and_the_expected_name(ids, data):
    """Comparisons (and subsets, cells) named as the recomputation names them give no finding; one renamed to a name
    the recomputation does not have is named by its index, its name and the one expected there."""
    from judge.verify.compare import renamed_entries

    recomputed = {"comparisons": [{"id": i} for i in ids], "cells": [{"arm": "a", "quant": "q"}]}
    assert renamed_entries(recomputed, recomputed) == []
    at = data.draw(st.integers(0, len(ids) - 1))
    new = data.draw(st.text(min_size=1, max_size=4).filter(lambda n: n not in ids))
    stored = {**recomputed, "comparisons": [{"id": new if k == at else i} for k, i in enumerate(ids)]}
    assert renamed_entries(stored, recomputed) == [
        f"numbers.json comparisons[{at}] is named {new!r}: no registered hypothesis of this run is; "
        f"expected {ids[at]!r}"]


@pytest.mark.parametrize("before, now, said",
                         [(0, 4, True), (4, 6, True), (6, 4, True), (4, 4, False), (None, 0, False)])
def test_labels_given_after_the_run_are_named_first_with_how_to_fold_them_in(before, now, said):
    from judge.verify.earlier_versions import labels_since

    def numbers(human):
        return {} if human is None else {"judge_validity": {"gold": {"sources": {"labels": 0, "program": 0,
                                                                                  "human": human}}}}
    lines = labels_since(numbers(before), numbers(now))
    assert bool(lines) == said
    if said:
        assert lines[0].startswith(f"labels/: people's gold scores are {now} now, numbers.json was computed with "
                                   f"{before}") and "python -m judge run" in lines[0]
