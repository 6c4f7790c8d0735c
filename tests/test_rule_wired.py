"""The score rule wired into the decisions: every registered rule in the rubric's units through the analysis and
through verify's second path, registered clusters only, exact inputs, and verify's own score test against the main
path on generated data. Expected values: planted facts, hand computation (Fractions, scipy's t), or the other path."""
from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from test_decisions import REPRO_A, REPRO_B, cells, k_means, questions, scores

from core.records import Comparison
from judge.numbers.comparisons import compare
from judge.numbers.stats.calibration import calibrate
from judge.numbers.stats.decide import decide
from judge.numbers.stats.decision_rules.score import score_tests
from judge.numbers.stats.paired import paired
from judge.numbers.stats.rule import Scale
from judge.verify.second_path import decisions as second_path
from judge.verify.second_path import score_test
from judge.verify.second_path.decision_rules.bootstrap_and_t import guard
from registration.prereg import Analysis, Hypothesis
from registration.vocabulary import RULES

pytestmark = pytest.mark.unit

ALPHA = 0.025


def exp(rule: str, **kw) -> SimpleNamespace:
    return SimpleNamespace(analysis=Analysis(resamples=300, seed=5, calibration_sims=20, rule=rule, **kw))


@st.composite
def unit_scores(draw):
    """Two arms' scores on a 0-1 scale as means of K integer samples (multiples of 1/K), mostly tied; clusters
    for some data sets, with a few questions left without one."""
    k = draw(st.sampled_from([1, 3]))
    n = draw(st.integers(12, 40))
    a = draw(st.lists(st.integers(0, k), min_size=n, max_size=n))
    moves = draw(st.lists(st.sampled_from([0, 0, 0, 0, 1, -1, k, -k]), min_size=n, max_size=n))
    b = [min(k, max(0, x + m)) for x, m in zip(a, moves, strict=True)]
    clustered = draw(st.booleans())
    labels = ([None if i % 7 == 6 else f"c{i % 5}" for i in range(n)] if clustered else [None] * n)
    kind = draw(st.sampled_from(["non_inferiority", "superiority", "equivalence"]))
    margin = draw(st.sampled_from([Fraction(1, 20), Fraction(1, 10)]))
    return k, [Fraction(x, k) for x in a], [Fraction(x, k) for x in b], labels, kind, margin


def second_path_verdict(rule: str, kind: str, margin: float, a, b, labels, R: int) -> str:
    """What verify's independent path decides (before its guards): judge.verify.second_path's comparison and verdict."""
    units = None if all(c is None for c in labels) else [("c", c) if c else ("q", i) for i, c in enumerate(labels)]
    result = second_path.comparison(a, b, alpha=ALPHA, margin=margin, rule=rule, method="percentile", resamples=300,
                                    seed=5, scale=(0, R, 1), labels=units)
    return second_path.verdict(kind, margin, result)


