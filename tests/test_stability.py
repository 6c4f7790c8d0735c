"""Stability across K samples (judge.numbers.stats.stability, judge.stability, judge.verify.second_path.stability):
pass^k, pass@k, the pass rate and the agreement of a question's samples, on planted scores against hand computations,
both paths; the bootstrap interval against a resampling written here; K = 1; a sample without a score; the registered
pass score's checks.
"""
from __future__ import annotations

import json
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from core.errors import BadInput
from core.records import Judgment, KeyRow, Numbers
from judge.numbers.stability import stability_section
from judge.numbers.stats.stability import mean_interval, question_values, stability
from judge.verify.second_path.stability import recompute
from registration.prereg import Analysis, load_experiment
from registration.questions import Question

from conftest import ROOT

pytestmark = pytest.mark.unit

# K = 3 samples of 4 questions on the 0..2 scale, pass score 2
PLANTED = {"q1": [2, 2, 2], "q2": [2, 1, 2], "q3": [1, 1, 0], "q4": [0, 0, 0]}
# by hand, per question (pass^k, pass@k, pass rate, unanimous, agreement = equal pairs of the 3):
#   q1 [2,2,2]: 1, 1, 3/3, 1, 3/3    q2 [2,1,2]: 0, 1, 2/3, 0, 1/3 (only samples 1 and 3 agree)
#   q3 [1,1,0]: 0, 0, 0/3, 0, 1/3    q4 [0,0,0]: 0, 0, 0/3, 1, 3/3
HAND = {"pass_hat_k": Fraction(1, 4), "pass_at_k": Fraction(2, 4), "pass_rate": Fraction(5, 3) / 4,
        "unanimous": Fraction(2, 4), "agreement": Fraction(8, 3) / 4}


def test_a_questions_values_are_the_definitions_by_hand():
    assert question_values([2, 1, 2], 2) == {"pass_hat_k": 0, "pass_at_k": 1, "pass_rate": Fraction(2, 3),
                                             "unanimous": 0, "agreement": Fraction(1, 3)}
    assert question_values([1, 1, 1, 0], 1) == {"pass_hat_k": 0, "pass_at_k": 1, "pass_rate": Fraction(3, 4),
                                                "unanimous": 0, "agreement": Fraction(3, 6)}


def test_the_planted_k3_set_matches_the_hand_computation():
    got = stability(PLANTED, 2, None, 2000, 7)
    for name, want in HAND.items():
        assert got[name].estimate == float(want), name
        assert got[name].ci_low <= got[name].estimate <= got[name].ci_high, name


def _resampled(values: list[Fraction], resamples: int, seed: int) -> tuple[float, float]:
    """The documented scheme written again: the distinct values in ascending order, each resample how often each is
    drawn (numpy's multinomial over all questions), the resample means and their 2.5% and 97.5% linear quantiles."""
    distinct = sorted(set(values))
    freq = np.array([values.count(v) for v in distinct], dtype=float)
    counts = np.random.default_rng(seed).multinomial(len(values), freq / len(values), size=resamples)
    means = counts @ np.array([float(v) for v in distinct]) / len(values)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(lo), float(hi)


@pytest.mark.parametrize("seed", [0, 7, 12345])
def test_the_interval_is_the_percentile_bootstrap_of_the_documented_draws(seed):
    rng = np.random.default_rng(seed + 1)
    samples = {f"q{i}": [int(x) for x in rng.integers(0, 3, 3)] for i in range(40)}
    got = stability(samples, 2, None, 3000, seed)
    for name in ("pass_hat_k", "pass_at_k", "pass_rate", "unanimous", "agreement"):
        values = [question_values(s, 2)[name] for s in samples.values()]
        lo, hi = _resampled(values, 3000, seed)
        assert got[name].ci_low == pytest.approx(lo, abs=1e-12), name
        assert got[name].ci_high == pytest.approx(hi, abs=1e-12), name


