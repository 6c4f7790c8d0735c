"""Tests for judge.numbers.stats against the figures in docs/statistics-reference.md."""

import math
import warnings
from fractions import Fraction
from types import SimpleNamespace

import krippendorff
import numpy as np
import pytest
import scipy.stats as st
from hypothesis import given, settings
from hypothesis import strategies as st_

from core.records import Result
from judge.numbers.stats.agreement import cohen_kappa, kappa_bootstrap, krippendorff_alpha
from judge.numbers.stats.bootstrap import (
    bca_interval,
    bootstrap_means,
    counts_means,
    differences,
    exact_interval,
    lower_bound,
    percentile_interval,
    resample_counts,
    resample_indices,
    tally,
    units,
)
from judge.numbers.stats.decide import decide
from judge.numbers.stats.paired import paired
from judge.numbers.stats.t_bounds import clustered_se, mde, n_for_effect, sign_test, t_interval, t_test_p
from judge.verify.second_path import bootstrap as second_path

pytestmark = pytest.mark.unit

N_REF = 40
STEP = 1 / N_REF  # bootstrap endpoints move by one grid step (1/n) with seed / version


def reference_arms():
    """a = base, b = trained; d = b - a is +1 on 4, -1 on 7, 0 on 29 questions."""
    a = [0] * 4 + [2] * 7 + [0] * 10 + [1] * 10 + [2] * 9
    b = [1] * 4 + [1] * 7 + [0] * 10 + [1] * 10 + [2] * 9
    return np.array(a), np.array(b)  # integer scores: paired() takes exact values only


@pytest.fixture(scope="module")
def ref_d():
    a, b = reference_arms()
    d = b - a
    assert (np.sum(d == 1), np.sum(d == -1), np.sum(d == 0)) == (4, 7, 29)
    return d


def scipy_boot(d, method, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return st.bootstrap((d,), np.mean, n_resamples=10000, method=method, random_state=0, **kw)


# ---------------------------------------------------------------- reference paired example


def test_reference_moments_and_t(ref_d):
    a, b = reference_arms()
    p = paired(a, b, alpha=0.025)
    assert p.n == 40 and (p.up, p.down, p.ties) == (4, 7, 29)
    assert p.diff == pytest.approx(-0.075, abs=1e-12)
    assert p.sd_diff == pytest.approx(0.525625, abs=1e-6)
    assert p.se == pytest.approx(0.083109, abs=1e-6)
    assert p.confidence == pytest.approx(0.95)
    assert (p.t_low, p.t_high) == pytest.approx((-0.243103, 0.093103), abs=1e-6)
    assert t_interval(ref_d, 0.95) == pytest.approx((-0.243103, 0.093103), abs=1e-6)
    assert p.t_p == pytest.approx(0.3724, abs=1e-4)
    assert t_test_p(ref_d) == pytest.approx(st.ttest_1samp(ref_d, 0).pvalue, abs=1e-12)
    assert p.sign_p == pytest.approx(0.548828, abs=1e-6)
    assert sign_test(4, 7) == pytest.approx(0.548828, abs=1e-6)
    assert p.mean_a == pytest.approx(np.mean(a)) and p.mean_b == pytest.approx(np.mean(b))
    assert p.corr == pytest.approx(np.corrcoef(a, b)[0, 1], abs=1e-12)


def test_sign_test_edges():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 10) == pytest.approx(2 / 1024)
    assert sign_test(7, 4) == sign_test(4, 7)


def test_mde_and_sample_size():
    """Paired t-test power (the reference's statsmodels TTestPower figures), not the normal approximation."""
    assert mde(0.5, 40) == pytest.approx(0.227129, abs=1e-6)
    assert mde(0.5, 150) == pytest.approx(0.115118, abs=1e-6)
    assert n_for_effect(0.1, 0.5) == 199
    assert n_for_effect(0.2, 0.5) == 52
    assert n_for_effect(-0.2, 0.5) == 52
    # one-sided alpha 0.025 is two-sided 0.05 but for the far tail's sliver of power
    assert mde(0.5, 40, alpha=0.025, sided=1) == pytest.approx(mde(0.5, 40), abs=1e-5)
    assert mde(0.0, 40) == 0.0
    assert n_for_effect(0.1, 0.0) == 1
    with pytest.raises(ValueError):
        n_for_effect(0.0, 0.5)


