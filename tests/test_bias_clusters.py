"""The judge-bias intervals resample whole clusters when the question set registers them, as the decisions do.

A planted set of clusters whose questions are perfectly correlated: each judge's interval and a same-family judge's
lift equal a peer's (numpy resampling the cluster means directly, and scipy's bootstrap of the cluster means within
Monte Carlo error) and are wider than the per-question interval. On generated scores and clusters, verify's second
path (judge.verify.second_path.biases, its own code) gives the main path's per-judge estimates, intervals, verdicts and
lifts.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.numbers.bias_checks import self_preference
from judge.numbers.biases import lift
from judge.numbers.comparisons import rubric_scale
from judge.verify.second_path.biases import judge_decision, judge_lift
from registration.prereg import load_experiment
from registration.questions import load_questions

from conftest import ROOT

pytestmark = pytest.mark.unit
SEED, RESAMPLES = 20261130, 2000


def _peer(cluster_values: list[float], size: int, resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile interval of the mean, resampling clusters of `size` identical questions: numpy's multinomial
    over the distinct cluster values (the documented scheme: ordered by value, drawn as often as they occur), each
    resample's mean the mean of its cluster values, quantiles by np.percentile."""
    values, freq = np.unique(np.array(cluster_values, dtype=float), return_counts=True)
    counts = np.random.default_rng(seed).multinomial(freq.sum(), freq / freq.sum(), size=resamples)
    means = (counts @ (values * size)) / (counts.sum(axis=1) * size)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def _correlated(k: int, size: int, seed: int) -> tuple[dict[str, int], dict[str, str]]:
    """k clusters of `size` questions; every question of a cluster has its cluster's value (perfect correlation)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-2, 3, k)
    d, clusters = {}, {}
    for c, v in enumerate(values):
        for i in range(size):
            d[f"c{c:02d}q{i}"], clusters[f"c{c:02d}q{i}"] = int(v), f"c{c:02d}"
    return d, clusters


def test_a_clustered_lift_is_the_peers_cluster_bootstrap_and_wider_than_the_per_question_one():
    from scipy import stats as sps

    per_q, clusters = _correlated(12, 4, seed=7)
    d = {"same": {q: Fraction(v) for q, v in per_q.items()}, "other": {q: Fraction(0) for q in per_q}}
    got = lift(d, "same", resamples=RESAMPLES, seed=SEED, clusters=clusters)
    flat = lift(d, "same", resamples=RESAMPLES, seed=SEED)
    values = [per_q[f"c{c:02d}q0"] for c in range(12)]
    assert (got.resampling, got.units, flat.resampling, flat.units) == ("clusters", 12, "questions", 48)
    assert (got.ci_low, got.ci_high) == pytest.approx(_peer(values, 4, RESAMPLES, SEED), abs=1e-12)
    ref = sps.bootstrap((np.array(values, dtype=float),), np.mean, n_resamples=20_000, method="percentile",
                        rng=np.random.default_rng(1)).confidence_interval
    se = np.std(values, ddof=1) / np.sqrt(12)
    assert abs(got.ci_low - ref.low) < 0.3 * se and abs(got.ci_high - ref.high) < 0.3 * se
    # four perfectly correlated questions per cluster: the per-question interval is about half as wide
    assert got.ci_high - got.ci_low > 1.5 * (flat.ci_high - flat.ci_low)


def test_a_question_without_a_cluster_is_a_unit_of_its_own():
    per_q, clusters = _correlated(5, 3, seed=2)
    clusters = {q: (None if q.endswith("q2") else c) for q, c in clusters.items()}
    d = {"same": {q: Fraction(v) for q, v in per_q.items()}, "other": {q: Fraction(0) for q in per_q}}
    got = lift(d, "same", resamples=200, seed=1, clusters=clusters)
    assert (got.resampling, got.units) == ("clusters", 5 + 5)


@pytest.fixture(scope="module")
def demo():
    exp = load_experiment(ROOT / "sealed" / "demo")
    exp = dataclasses.replace(exp, analysis=dataclasses.replace(exp.analysis, resamples=RESAMPLES))
    questions = load_questions(exp.set_paths())
    return exp, [q.id for q in questions], {q.id: q.cluster for q in questions}


def _scores(ids: list[str], base: dict[str, int], trained: dict[str, int]) -> dict:
    return {("base", "Q8_0"): {q: Fraction(base[q]) for q in ids},
            ("trained", "Q8_0"): {q: Fraction(trained[q]) for q in ids}}


def test_each_judges_interval_resamples_the_registered_clusters(demo):
    """Planted on the demo's questions: every question of a registered cluster gets its cluster's score difference;
    the judge's interval is the peer's cluster bootstrap (questions without a cluster resampled as units of their
    own), wider than the per-question one."""
    exp, ids, clusters = demo
    h = exp.hypotheses[0]
    # perfectly correlated clusters of equal size: the demo's clusters of 3, and nothing else
    ids = [q for q in ids if clusters[q] not in (None, "d01", "d04", "none")]
    groups = sorted({clusters[q] for q in ids})
    value = dict(zip(groups, [1, 0, 2, 1, 0, 2, 1, 2], strict=True))
    trained = {q: value[clusters[q]] for q in ids}
    local = _scores(ids, {q: 0 for q in ids}, trained)
    openai = _scores(ids, {q: 0 for q in ids}, {q: 0 for q in ids})
    scale = rubric_scale(exp, h, (0, 1, 2))
    sp = self_preference(h, exp, {"local": local, "openai": openai}, ids, scale, clusters).to_dict()
    mine = sp["judges"]["local"]
    assert (mine["resampling"], mine["units"]) == ("clusters", 8)
    peer = _peer(list(value.values()), 3, RESAMPLES, exp.analysis.seed)
    assert (mine["ci_low"], mine["ci_high"]) == pytest.approx(peer, abs=1e-12)
    flat = self_preference(h, exp, {"local": local, "openai": openai}, ids, scale, {}).to_dict()["judges"]["local"]
    assert (flat["resampling"], flat["units"]) == ("questions", 24)
    assert mine["ci_high"] - mine["ci_low"] > 1.4 * (flat["ci_high"] - flat["ci_low"])
    x = sp["lifts"]["local"]  # local shares the arms' family (smollm2): its lift, resampled the same way
    assert (x["resampling"], x["units"], x["ci_low"], x["ci_high"]) == ("clusters", 8, mine["ci_low"],
                                                                         mine["ci_high"])


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=40, max_size=40), st.lists(st.integers(0, 2), min_size=40, max_size=40),
       st.lists(st.integers(0, 2), min_size=40, max_size=40), st.lists(st.sampled_from([None, "k1", "k2", "k3", "k4"]),
                                                                         min_size=40, max_size=40),
       st.sampled_from(["score", "bootstrap", "bootstrap_and_t"]), st.sampled_from(["percentile", "bca"]))
def test_verify_recomputes_each_judges_interval_verdict_and_lift_by_its_own_code(demo, base, trained, other,
                                                                                 cluster_of, rule, method):
    exp, ids, _ = demo
    exp = dataclasses.replace(exp, analysis=dataclasses.replace(exp.analysis, rule=rule, method=method,
                                                                resamples=300))
    h = exp.hypotheses[0]
    clusters = dict(zip(ids, cluster_of, strict=True))
    local = _scores(ids, dict(zip(ids, base, strict=True)), dict(zip(ids, trained, strict=True)))
    openai = _scores(ids, dict(zip(ids, base, strict=True)), dict(zip(ids, other, strict=True)))
    by_judge = {"local": local, "openai": openai}
    sp = self_preference(h, exp, by_judge, ids, rubric_scale(exp, h, (0, 1, 2)), clusters).to_dict()
    for name, s in by_judge.items():
        own = judge_decision(h, exp, s, ids, clusters)
        main = {k: sp["judges"][name][k] for k in own}
        assert own["verdict"] == main["verdict"] and own["resampling"] == main["resampling"]
        assert own == pytest.approx(main, abs=1e-9)
    d = {j: {q: s[("trained", "Q8_0")][q] - s[("base", "Q8_0")][q] for q in ids} for j, s in by_judge.items()}
    own_lift = judge_lift(d, "local", ["openai"], sorted(ids), clusters, exp.analysis.resamples, exp.analysis.seed)
    main_lift = {k: sp["lifts"]["local"][k] for k in own_lift}
    assert own_lift["resampling"] == main_lift["resampling"] and own_lift["others"] == main_lift["others"]
    assert {k: v for k, v in own_lift.items() if k not in ("resampling", "others", "judge")} == pytest.approx(
        {k: v for k, v in main_lift.items() if k not in ("resampling", "others", "judge")}, abs=1e-9)