def test_clusters_are_resampled_whole():
    # three clusters of two questions, of equal size: a resample of clusters is a resample of the cluster means
    values = [Fraction(1), Fraction(1), Fraction(1), Fraction(0), Fraction(0), Fraction(0)]
    labels = [("cluster", c) for c in "aabbcc"]
    got = mean_interval(values, labels, 3000, 3)
    assert (got.ci_low, got.ci_high) == pytest.approx(_resampled([Fraction(1), Fraction(1, 2), Fraction(0)], 3000, 3),
                                                      abs=1e-12)
    alone = mean_interval(values, None, 3000, 3)
    assert (alone.ci_low, alone.ci_high) == pytest.approx(_resampled(values, 3000, 3), abs=1e-12)
    assert (got.ci_low, got.ci_high) != (alone.ci_low, alone.ci_high)


def test_at_k1_pass_hat_k_pass_at_k_and_the_pass_rate_are_one_number_and_agreement_is_undefined():
    samples = {f"q{i}": [s] for i, s in enumerate([2, 2, 1, 0, 2, 1, 2])}
    got = stability(samples, 2, None, 1000, 5)
    assert got["pass_hat_k"] == got["pass_at_k"] == got["pass_rate"]
    assert got["pass_rate"].estimate == 4 / 7  # by hand: four of the seven single samples score 2
    assert got["unanimous"] is None and got["agreement"] is None


# ---------------------------------------------------------------- both paths on the raw records


def _records(planted: dict[str, list[int | None]]) -> tuple[list[KeyRow], list[Judgment]]:
    """Blinding keys and the judge's verdicts of arm "a" at "Q8_0": a None score is an unscored verdict."""
    keys, verdicts = [], []
    for q, scores in planted.items():
        for i, s in enumerate(scores):
            label = f"L{q}{i}"
            keys.append(KeyRow(label=label, row=f"r{q}{i}", arm="a", quant="Q8_0", question_id=q, sample=i,
                               scrubbed=0))
            verdicts.append(Judgment(judge="j", label=label, question_id=q, status="unscored" if s is None else
                                     "scored", score=s, fields=None, repaired=False, error=None, prompt_sha256="x",
                                     attempts=[], latency_s=0.0, prompt_tokens=0, completion_tokens=0,
                                     cached_tokens=0))
    return keys, verdicts


def _experiment(k: int, pass_score: float | None) -> SimpleNamespace:
    arm = SimpleNamespace(samples=k, quants=("Q8_0",))
    return SimpleNamespace(analysis=Analysis(resamples=1000, seed=11, pass_score=pass_score), arm=lambda _: arm,
                           rubric="correctness", dir=ROOT / "sealed" / "demo")


def _both(tmp_path, planted, k, pass_score=None, clusters=None):
    keys, verdicts = _records(planted)
    questions = {q: Question(q, "?", None, (), (clusters or {}).get(q), "exam.jsonl") for q in planted}
    exp = _experiment(k, pass_score)
    main = stability_section(exp, ["a"], keys, verdicts, "j", questions, (0, 1, 2)).to_dict()
    with open(tmp_path / "blinding.jsonl", "w") as f:
        for key in keys:
            f.write(json.dumps(key.to_dict()) + "\n")
    second = recompute({"judge": {"primary": "j"}, "arms": ["a"]}, tmp_path, exp, {q: [] for q in planted},
                       dict(clusters or {}), [v.to_dict() for v in verdicts])
    return main, second


def test_both_paths_give_the_hand_computation_on_the_planted_records(tmp_path):
    main, second = _both(tmp_path, PLANTED, 3)
    assert main == second
    cell = main["cells"][0]
    assert main["pass_score"] == 2  # none registered: the rubric's highest score
    assert (cell["k"], cell["questions"], cell["incomplete"], cell["units"]) == (3, 4, 0, 4)
    for name, want in HAND.items():
        assert cell[name]["estimate"] == float(want), name
    Numbers.read({**_numbers_stub(), "stability": main}, "numbers.json")  # the contract reads what the writer wrote