@pytest.mark.parametrize("n", [3, 5, 12, 40, 150])
@pytest.mark.parametrize("sided", [1, 2])
def test_mde_matches_statsmodels_t_power(n, sided):
    from statsmodels.stats import power
    alt = "larger" if sided == 1 else "two-sided"
    es = power.TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8, alternative=alt)
    assert mde(0.5, n, alpha=0.05, sided=sided) == pytest.approx(0.5 * es, rel=1e-5)  # statsmodels solves to ~1e-6
    assert n_for_effect(0.5 * es * 1.0001, 0.5, alpha=0.05, sided=sided) == n


def test_mde_at_n5_is_not_the_optimistic_normal_figure():
    z = st.norm.ppf(0.975) + st.norm.ppf(0.8)
    assert mde(0.5, 5) > 1.3 * z * 0.5 / math.sqrt(5)  # the normal approximation is ~34% optimistic at n = 5


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_reference_bootstrap_own_seed(method):
    a, b = reference_arms()
    p95 = paired(a, b, alpha=0.025, method=method, seed=0)
    assert p95.ci_low == pytest.approx(-0.225, abs=STEP)
    assert p95.ci_high == pytest.approx(0.075, abs=STEP)
    assert p95.bound == p95.ci_low  # rule "bootstrap" (the default of paired())
    p90 = paired(a, b, alpha=0.05, method=method, seed=0)
    assert p90.confidence == pytest.approx(0.90)
    assert p90.bound == pytest.approx(-0.200, abs=STEP)  # one-sided 95% lower bound
    assert p90.bound == p90.ci_low
    assert p90.bound > p95.bound  # 95% one-sided bound is tighter than the 97.5% one
    for p in (p95, p90):
        d = decide(p, "non_inferiority", 0.10)
        assert d.verdict == "not shown", d
        assert "-0.10" not in d.reason or "<=" in d.reason


@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_reference_matches_scipy_exactly(ref_d, method):
    res = scipy_boot(ref_d, method)
    # the figure in statistics.md
    assert (res.confidence_interval.low, res.confidence_interval.high) == pytest.approx(
        (-0.225, 0.075), abs=1e-12)
    boot = res.bootstrap_distribution
    if method == "percentile":
        got = percentile_interval(boot, 0.95)
    else:
        got = bca_interval(ref_d, boot, 0.95)
    assert got == (res.confidence_interval.low, res.confidence_interval.high)
    # scipy's random_state=0 resamples are RandomState(0).randint(0, n, (B, n)):
    # feeding those indices through our path reproduces scipy's distribution exactly.
    idx = np.random.RandomState(0).randint(0, N_REF, (10000, N_REF))
    assert np.array_equal(bootstrap_means(ref_d, idx), boot)
    # the percentile function is np.percentile's linear definition
    assert percentile_interval(boot, 0.95) == pytest.approx(
        tuple(np.percentile(boot, [2.5, 97.5])), abs=1e-15)