@settings(max_examples=12, deadline=None)
@given(unit_scores())
def test_the_same_data_at_0_1_0_2_0_10_get_the_same_verdict_under_every_registered_rule(case):
    """Scores and margin multiplied by the range R (0-1, 0-2, 0-10): the analysis' verdict, what the statistic alone
    says, and verify's second path all stay the same, under every registered rule."""
    k, a, b, labels, kind, margin = case
    for rule in RULES:
        seen = set()
        for lo, hi in ((0, 1), (0, 2), (0, 10)):
            R = hi - lo
            m = float(margin * R)
            h = Hypothesis(id="H1", a="base", b="trained", quant="Q8_0", kind=kind, margin=m, alpha=ALPHA)
            sa, sb = [lo + R * x for x in a], [lo + R * x for x in b]
            out = compare(h, exp(rule, min_clusters=2), questions(labels), scores(sa, sb), cells("base", "trained"),
                          Scale(lo, hi, k))
            statistic = decide(out.result, kind, m).verdict
            second = second_path_verdict(rule, kind, m, sa, sb, labels, R)
            seen.add((out.verdict, statistic, second))
        assert len(seen) == 1, (rule, seen)
        (verdict, statistic, second), = seen
        assert statistic == second, rule


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([(0, 1), (0, 2), (0, 10), (1, 5)]), st.integers(1, 3), st.integers(4, 50), st.data())
def test_verify_own_score_test_agrees_with_the_main_path(scale, k, n, data):
    """judge.verify.second_path (plain Python, its own t distribution) against score_tests / judge.numbers.stats.rule,
    on generated differences: every statistic, degrees of freedom and critical value within 1e-9, every claim the same,
    and the bounds within 1e-9 of the range."""
    lo, hi = scale
    R = hi - lo
    steps = data.draw(st.lists(st.sampled_from([0, 0, 0, 1, -1, R * k, -R * k, k]), min_size=n, max_size=n))
    d = [Fraction(max(-R * k, min(R * k, s)), k) for s in steps]
    clustered = data.draw(st.booleans())
    units = [("c", i % 6) if i % 5 else ("q", i) for i in range(n)] if clustered else None
    margin = data.draw(st.sampled_from([Fraction(0), Fraction(1, 20) * R, Fraction(1, 10) * R]))
    main = score_tests(d, float(margin), ALPHA, Scale(lo, hi, k), units)
    own = score_test.boundary_tests(d, margin, R, ALPHA, units)
    assert [t["id"] for t in main] == [t["id"] for t in own]
    for x, y in zip(main, own, strict=True):
        assert x["claims"] == y["claims"], (x, y)
        for key in ("statistic", "df", "critical", "boundary"):
            assert x[key] == pytest.approx(y[key], rel=1e-9, abs=1e-9), key
    p = paired([0] * n, d, resamples=100, alpha=ALPHA, margin=float(margin), rule="score", scale=Scale(lo, hi, k),
                 clusters=units)
    if main:
        assert p.bound == pytest.approx(score_test.lower_bound(d, R, ALPHA, units), abs=1e-9 * R)
        assert p.upper == pytest.approx(-score_test.lower_bound([-x for x in d], R, ALPHA, units), abs=1e-9 * R)


@pytest.mark.parametrize("df", [1, 2.5, 7, 11.3, 39, 76, 400])
def test_verify_own_t_quantile_is_scipys(df):
    assert score_test.t_quantile(1 - ALPHA, df) == pytest.approx(sps.t.ppf(1 - ALPHA, df), rel=1e-12)


# ---------------------------------------------------------------- exact inputs


def test_floats_are_refused_so_a_float_tie_cannot_flip():
    """K = 3 means whose exact 97.5 % bootstrap bound is exactly -1/10, the margin: as Fractions it is "not shown";
    as floats (1/3 is not 1/3) paired() refuses them instead of deciding on rounding."""
    a, b = k_means(REPRO_A), k_means(REPRO_B)
    p = paired(a, b, resamples=10000, seed=20261130, alpha=ALPHA, margin=0.1, rule="bootstrap")
    assert p.bound == -0.1 and decide(p, "non_inferiority", 0.1).verdict == "not shown"
    fa, fb = [float(x) for x in a], [float(x) for x in b]
    for rule in RULES:
        with pytest.raises(TypeError, match="exact scores"):
            paired(fa, fb, resamples=10000, seed=20261130, alpha=ALPHA, margin=0.1, rule=rule, scale=Scale(0, 2, 3))
    with pytest.raises(TypeError, match="exact scores"):
        calibrate(fa, fb, "non_inferiority", 0.1, alpha=ALPHA, method="percentile", resamples=100, rule="score",
                    sims=10, seed=1, ceiling=0.05, scale=Scale(0, 2, 3))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=2, max_size=20), st.data())
def test_any_float_score_is_refused_naming_it(a, data):
    i = data.draw(st.integers(0, len(a) - 1))
    bad = data.draw(st.sampled_from([float(a[i]), np.float64(a[i]), a[i] + 0.5]))
    b = list(a)
    b[i] = bad
    with pytest.raises(TypeError, match=rf"b\[{i}\] is"):
        paired(a, b, resamples=100)


