"""judge.numbers.biases against peers: style control against statsmodels OLS, Holm against statsmodels' multipletests,
the retest flip interval against statsmodels' Clopper-Pearson and its kappa against scikit-learn, a judge's lift
against hand computation and scipy's bootstrap; fixed sequences and unequal alphas by hand."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.numbers.biases import family_decisions, lift, retest_agreement, style_adjustment, style_counts

pytestmark = pytest.mark.unit


# ---- style ----------------------------------------------------------------------------------------------------

def test_style_counts_by_hand():
    text = "# Fees\n\n- first item\n* second [1]\n2. third, see Article 4 and §3\nplain -not a list\n"
    c = style_counts(text)
    assert c["length"] == pytest.approx(math.log1p(len(text.split())))
    assert (c["headers"], c["list_items"], c["citations"]) == (1, 3, 3)
    assert style_counts("") == {"length": 0.0, "headers": 0, "list_items": 0, "citations": 0}


@settings(max_examples=15, deadline=None)
@given(st.integers(6, 40), st.integers(0, 2**32 - 1), st.sampled_from([0.025, 0.05]), st.integers(1, 3))
def test_style_adjustment_is_statsmodels_ols(n, seed, alpha, k):
    """The adjusted difference, its SE and its (1 - 2 alpha) interval are the intercept of statsmodels' OLS of the
    paired differences on the style differences, with its conf_int at 2 alpha."""
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    names = ["length", "headers", "citations"][:k]
    deltas = {c: rng.normal(size=n).round(2) for c in names}
    d = rng.integers(-2, 3, n) + 0.0
    got = style_adjustment(d, deltas, alpha)
    x = sm.add_constant(np.column_stack([deltas[c] for c in names]), has_constant="add")
    fit = sm.OLS(d, x).fit()
    if np.linalg.matrix_rank(x) < x.shape[1]:
        assert got.adjusted is None and got.undefined
        return
    lo, hi = fit.conf_int(alpha=2 * alpha)[0]
    assert got.adjusted == pytest.approx(fit.params[0], abs=1e-9)
    assert got.se == pytest.approx(fit.bse[0], rel=1e-7)
    assert (got.ci_low, got.ci_high) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))
    assert got.df == int(fit.df_resid) and got.raw == pytest.approx(d.mean())
    assert got.slopes == {c: pytest.approx(b, abs=1e-9) for c, b in zip(names, fit.params[1:], strict=True)}


def test_style_adjustment_leaves_out_a_covariate_without_differences_and_names_what_is_not_identified():
    d = [1, 1, 2, 0, 1]
    same = style_adjustment(d, {"length": [0.5, 0.1, 0.9, -0.2, 0.3], "headers": [0] * 5}, 0.025)
    assert same.covariates == ["length"] and same.adjusted is not None
    flat = style_adjustment(d, {"length": [0.7] * 5}, 0.025)  # every pair differs by as much: no intercept to find
    assert flat.adjusted is None and "every pair differs by the same amount in length" in flat.undefined
    none = style_adjustment(d, {"length": [0] * 5}, 0.025)  # no difference in style: nothing to adjust
    assert none.covariates == [] and none.adjusted == pytest.approx(1.0) and none.raw == pytest.approx(1.0)
    few = style_adjustment([1, 2], {"length": [0.1, 0.4]}, 0.025)
    assert few.adjusted is None and "no degree of freedom" in few.undefined


# ---- the family ----------------------------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)  # multipletests takes a third of a second a call here
@given(st.lists(st.floats(0, 0.2, allow_nan=False), min_size=1, max_size=8), st.sampled_from([0.025, 0.05, 0.1]))
def test_holm_claims_what_statsmodels_holm_rejects(p, alpha):
    from statsmodels.stats.multitest import multipletests

    fam = family_decisions("holm", [f"H{i}" for i in range(len(p))], [alpha] * len(p), lambda i, a: p[i] <= a)
    reject = multipletests(p, alpha=alpha, method="holm")[0]
    assert [s.claimed for s in fam.steps] == list(reject)
    # each hypothesis is shown the level of its last test: alpha / (hypotheses left at that step)
    assert all(s.tested_at * len(p) >= alpha * (1 - 1e-12) for s in fam.steps)


def test_holm_with_unequal_alphas_and_fixed_sequence_by_hand():
    p = {"A": 0.004, "B": 0.02, "C": 0.011, "D": 0.3}
    ids, alphas = list(p), [0.025, 0.05, 0.025, 0.05]

    def claims(i, a):
        return p[ids[i]] <= a

    holm = family_decisions("holm", ids, alphas, claims)
    # step 1, four left: A 0.004 <= 0.025/4, B 0.02 > 0.05/4, C 0.011 > 0.025/4, D no -> A leaves
    # step 2, three left: B 0.02 > 0.05/3 = 0.0167, C 0.011 > 0.025/3 -> stop
    assert [(s.id, s.claimed, s.step) for s in holm.steps] == [("A", True, 1), ("B", False, None),
                                                              ("C", False, None), ("D", False, None)]
    assert [s.tested_at for s in holm.steps] == pytest.approx([0.025 / 4, 0.05 / 3, 0.025 / 3, 0.05 / 3])
    seq = family_decisions("fixed-sequence", ids, alphas, claims)
    # A at 0.025 claims, B at 0.05 claims, C 0.011 at 0.025 claims, D at 0.05 does not: stopped at D
    assert [s.claimed for s in seq.steps] == [True, True, True, False] and seq.stopped_at == "D"
    seq2 = family_decisions("fixed-sequence", ["D", "A"], [0.05, 0.025], lambda i, a: [0.3, 0.004][i] <= a)
    assert seq2.stopped_at == "D" and seq2.steps[1].tested_at is None and not seq2.steps[1].claimed
    none = family_decisions("none", ids, alphas, claims)
    assert [s.claimed for s in none.steps] == [True, True, True, False]
    assert [s.tested_at for s in none.steps] == alphas


def test_holm_holds_the_family_at_alpha_where_unadjusted_claims_do_not():
    """Four true nulls with independent uniform p-values: unadjusted, the chance of at least one false claim is
    1 - (1 - 0.025)^4 = 0.0963; Holm keeps it at most 0.025 (simulated, 20,000 families)."""
    rng = np.random.default_rng(7)
    p = rng.uniform(size=(20_000, 4))
    holm = np.mean([any(s.claimed for s in family_decisions("holm", list("ABCD"), [0.025] * 4,
                                                            lambda i, a, r=r: r[i] <= a).steps) for r in p])
    raw = np.mean((p <= 0.025).any(axis=1))
    assert raw == pytest.approx(1 - 0.975 ** 4, abs=0.006) and holm <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / 20_000)


# ---- self-preference ------------------------------------------------------------------------------------------

def test_the_lift_of_a_judge_adding_one_to_every_trained_answer():
    """Planted: judge `same` gives the trained arm one point more than `other` on every question: its lift is 1 with
    no spread; the others' estimate is theirs."""
    d_other = {f"q{i}": Fraction(x) for i, x in enumerate([0, 1, -1, 0, 0, 1, 0, -1])}
    d_same = {q: v + 1 for q, v in d_other.items()}
    got = lift({"same": d_same, "other": d_other}, "same", resamples=2000, seed=1)
    assert (got.estimate, got.others_estimate, got.lift) == (pytest.approx(1.0), pytest.approx(0.0), 1.0)
    assert (got.ci_low, got.ci_high) == (1.0, 1.0) and got.n == 8 and got.others == ["other"]