@pytest.mark.parametrize("method", ["percentile", "BCa"])
@pytest.mark.parametrize("kind", ["scores", "continuous", "skewed"])
@pytest.mark.parametrize("confidence", [0.95, 0.90])
def test_intervals_equal_scipy_on_our_distribution(method, kind, confidence):
    """Give scipy our own bootstrap distribution (n_resamples=0 + bootstrap_result)."""
    rng = np.random.default_rng(7)
    n = 57
    if kind == "scores":
        d = (rng.integers(0, 3, n) - rng.integers(0, 3, n)).astype(float)
    elif kind == "continuous":
        d = rng.normal(0.1, 0.4, n)
    else:
        d = rng.exponential(1.0, n) - 0.5
    boot = bootstrap_means(d, resample_indices(n, 4000, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = st.bootstrap((d,), np.mean, n_resamples=0, method=method, confidence_level=confidence,
                           bootstrap_result=SimpleNamespace(bootstrap_distribution=boot))
    ref = (res.confidence_interval.low, res.confidence_interval.high)
    if method == "percentile":
        got = percentile_interval(boot, confidence)
    else:
        got = bca_interval(d, boot, confidence)
    assert got == pytest.approx(ref, abs=1e-12, rel=0)
    # and the one-sided bound is the lower end of the matching two-sided interval
    alpha = (1 - confidence) / 2
    assert lower_bound(d, boot, alpha, method.lower()) == pytest.approx(got[0], abs=1e-12)


def test_resample_indices_contract():
    idx = resample_indices(13, 50, 5)
    assert idx.shape == (50, 13)
    assert np.array_equal(idx, np.random.default_rng(5).integers(0, 13, size=(50, 13)))
    d = np.arange(13.0)
    assert np.allclose(bootstrap_means(d, idx), d[idx].mean(axis=1))


def test_bca_differs_from_percentile_on_skewed_data():
    """Guard: the BCa path must actually adjust the levels."""
    rng = np.random.default_rng(1)
    d = rng.exponential(1.0, 30)
    boot = bootstrap_means(d, resample_indices(30, 5000, 0))
    assert bca_interval(d, boot, 0.95) != percentile_interval(boot, 0.95)


# ---------------------------------------------------------------- identical arms


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("value", [Fraction(1), Fraction(1, 3)])
def test_identical_arms_no_nan(method, value):
    a = [Fraction(2) if i % 3 == 0 else value for i in range(25)]
    b = list(a)
    p = paired(a, b, method=method, resamples=2000, margin=0.1)
    for k, v in p.to_dict().items():
        if isinstance(v, float):
            assert not math.isnan(v), k
    assert (p.ci_low, p.ci_high, p.bound) == (0.0, 0.0, 0.0)
    assert (p.t_low, p.t_high, p.t_p, p.sd_diff, p.se) == (0.0, 0.0, 1.0, 0.0, 0.0)
    assert (p.up, p.down, p.ties) == (0, 0, 25)
    assert p.sign_p == 1.0 and p.mde == 0.0 and p.n_for_margin == 1
    assert p.corr == pytest.approx(1.0)
    dec = decide(p, "non_inferiority", 0.1)
    assert dec.verdict == "non-inferior"
    assert decide(p, "equivalence", 0.1).verdict == "equivalent"
    assert decide(p, "superiority", 0.0).verdict == "not shown"


def test_constant_shift_point_intervals():
    d = np.full(20, 1 / 3)
    boot = bootstrap_means(d, resample_indices(20, 100, 0))
    assert bca_interval(d, boot, 0.95) == (1 / 3, 1 / 3)
    assert lower_bound(d, boot, 0.05, "bca") == 1 / 3
    assert t_interval(d, 0.95) == (1 / 3, 1 / 3)
    assert t_test_p(d) == 0.0
    assert t_test_p(np.zeros(5)) == 1.0
    lo, hi = percentile_interval(boot, 0.95)
    assert lo == hi and lo == pytest.approx(1 / 3)
    p = paired([0] * 20, [Fraction(1, 3)] * 20, method="bca", resamples=500)
    assert p.bound == 1 / 3 and p.corr is None  # a is constant: Pearson undefined
    assert decide(p, "superiority", 0.0).verdict == "superior"


# ---------------------------------------------------------------- decisions


def _fake(bound, high, confidence=0.90):
    a, b = reference_arms()
    p = paired(a, b, resamples=200)
    fields = p.to_dict() | dict(ci_low=bound, bound=bound, ci_high=high, upper=high, confidence=confidence)
    return Result(**fields)


def test_decide_rules():
    assert decide(_fake(-0.05, 0.1), "non_inferiority", 0.1).verdict == "non-inferior"
    sup = decide(_fake(0.02, 0.2), "non_inferiority", 0.1)
    assert sup.verdict == "superior" and "non-inferior and superior" in sup.reason
    assert decide(_fake(-0.1, 0.1), "non_inferiority", 0.1).verdict == "not shown"  # strict
    assert decide(_fake(0.02, 0.2), "superiority", 0.0).verdict == "superior"
    assert decide(_fake(0.0, 0.2), "superiority", 0.0).verdict == "not shown"
    assert decide(_fake(-0.05, 0.05), "equivalence", 0.1).verdict == "equivalent"
    assert decide(_fake(-0.05, 0.15), "equivalence", 0.1).verdict == "inconclusive"
    assert decide(_fake(0.12, 0.3), "equivalence", 0.1).verdict == "not equivalent"
    r = decide(_fake(-0.05, 0.05), "equivalence", 0.1).reason
    assert "90%" in r and "-0.0500" in r
    r = decide(_fake(-0.05, 0.1), "non_inferiority", 0.1).reason
    assert "one-sided 95%" in r and "-0.0500" in r
    with pytest.raises(ValueError):
        decide(_fake(0, 0), "equivalence", 0.0)
    with pytest.raises(ValueError):
        decide(_fake(0, 0), "noninferiority", 0.1)


def test_direction_b_minus_a():
    a = np.array([0, 0, 1, 1, 0, 1, 0, 0, 1, 0])
    b = np.array([1, 1, 1, 1, 1, 1, 0, 1, 1, 1])
    p = paired(a, b, resamples=2000)
    assert p.diff == pytest.approx(0.5) and p.up == 5 and p.down == 0
    assert paired(b, a, resamples=2000).diff == pytest.approx(-0.5)


def test_paired_sample_size_fields():
    a, b = reference_arms()
    p = paired(a, b, alpha=0.025, margin=0.1, resamples=500)
    assert p.mde == mde(p.sd_diff, 40, alpha=0.025, sided=1)
    assert p.n_for_margin == n_for_effect(0.1, p.sd_diff, alpha=0.025, sided=1)
    assert paired(a, b, resamples=500).n_for_margin is None
    d = p.to_dict()
    assert d["method"] == "percentile" and d["resamples"] == 500 and d["seed"] == 0


# ---------------------------------------------------------------- clustered SE


def test_clustered_se_hand_example():
    # mean 0.5; deviations +.5 -.5 | +.5 +.5 | -.5 -.5 -> cluster sums 0, 1, -1
    s = [1, 0, 1, 1, 0, 0]
    c = ["x", "x", "y", "y", "z", "z"]
    assert clustered_se(s, c) == pytest.approx(math.sqrt(2) / 6, abs=1e-15)
    # singleton clusters: sqrt(sum (s - mean)^2) / n
    assert clustered_se(s, range(6)) == pytest.approx(math.sqrt(6 * 0.25) / 6, abs=1e-15)
    # one big cluster: the deviations cancel
    assert clustered_se(s, [0] * 6) == pytest.approx(0.0, abs=1e-15)


# ---------------------------------------------------------------- independent check path


def _compare(main: dict, chk: dict, tol=1e-9):
    for key, v in chk.items():
        m = main[key]
        if v is None or isinstance(v, str):
            assert m == v, key
        elif isinstance(v, int) and not isinstance(v, bool):
            assert m == v, key
        else:
            assert m is not None and abs(m - v) <= tol, (key, m, v)


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("alpha", [0.05, 0.025])
@pytest.mark.parametrize("case", ["reference", "scores", "means", "small", "continuous"])
def test_check_paired_agrees(method, alpha, case):
    rng = np.random.default_rng(["reference", "scores", "means", "small", "continuous"].index(case))
    if case == "reference":
        a, b = reference_arms()
    elif case == "scores":
        a = rng.integers(0, 3, 83)
        b = np.clip(a + rng.integers(-1, 2, 83), 0, 2)
    elif case == "means":  # per-question means of 3 judgments, exact
        a = [Fraction(int(x), 3) for x in rng.integers(0, 3, (64, 3)).sum(axis=1)]
        b = [Fraction(int(x), 3) for x in rng.integers(0, 3, (64, 3)).sum(axis=1)]
    elif case == "small":  # continuous values, passed at their exact binary value (paired() refuses floats)
        a = [Fraction(x) for x in rng.normal(size=5)]
        b = [Fraction(x) for x in rng.normal(size=5)]
    else:  # no ties in the bootstrap distribution: interpolation details show up
        x = rng.normal(size=50)
        a = [Fraction(v) for v in x]
        b = [Fraction(v) for v in x + rng.exponential(0.3, size=50) - 0.2]
    resamples, seed = 3000, 11
    p = paired(a, b, resamples=resamples, seed=seed, method=method, alpha=alpha, margin=0.1)
    chk = second_path.check_paired(a, b, resample_counts(units(differences(a, b)), resamples, seed), method,
                                   alpha, margin=0.1)
    assert set(chk) <= set(p.to_dict())
    _compare(p.to_dict(), chk)


def test_check_paired_identical_arms():
    a = np.array([0, 1, 2, 1, 1, 2, 0, 0])
    res = resample_counts(units(differences(a, a)), 500, 0)
    for method in ("percentile", "bca"):
        _compare(paired(a, a, resamples=500, method=method, margin=0.1).to_dict(),
                 second_path.check_paired(a, a, res, method, 0.05, margin=0.1))


def test_check_paired_detects_disagreement():
    """The comparison must be able to fail: different resamples give different intervals."""
    rng = np.random.default_rng(5)
    a, b = [Fraction(x) for x in rng.normal(size=40)], [Fraction(x) for x in rng.normal(size=40)]
    p = paired(a, b, resamples=2000, seed=0)
    _compare(p.to_dict(),
             second_path.check_paired(a, b, resample_counts(units(differences(a, b)), 2000, 0), "percentile", 0.05))
    chk = second_path.check_paired(a, b, resample_counts(units(differences(a, b)), 2000, 1), "percentile", 0.05)
    with pytest.raises(AssertionError):
        _compare(p.to_dict(), chk)


def test_check_paired_refuses_resamples_of_other_data():
    a, b = np.zeros(10), np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], dtype=float)
    with pytest.raises(ValueError):
        second_path.check_paired(a, b, resample_counts(units(differences(b, a)), 100, 0), "percentile", 0.05)


