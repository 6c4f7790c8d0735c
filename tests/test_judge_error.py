"""judge.numbers.stats.judge_error: a judge against gold, checked against sklearn, krippendorff, scipy and planted
offsets."""
from __future__ import annotations

from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from judge.numbers.stats import judge_error

from support import peer_agreement

pytestmark = pytest.mark.unit

SCALE = (0, 1, 2)


@st.composite
def judged(draw, min_size: int = 8):
    """Gold and judge scores on 0-2 for the same answers: the judge agrees on most, misreads by a point on some."""
    size = draw(st.integers(min_size, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    gold = rng.integers(0, 3, size)
    miss = rng.choice([-1, 0, 1], size, p=draw(st.sampled_from([(0.1, 0.8, 0.1), (0.0, 0.6, 0.4), (0.3, 0.4, 0.3)])))
    return gold.tolist(), np.clip(gold + miss, 0, 2).tolist()


@settings(max_examples=40, deadline=None)
@given(judged())
def test_agreement_and_confusion_equal_sklearn_and_krippendorff(data):
    gold, judge = data
    r = judge_error.against_gold(judge, gold, SCALE, resamples=20, seed=1, clusters=[i // 2 for i in range(len(gold))])
    kappa = cohen_kappa_score(gold, judge, weights="quadratic", labels=list(SCALE))
    if np.isfinite(kappa) and len(set(gold) | set(judge)) > 1:
        assert r.kappa == pytest.approx(kappa, abs=1e-12)
    peer = krippendorff.alpha(reliability_data=[gold, judge], level_of_measurement="ordinal", value_domain=list(SCALE))
    if np.isfinite(peer) and r.krippendorff_alpha is not None:
        assert r.krippendorff_alpha == pytest.approx(peer, abs=1e-9)
    assert np.array_equal(np.array(r.confusion), confusion_matrix(gold, judge, labels=list(SCALE)))
    assert r.exact == pytest.approx(float(np.mean(np.array(gold) == np.array(judge))))
    assert r.offset.mean == pytest.approx(float(np.mean(np.array(judge) - np.array(gold))), abs=1e-12)


def test_answer_resampling_recomputes_earlier_folders_as_the_peers_on_the_same_resamples():
    """A folder written before resampled answers: its kappa and alpha intervals are the 2.5 % and 97.5 % points of
    the peer's statistic on the resamples ``default_rng(seed).integers(0, n, n)``, drawn in order."""
    rng = np.random.default_rng(4)
    gold = rng.integers(0, 3, 60)
    judge = np.clip(gold + rng.choice([-1, 0, 1], 60, p=[0.15, 0.7, 0.15]), 0, 2)
    r = judge_error.against_gold(judge.tolist(), gold.tolist(), SCALE, resamples=300, seed=9, resampling="answer")
    assert (r.resampling, r.exact_low, r.exact_high) == ("answer", None, None)
    draws = np.random.default_rng(9)
    kappas, alphas = [], []
    for _ in range(300):
        i = draws.integers(0, 60, 60)
        kappas.append(cohen_kappa_score(gold[i], judge[i], weights="quadratic", labels=list(SCALE)))
        alphas.append(krippendorff.alpha(reliability_data=[gold[i], judge[i]], level_of_measurement="ordinal",
                                         value_domain=list(SCALE)))
    assert (r.kappa_low, r.kappa_high) == pytest.approx(tuple(np.percentile(kappas, [2.5, 97.5])), abs=1e-12)
    assert (r.krippendorff_low, r.krippendorff_high) == pytest.approx(tuple(np.percentile(alphas, [2.5, 97.5])),
                                                                      abs=1e-9)
    assert r.kappa_low < r.kappa < r.kappa_high


@settings(max_examples=8, deadline=None)
@given(judged(), st.integers(1, 6), st.integers(0, 2 ** 31), st.sampled_from(["bca", "percentile"]))
def test_agreement_intervals_resample_whole_questions_as_the_peers_on_the_documented_draws(data, per_question, seed,
                                                                                          method):
    """Each question's answers (both arms, K samples) move together: the units are the distinct questions sorted as
    text, resample r the r-th ``default_rng(seed).integers(0, G, G)``, a drawn question bringing all its answers;
    the intervals are BCa (or, recomputing a folder written before, percentile) on sklearn's kappa, krippendorff's
    alpha and the share of equal scores on those resamples, the jackknife leaving out one question at a time, all
    computed in tests/support/peer_agreement.py from the definitions."""
    gold, judge = data
    questions = [f"q{i // per_question}" for i in range(len(gold))]
    r = judge_error.against_gold(judge, gold, SCALE, resamples=120, seed=seed, clusters=questions, interval=method)
    (k_lo, k_hi), (a_lo, a_hi), (e_lo, e_hi) = peer_agreement.intervals(gold, judge, seed, 120, questions,
                                                                        method=method)
    assert (r.resampling, r.interval) == ("question", method)
    assert (r.exact_low, r.exact_high) == pytest.approx((e_lo, e_hi), abs=1e-12)
    for (low, high), (p_lo, p_hi) in (((r.kappa_low, r.kappa_high), (k_lo, k_hi)),
                                      ((r.krippendorff_low, r.krippendorff_high), (a_lo, a_hi))):
        assert (low is None) == (p_lo is None)
        if low is not None:
            assert (low, high) == pytest.approx((p_lo, p_hi), abs=1e-9)


def test_with_one_answer_per_question_bca_is_the_textbook_interval_of_a_mean():
    """One answer per question: resampling questions is resampling answers, and exact agreement is a mean, so its
    BCa interval is the textbook one (Efron & Tibshirani 14.3, as scipy.stats.bootstrap computes it, ties counting
    half) on the documented resamples, written here with numpy and scipy.stats.norm."""
    rng = np.random.default_rng(11)
    gold = rng.integers(0, 3, 25)
    judge = np.clip(gold + rng.choice([-1, 0, 1], 25, p=[0.2, 0.6, 0.2]), 0, 2)
    r = judge_error.against_gold(judge.tolist(), gold.tolist(), SCALE, resamples=4000, seed=5,
                                 clusters=list(range(25)))
    same = (gold == judge).astype(float)
    draws = np.random.default_rng(5)
    boots = np.array([same[draws.integers(0, 25, 25)].mean() for _ in range(4000)])
    theta = same.mean()
    jack = np.array([np.delete(same, i).mean() for i in range(25)])
    z0 = sps.norm.ppf((np.sum(boots < theta) + 0.5 * np.sum(boots == theta)) / boots.size)
    accel = np.sum((jack.mean() - jack) ** 3) / (6 * np.sum((jack.mean() - jack) ** 2) ** 1.5)
    levels = [sps.norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z))) for z in sps.norm.ppf([0.025, 0.975])]
    assert (r.exact_low, r.exact_high) == pytest.approx(tuple(np.percentile(boots, [100 * x for x in levels])),
                                                        abs=1e-12)
    # the percentile interval is a different one on the same resamples
    pct = judge_error.against_gold(judge.tolist(), gold.tolist(), SCALE, resamples=4000, seed=5,
                                   clusters=list(range(25)), interval="percentile")
    assert (pct.exact_low, pct.exact_high) == pytest.approx(tuple(np.percentile(boots, [2.5, 97.5])), abs=1e-12)
    assert (r.kappa_low, r.kappa_high) != (pct.kappa_low, pct.kappa_high)


def test_bca_degenerate_cases_are_the_observed_value():
    """Every question alike (each answer agreeing, the same three scores on each): every resample and every jackknife
    value is the observed one (no spread: the percentile levels), so each interval is [1, 1]; one question only (no
    jackknife: the percentile levels), every resample is the whole data, so the interval is the observed value."""
    gold = [0, 1, 2] * 6
    r = judge_error.against_gold(gold, gold, SCALE, resamples=200, seed=2, clusters=[i // 3 for i in range(18)])
    assert (r.kappa_low, r.kappa_high, r.krippendorff_low, r.krippendorff_high, r.exact_low, r.exact_high) == \
        pytest.approx((1.0,) * 6)
    judge = [0, 1, 1, 2, 2, 0, 1, 1, 2]
    one = judge_error.against_gold(judge, gold[:9], SCALE, resamples=50, seed=2, clusters=["q"] * 9)
    assert one.kappa_low == pytest.approx(one.kappa) and one.kappa_high == pytest.approx(one.kappa)
    assert one.exact_low == pytest.approx(one.exact) and one.exact_high == pytest.approx(one.exact)


def test_question_resampling_needs_each_answers_question():
    with pytest.raises(ValueError, match="needs each answer's question"):
        judge_error.against_gold([0, 1, 2], [0, 1, 2], SCALE)


def test_planted_offsets_per_arm_and_differential():
    """Arm a is read exactly; arm b one point high wherever gold is below 2 (12 of its 20 answers). By hand:
    offset(a) = 0, offset(b) = 12/20 = 0.6, overall 12/40 = 0.3, and the differential offset over the 20
    questions is 0.6, the amount the judge adds to b - a."""
    gold_a = [0, 1, 2, 2, 1] * 4
    gold_b = [1, 2, 0, 2, 1] * 4
    judge_a = list(gold_a)
    judge_b = [g + 1 if g < 2 else g for g in gold_b]
    r = judge_error.against_gold(judge_a + judge_b, gold_a + gold_b, SCALE, arms=["a"] * 20 + ["b"] * 20,
                                 resamples=500, seed=0, clusters=list(range(20)) * 2)
    per_arm = {p.id: p.offset for p in r.per_arm}
    assert (per_arm["a"].mean, per_arm["a"].low, per_arm["a"].high) == (0.0, 0.0, 0.0)  # no error: no spread
    assert per_arm["b"].mean == pytest.approx(0.6) and r.offset.mean == pytest.approx(0.3)
    assert r.confusion == [[4, 4, 0], [0, 8, 8], [0, 0, 16]]
    diff = judge_error.differential_offset(judge_a, gold_a, judge_b, gold_b, resamples=2000, seed=0)
    assert diff.mean == pytest.approx(0.6) and diff.n == 20 and diff.resampling == "questions"


def test_differential_offset_interval_matches_scipy_bootstrap():
    """K = 2 samples per answer (means in halves). The differential errors e_i = (jb - gb) - (ja - ga); the
    interval is the percentile bootstrap of their mean, compared with scipy.stats.bootstrap within one grid step
    (1/(2n): the resamples differ)."""
    rng = np.random.default_rng(8)
    n = 50
    gold_a, gold_b = rng.integers(0, 5, n) / 2, rng.integers(0, 5, n) / 2
    judge_a = np.clip(gold_a + rng.choice([-0.5, 0, 0.5], n), 0, 2)
    judge_b = np.clip(gold_b + rng.choice([0, 0.5, 1.0], n, p=[0.5, 0.3, 0.2]), 0, 2)
    e = (judge_b - gold_b) - (judge_a - gold_a)
    halves = [[Fraction(int(round(2 * x)), 2) for x in col] for col in (judge_a, gold_a, judge_b, gold_b)]
    ours = judge_error.differential_offset(*halves, resamples=10000, seed=0)
    peer = sps.bootstrap((e,), np.mean, n_resamples=10000, method="percentile", confidence_level=0.95,
                         random_state=0).confidence_interval
    assert ours.mean == pytest.approx(float(e.mean()), abs=1e-12)
    assert ours.low == pytest.approx(peer.low, abs=1 / (2 * n) + 1e-12)
    assert ours.high == pytest.approx(peer.high, abs=1 / (2 * n) + 1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12), st.integers(0, 3), st.data())
def test_differential_offset_refuses_floats_as_every_decision_function_does(n, column, data):
    """A float anywhere in any of the four columns is refused (TypeError naming the column and place), as paired()
    refuses one, never taken at its binary value; the same values as exact Fractions are accepted."""
    cols = [[Fraction(data.draw(st.integers(0, 4)), 2) for _ in range(n)] for _ in range(4)]
    assert judge_error.differential_offset(*cols, resamples=50, seed=0) is not None
    at = data.draw(st.integers(0, n - 1))
    cols[column][at] = float(cols[column][at])
    name = ("judge_a", "gold_a", "judge_b", "gold_b")[column]
    with pytest.raises(TypeError, match=rf"{name}\[{at}\] is .*never floats"):
        judge_error.differential_offset(*cols, resamples=50, seed=0)


def test_off_scale_scores_are_refused():
    with pytest.raises(ValueError, match="not on the scale"):
        judge_error.against_gold([0, 1, 3], [0, 1, 2], SCALE)