# ---------------------------------------------------------------- clusters


def test_min_clusters_counts_registered_clusters_only():
    """Two clusters of 30 and 8 questions without one, every difference +1: counted as 10 clusters this was decided
    "superior"; 2 registered clusters are fewer than 10, so it is inconclusive, under every rule, and says why."""
    labels = ["a"] * 30 + ["b"] * 30 + [None] * 8
    a, b = [0] * 68, [1] * 68
    h = Hypothesis(id="H1", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1, alpha=ALPHA)
    for rule in RULES:
        out = compare(h, exp(rule), questions(labels), scores(a, b), cells("base", "trained"), Scale(0, 2))
        assert out.verdict == "inconclusive", rule
        assert out.clusters == 2 and out.result.units == 10
        assert ("only 2 cluster(s) of questions (8 question(s) without a cluster are units of their own, not "
                "clusters), fewer than the registered minimum of 10") in out.reason
        assert out.reason.endswith("the statistic alone would say: superior")
        assert compare(h, exp(rule, min_clusters=2), questions(labels), scores(a, b), cells("base", "trained"),
                       Scale(0, 2)).verdict == "superior"


def test_a_question_named_like_a_cluster_is_still_its_own_unit():
    """A question without a cluster whose id equals a cluster's name is not merged into that cluster."""
    qs = questions(["q01", None] + ["q01"] * 10)  # question q01 has no cluster; cluster "q01" holds ten others
    out = compare(Hypothesis(id="H1", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1,
                             alpha=ALPHA), exp("score", min_clusters=1), qs, scores([0] * 12, [1] * 12),
                  cells("base", "trained"), Scale(0, 2))
    assert out.clusters == 1 and out.result.units == 2


def hand_cr1_guard(unit_sums: list[Fraction], unit_sizes: list[int], step: Fraction, confidence: float):
    """The clustered guard by its definition: units plus a pseudo-unit of -step and one of +step, each of the mean
    unit size; CR1 variance sum_g (S_g - m_g mean)^2 G/(G-1) / (sum m)^2; t with G - 1 df (G counting both)."""
    size = Fraction(sum(unit_sizes), len(unit_sizes))
    sums = unit_sums + [-step * size, step * size]
    sizes = [Fraction(m) for m in unit_sizes] + [size, size]
    g = len(sums)
    mean = sum(sums) / sum(sizes)
    cr1 = sum((s - m * mean) ** 2 for s, m in zip(sums, sizes, strict=True))
    half = sps.t.ppf((1 + confidence) / 2, g - 1) * math.sqrt(float(cr1 * g / (g - 1))) / float(sum(sizes))
    return float(mean) - half, float(mean) + half


def test_the_clustered_guard_is_a_cr1_t_bound_in_the_rubrics_units():
    rng = np.random.default_rng(3)
    labels = [f"c{int(x)}" for x in rng.integers(0, 12, 60)]
    a = rng.integers(0, 11, 60).tolist()
    b = np.clip(np.array(a) + rng.integers(-3, 4, 60), 0, 10).tolist()
    d = [Fraction(y - x) for x, y in zip(a, b, strict=True)]
    grouped: dict[str, list] = {}
    for x, c in zip(d, labels, strict=True):
        grouped.setdefault(c, []).append(x)
    want = hand_cr1_guard([sum(v) for v in grouped.values()], [len(v) for v in grouped.values()], Fraction(5), 0.95)
    p = paired(a, b, resamples=500, alpha=ALPHA, clusters=labels, rule="bootstrap_and_t", scale=Scale(0, 10))
    assert (p.guard_low, p.guard_high) == pytest.approx(want, rel=1e-12)
    assert guard(d, labels, ALPHA, 5.0) == pytest.approx(want, rel=1e-12)
    # with one question per unit the CR1 guard is the paired-t interval with a pseudo-loss and a pseudo-win
    iid = paired(a, b, resamples=500, alpha=ALPHA, clusters=list(range(60)), rule="bootstrap_and_t",
                   scale=Scale(0, 10))
    ref = sps.t.interval(0.95, 61, loc=np.mean([float(x) for x in d] + [-5, 5]),
                         scale=sps.sem([float(x) for x in d] + [-5, 5]))
    assert (iid.guard_low, iid.guard_high) == pytest.approx(ref, rel=1e-12)