@settings(max_examples=30, deadline=None)
@given(st_.lists(st_.tuples(st_.integers(-6, 6), st_.integers(1, 3), st_.integers(1, 4)), min_size=1, max_size=25),
       st_.integers(1, 50), st_.integers(0, 2**32 - 1))
def test_the_second_path_draws_the_main_paths_resamples_by_its_own_code(parts, resamples, seed):
    """verify decides on the resamples it draws itself (second_path.draw) and must draw exactly the main path's
    (resample_counts): units of K-sample means (sum, questions), clustered or not, in any order."""
    unit_list = [(Fraction(x, k), m) for x, k, m in parts]
    kinds, counts = resample_counts(unit_list, resamples, seed)
    own_kinds, own_counts = second_path.draw(unit_list, resamples, seed)
    assert own_kinds == kinds and np.array_equal(own_counts, counts)


def test_resample_counts_match_index_resampling_in_distribution():
    d = np.array([-1.0] * 7 + [1.0] * 4 + [0.0] * 29)
    kinds, counts = resample_counts(units(d), 20000, 0)
    assert counts.shape == (20000, 3) and (counts.sum(axis=1) == 40).all()
    by_counts = counts_means(kinds, counts)
    by_index = bootstrap_means(d, resample_indices(40, 20000, 0))
    assert by_counts.mean() == pytest.approx(by_index.mean(), abs=0.002)
    assert by_counts.std() == pytest.approx(by_index.std(), rel=0.03)