def test_the_lift_against_hand_arithmetic_and_scipys_bootstrap():
    from scipy import stats as sps

    rng = np.random.default_rng(3)
    qs = [f"q{i:02d}" for i in range(30)]
    d = {j: {q: Fraction(int(v)) for q, v in zip(qs, rng.integers(-2, 3, 30), strict=True)} for j in "abc"}
    del d["c"]["q05"]  # a question one judge did not score leaves the comparison
    got = lift(d, "a", resamples=20_000, seed=5)
    common = [q for q in qs if q != "q05"]
    per_q = [float(d["a"][q]) - (float(d["b"][q]) + float(d["c"][q])) / 2 for q in common]
    assert got.n == 29 and got.lift == pytest.approx(sum(per_q) / 29)
    assert got.estimate - got.others_estimate == pytest.approx(got.lift)
    ref = sps.bootstrap((np.array(per_q),), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95,
                        rng=np.random.default_rng(11)).confidence_interval
    se = np.std(per_q, ddof=1) / math.sqrt(29)
    assert abs(got.ci_low - ref.low) < 0.08 * se * 4 and abs(got.ci_high - ref.high) < 0.08 * se * 4
    assert lift(d, "a", resamples=100, seed=5).ci_low == lift(d, "a", resamples=100, seed=5).ci_low  # seeded
    assert lift({"a": d["a"]}, "a", resamples=100, seed=1) is None


# ---- test-retest ----------------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=60))
def test_retest_flips_and_kappa_against_statsmodels_and_sklearn(pairs):
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.proportion import proportion_confint

    got = retest_agreement("j", len(pairs) + 3, pairs, [0, 1, 2], seed=1)
    flips = sum(a != b for a, b in pairs)
    assert (got.n, got.drawn, got.flips, got.flip_rate) == (len(pairs), len(pairs) + 3, flips, flips / len(pairs))
    lo, hi = proportion_confint(flips, len(pairs), alpha=0.05, method="beta")
    assert got.flip_ci95 == [pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9)]
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    if len(set(a) | set(b)) > 1 and not (len(set(a)) == 1 and set(a) == set(b)):
        with np.errstate(all="ignore"):
            want = cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2])
        if math.isfinite(want):
            assert got.kappa_quadratic == pytest.approx(want, abs=1e-9)


def test_no_retest_scored_reports_nothing():
    got = retest_agreement("j", 5, [], [0, 1, 2], seed=1)
    assert (got.n, got.flip_rate, got.flip_ci95, got.kappa_quadratic) == (0, None, None, None)
