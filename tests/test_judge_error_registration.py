"""What a registration says gold does to its decisions: `[analysis] judge_error` and `[judge] min_gold_agreement`,
parsed with their defaults, and every bad value refused naming prereg.toml, the key's line and the key."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import BadInput
from registration.prereg import load_experiment

from conftest import ROOT

pytestmark = pytest.mark.unit

PREREG = (ROOT / "sealed" / "demo" / "prereg.toml").read_text()
JUDGE, ANALYSIS = "[judge]\n", "[analysis]\n"
assert PREREG.count(JUDGE) == 1 and PREREG.count(ANALYSIS) == 1


def registered(tmp_path, table: str, line: str):
    text = PREREG.replace(table, f"{table}{line}\n")
    (tmp_path / "prereg.toml").write_text(text)
    return text


def line_of(text: str, table: str, key: str) -> int:
    start = text.splitlines().index(table.strip())
    return next(no for no, line in enumerate(text.splitlines(), start=1) if no > start and line.startswith(key))


def test_the_defaults_report_and_set_no_floor(tmp_path):
    (tmp_path / "prereg.toml").write_text(PREREG)
    exp = load_experiment(tmp_path)
    assert exp.analysis.judge_error == "report" and exp.min_gold_agreement is None


@pytest.mark.parametrize("value", ["report", "decide"])
def test_judge_error_takes_report_or_decide(tmp_path, value):
    registered(tmp_path, ANALYSIS, f'judge_error = "{value}"')
    assert load_experiment(tmp_path).analysis.judge_error == value


@settings(max_examples=40, deadline=None)
@given(st.floats(-1, 1, allow_nan=False))
def test_a_floor_within_kappas_range_is_kept_exactly(value):
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        registered(Path(d), JUDGE, f"min_gold_agreement = {value!r}")
        assert load_experiment(Path(d)).min_gold_agreement == value


toml_not_a_number = st.sampled_from(['"0.4"', "true", "false", "[0.4]", "{ a = 1 }", "nan", "inf", "-inf"])
out_of_range = st.one_of(st.floats(min_value=1, exclude_min=True, allow_infinity=False),
                         st.floats(max_value=-1, exclude_max=True, allow_infinity=False),
                         st.integers(2, 10**6), st.integers(-10**6, -2)).map(repr)
not_a_mode = st.one_of(st.text(max_size=12).filter(lambda s: s not in ("report", "decide")).map(
    lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.sampled_from(["1", "true", '["report"]', '"Report"', '"decide "']))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.tuples(st.just(JUDGE), st.just("min_gold_agreement"), st.one_of(toml_not_a_number, out_of_range)),
                 st.tuples(st.just(ANALYSIS), st.just("judge_error"), not_a_mode)))
def test_a_bad_value_is_refused_naming_file_line_and_field(tmp_path_factory, case):
    table, key, value = case
    d = tmp_path_factory.mktemp("reg")
    text = registered(d, table, f"{key} = {value}")
    with pytest.raises(BadInput) as e:
        load_experiment(d)
    assert (e.value.file, e.value.line, e.value.field) == (str(d / "prereg.toml"), line_of(text, table, key), key), \
        str(e.value)
    assert "unknown setting" not in str(e.value)  # refused for its value: the key is a registered one
    if key == "min_gold_agreement" and value not in ("nan", "inf", "-inf") and not value.startswith(("\"", "t", "f",
                                                                                                      "[", "{")):
        assert math.isfinite(float(value)) and "[-1, 1]" in str(e.value)


def test_the_power_before_labels_defaults_to_80_percent_at_a_correlation_of_one_half(tmp_path):
    (tmp_path / "prereg.toml").write_text(PREREG)
    an = load_experiment(tmp_path).analysis
    assert (an.target_power, an.assumed_gold_correlation) == (0.8, 0.5)
    registered(tmp_path, ANALYSIS, "target_power = 0.9\nassumed_gold_correlation = 0")
    an = load_experiment(tmp_path).analysis
    assert (an.target_power, an.assumed_gold_correlation) == (0.9, 0.0)


not_a_power = st.one_of(st.floats(min_value=1, allow_infinity=False), st.floats(max_value=0, allow_infinity=False),
                        st.integers(1, 10**6), st.integers(-10**6, 0)).map(repr)
not_a_correlation = st.one_of(st.floats(min_value=1, exclude_min=True, allow_infinity=False),
                              st.floats(max_value=-1e-9, allow_infinity=False),
                              st.integers(2, 10**6), st.integers(-10**6, -1)).map(repr)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.tuples(st.just("target_power"), st.one_of(toml_not_a_number, not_a_power)),
                 st.tuples(st.just("assumed_gold_correlation"), st.one_of(toml_not_a_number, not_a_correlation))))
def test_a_bad_target_power_or_assumed_correlation_is_refused_naming_file_line_and_field(tmp_path_factory, case):
    key, value = case
    d = tmp_path_factory.mktemp("reg")
    text = registered(d, ANALYSIS, f"{key} = {value}")
    with pytest.raises(BadInput) as e:
        load_experiment(d)
    assert (e.value.file, e.value.line, e.value.field) == (str(d / "prereg.toml"), line_of(text, ANALYSIS, key), key), \
        str(e.value)
    assert "unknown setting" not in str(e.value)