def test_check_t_distribution_closed_form():
    for nu in (1, 2, 3, 8, 39, 200):
        for q in (0.9, 0.95, 0.975):
            assert second_path.t_crit(q, nu) == pytest.approx(st.t.ppf(q, nu), abs=1e-9)


# ---------------------------------------------------------------- agreement


def reader_labels():
    """Both gamed 7, only A 3, only B 2, neither 28 (n = 40)."""
    a = [1] * 7 + [1] * 3 + [0] * 2 + [0] * 28
    b = [1] * 7 + [0] * 3 + [1] * 2 + [0] * 28
    return a, b


def test_cohen_kappa_reference():
    a, b = reader_labels()
    assert cohen_kappa(a, b) == pytest.approx(0.6552, abs=1e-4)
    # observed 0.875, expected 0.6375
    assert cohen_kappa(a, b) == pytest.approx((0.875 - 0.6375) / (1 - 0.6375), abs=1e-12)
    # two categories: linear and quadratic weights coincide with unweighted
    assert cohen_kappa(a, b, weights="linear") == pytest.approx(cohen_kappa(a, b))
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))


def test_cohen_kappa_vs_statsmodels():
    from statsmodels.stats import inter_rater as ir
    a, b = reader_labels()
    assert cohen_kappa(a, b) == pytest.approx(ir.cohens_kappa([[7, 3], [2, 28]]).kappa, abs=1e-12)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, 120)
    y = np.clip(x + rng.integers(-1, 2, 120), 0, 3)
    table = np.zeros((4, 4))
    np.add.at(table, (x, y), 1)
    for w in (None, "linear", "quadratic"):
        ref = ir.cohens_kappa(table, wt=w).kappa
        assert cohen_kappa(x, y, weights=w) == pytest.approx(ref, abs=1e-12), w