def test_calibration_is_computed_with_the_registered_rule():
    """Two questions, one +1 and one tie, simulated at the boundary (differences +0.4 and -0.6 on 0-2): the bootstrap
    alone claims whenever both draws are the +0.4, a quarter of the time; the score rule never does (two questions
    at +0.4 give T = 0.51 against t(1) = 12.7, by hand), and its line says so."""
    a, b = [0, 0], [1, 0]
    kw = dict(alpha=ALPHA, method="percentile", resamples=500, sims=400, seed=3, ceiling=0.05, scale=Scale(0, 2))
    assert calibrate(a, b, "non_inferiority", 0.1, rule="score", **kw).claims == 0
    assert 0.18 < calibrate(a, b, "non_inferiority", 0.1, rule="bootstrap", **kw).rate < 0.32


def test_a_length_caution_under_the_score_rule():
    """The length caution moves the decision interval by the style adjustment over the hypothesis's own pairs and
    decides again; under the score rule too (its interval is its test inverted): +1 on 30 of 40 questions is
    superior, and with every +1 a pair where b wrote 60 words and a 10 (length explains it all) it is not shown."""
    from types import SimpleNamespace

    from judge.numbers.bias_checks import style_check
    from registration.prereg import Hypothesis

    a, b = [0] * 40, [1] * 30 + [0] * 10
    p = paired(a, b, resamples=200, alpha=ALPHA, margin=0.1, rule="score", scale=Scale(0, 2))
    ids = [f"q{i:02d}" for i in range(40)]
    c = Comparison(id="H1", text="", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1,
                   alpha=ALPHA, subset=[], paired_questions=ids, unscored_rate={}, result=p, clusters=None,
                   clustered_se=None, calibration=None, quant_notes=[], length_notes=[], verdict="superior", reason="")
    assert decide(p, "non_inferiority", 0.1).verdict == "superior"
    h = Hypothesis(id="H1", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1, alpha=ALPHA)
    sc = {("base", "Q8_0"): dict(zip(ids, a, strict=True)), ("trained", "Q8_0"): dict(zip(ids, b, strict=True))}
    answers = [SimpleNamespace(arm=arm, quant="Q8_0", question_id=q, status="ok",
                               text=" ".join(["w"] * (60 if arm == "trained" and i < 30 else 10)))
               for i, q in enumerate(ids) for arm in ("base", "trained")]
    c = style_check(c, h, ("length",), sc, answers)
    assert len(c.length_notes) == 1 and '"not shown" instead of "superior"' in c.length_notes[0]


@pytest.mark.parametrize("margin, refused", [("2.0", True), ("2.5", True), ("1.9", False)])
def test_a_margin_outside_the_rubrics_range_is_refused_before_any_call(tmp_path, margin, refused):
    """The rule tests boundaries inside (-R, R): a margin of the whole 0-2 range or more is bad input, named with
    file, line and field by the checks that run before the first model call."""
    import re

    from test_readme import _example

    from core.errors import BadInput
    from judge.judging.preflight import check_margins
    from registration.prereg import load_experiment
    from registration.rubric import load_rubric

    text = re.sub(r"(?m)^margin = 0\.10 ", f"margin = {margin} ", _example(), count=1)
    assert f"margin = {margin} " in text
    (tmp_path / "prereg.toml").write_text(text)
    e = load_experiment(tmp_path)
    if not refused:
        check_margins(e, [load_rubric("correctness")])
        return
    with pytest.raises(BadInput) as err:
        check_margins(e, [load_rubric("correctness")])
    assert err.value.field == "margin" and err.value.line == text.splitlines().index(
        next(x for x in text.splitlines() if x.startswith(f"margin = {margin} "))) + 1
    assert "not below the range of rubric 'correctness' (0..2: 2 point(s))" in str(err.value)