def _numbers_stub() -> dict:
    return {"experiment": "e", "judge": "j", "questions": 0, "raw_sha256": {}, "cells": [], "comparisons": [],
            "subsets": [], "quant_check": {"means": {}}, "judge_totals": {}, "amendments": [],
            "judges": {"panel": [], "means": {}, "length_bias": {}, "pairwise": {}, "agreement": None}}


def test_a_question_with_a_sample_without_a_score_is_left_out_and_counted_never_a_fail(tmp_path):
    # q5's second sample is unscored: counting it as a fail would make pass^k 1/5 (and keeping its two samples would
    # make q5 a pass); the rule leaves q5 out, so every statistic is the planted set's and q5 is counted incomplete
    planted = {**PLANTED, "q5": [2, None, 2]}
    main, second = _both(tmp_path, planted, 3)
    assert main == second
    cell = main["cells"][0]
    assert (cell["questions"], cell["incomplete"]) == (4, 1)
    for name, want in HAND.items():
        assert cell[name]["estimate"] == float(want), name


def test_a_registered_pass_score_and_clusters_in_both_paths(tmp_path):
    # pass score 1: q1 and q2 pass every sample, q3 two of three, q4 none; by hand pass^k = 2/4, pass@k = 3/4,
    # pass rate (1 + 1 + 2/3 + 0) / 4 = 2/3
    clusters = {"q1": "c1", "q2": "c1", "q3": None, "q4": "c2"}
    main, second = _both(tmp_path, PLANTED, 3, pass_score=1, clusters=clusters)
    assert main == second
    cell = main["cells"][0]
    assert main["pass_score"] == 1 and cell["resampling"] == "clusters" and cell["units"] == 3
    assert [cell[n]["estimate"] for n in ("pass_hat_k", "pass_at_k", "pass_rate")] == [0.5, 0.75, 2 / 3]


def test_no_complete_question_gives_no_estimate(tmp_path):
    main, second = _both(tmp_path, {"q1": [2, None]}, 2)
    assert main == second
    cell = main["cells"][0]
    assert cell["questions"] == 0 and cell["incomplete"] == 1
    assert all(cell[n] is None for n in ("pass_hat_k", "pass_at_k", "pass_rate", "unanimous", "agreement"))


# ---------------------------------------------------------------- the registered pass score


@pytest.mark.parametrize("value, message", [('"high"', "must be a number"), ("true", "must be a number"),
                                            ("nan", "must be a number")])
def test_a_pass_score_that_is_not_a_number_is_refused_naming_it(tmp_path, value, message):
    exp = _demo_with(tmp_path, f"pass_score = {value}")
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert e.value.field == "pass_score" and message in str(e.value)


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "3"])
def test_a_pass_score_that_does_not_split_the_scale_is_refused_before_any_call(tmp_path, value):
    from judge.judging.preflight import check_pass_score
    from registration.rubric import load_rubric

    exp = load_experiment(_demo_with(tmp_path, f"pass_score = {value}"))
    with pytest.raises(BadInput) as e:
        check_pass_score(exp, [load_rubric("correctness")])
    assert e.value.field == "pass_score" and e.value.line is not None and "0..2" in str(e.value)


@pytest.mark.parametrize("value", ["1", "2", "1.5"])
def test_a_pass_score_inside_the_scale_is_accepted(tmp_path, value):
    from judge.judging.preflight import check_pass_score
    from registration.rubric import load_rubric

    exp = load_experiment(_demo_with(tmp_path, f"pass_score = {value}"))
    check_pass_score(exp, [load_rubric("correctness")])
    assert exp.analysis.pass_score == float(value)


def _demo_with(tmp_path, line: str):
    import shutil

    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    text = (exp / "prereg.toml").read_text().replace("[analysis]\n", f"[analysis]\n{line}\n")
    (exp / "prereg.toml").write_text(text)
    return exp