def test_krippendorff_reference():
    a, b = reader_labels()
    assert krippendorff_alpha([a, b], "nominal") == pytest.approx(0.6592, abs=1e-4)
    assert krippendorff_alpha([a, b], "nominal") == pytest.approx(1 - 79 * 10 / (2 * 19 * 61),
                                                                    abs=1e-12)
    # binary data: ordinal and interval agree with nominal
    assert krippendorff_alpha([a, b], "ordinal") == pytest.approx(0.6592, abs=1e-4)
    assert krippendorff_alpha([a, b], "interval") == pytest.approx(0.6592, abs=1e-4)


def test_krippendorff_published_example():
    """Krippendorff (2011), 'Computing Krippendorff's alpha-reliability': 4 observers,
    12 units with missing values; published alpha nominal .743, ordinal .815, interval .849."""
    nan = np.nan
    m = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    assert krippendorff_alpha(m, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(m, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(m, "interval") == pytest.approx(0.849, abs=5e-4)
    # one value only: alpha is undefined (the peer refuses it too); perfect agreement over two values is 1
    assert math.isnan(krippendorff_alpha([[1, 1], [1, 1]]))
    with pytest.raises(ValueError):
        krippendorff.alpha(reliability_data=[[1, 1], [1, 1]], level_of_measurement="nominal")
    assert krippendorff_alpha([[1, 2], [1, 2]]) == 1.0
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 3]]) == pytest.approx(1.0)


def test_cohen_kappa_names_a_rating_outside_its_labels():
    with pytest.raises(ValueError, match=r"rating 3 is not one of the labels \[0, 1, 2\]"):
        cohen_kappa([0, 1, 2], [0, 1, 3], weights="quadratic", labels=(0, 1, 2))


def test_kappa_bootstrap_is_the_loop_over_the_same_resamples():
    rng = np.random.default_rng(8)
    a = rng.integers(0, 3, 60).tolist()
    b = np.clip(np.array(a) + rng.integers(-1, 2, 60), 0, 2).tolist()
    fast = kappa_bootstrap(a, b, (0, 1, 2), "quadratic", 300, 11)
    draws = np.random.default_rng(11)
    slow = []
    for _ in range(300):
        idx = draws.integers(0, 60, 60)
        slow.append(cohen_kappa([a[t] for t in idx], [b[t] for t in idx], weights="quadratic", labels=(0, 1, 2)))
    assert fast == pytest.approx(np.array(slow), abs=1e-12, nan_ok=True)


def test_agreement_of_three_judges_on_20000_answers_is_fast_and_uses_every_pairable_rating():
    import time

    from judge.numbers.agreement import agreement

    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, 20000)
    scores = {}
    for j, name in enumerate(("j1", "j2", "j3")):
        noisy = np.clip(truth + rng.integers(-1, 2, 20000) * (rng.random(20000) < 0.3), 0, 2)
        keep = rng.random(20000) > 0.1 * (j + 1)  # each judge missed some answers, not the same ones
        scores[name] = {f"L{i}": int(v) for i, (v, k) in enumerate(zip(noisy, keep, strict=False)) if k}
    t0 = time.perf_counter()
    out = agreement(scores, (0, 1, 2), seed=1)
    assert time.perf_counter() - t0 < 10  # 40 s with the kappa bootstrap looping in Python
    labels = sorted(set().union(*scores.values()), key=lambda s: int(s[1:]))
    matrix = [[scores[j].get(lab, np.nan) for lab in labels] for j in ("j1", "j2", "j3")]
    ref = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2])
    assert out.krippendorff_alpha_ordinal == pytest.approx(ref, abs=1e-9)
    common = set.intersection(*(set(s) for s in scores.values()))
    assert out.answers == len(common) and out.pairable_answers > len(common)
    for pair in out.pairs:
        x, y = pair.judges
        assert pair.answers == len(set(scores[x]) & set(scores[y]))
        lo, hi = pair.kappa_ci95
        assert lo < pair.kappa_quadratic < hi


def test_krippendorff_with_missing_ratings_matches_the_package():
    nan = np.nan
    m = [[0, 1, 2, nan, 2, 1, 0, nan], [0, 2, 2, 1, nan, 1, 1, 2], [nan, 1, 2, 1, 2, nan, 0, 2]]
    for level in ("nominal", "ordinal", "interval"):
        ref = krippendorff.alpha(reliability_data=m, level_of_measurement=level, value_domain=[0, 1, 2])
        assert krippendorff_alpha(m, level) == pytest.approx(ref, abs=1e-12), level


def test_verify_compares_lists_of_floats_within_its_tolerance():
    from judge.verify.compare import diff_numbers

    assert diff_numbers({"kappa_ci95": [0.1, 0.2]}, {"kappa_ci95": [0.1 + 1e-15, 0.2 - 1e-15]}, "x") == []
    assert diff_numbers({"kappa_ci95": [0.1, 0.2]}, {"kappa_ci95": [0.1, 0.21]}, "x")
    assert diff_numbers({"kappa_ci95": [0.1, 0.2]}, {"kappa_ci95": [0.1]}, "x")


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("k", [1, 3])
def test_exact_interval_is_scipys_formula_in_exact_arithmetic(method, k):
    """The exact path and the float helpers (checked equal to scipy above) agree off ties, so paired() is scipy's
    percentile/BCa interval computed exactly."""
    rng = np.random.default_rng(12 + k)
    a = [Fraction(int(x), k) for x in rng.integers(0, 3 * k, 70)]
    b = [Fraction(int(x), k) for x in rng.integers(0, 3 * k, 70)]
    kinds, counts = resample_counts(units(differences(a, b)), 5000, 4)
    freq = tally(units(differences(a, b)))[1]
    lo, hi = exact_interval(kinds, freq, counts, Fraction(1, 20), method)
    boot = counts_means(kinds, counts)
    d = np.array([float(x) for x in differences(a, b)])
    ref = percentile_interval(boot, 0.9) if method == "percentile" else bca_interval(d, boot, 0.9)
    assert (float(lo), float(hi)) == pytest.approx(ref, abs=1e-12)
