"""judge.numbers.stats.ppi against ppi_py (the reference implementation of PPI++), planted cases computed by hand, and
coverage by simulation."""
from __future__ import annotations

import math

import numpy as np
import ppi_py
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from judge.numbers.stats import ppi

pytestmark = pytest.mark.unit

ALPHA = 0.025
STEP = 1.0  # rule "guarded"'s pseudo-residual on these 0-2 differences: half the range, by hand
TOL = dict(rel=1e-10, abs=1e-12)


def _f(x) -> float:
    """ppi_py returns 1-element arrays (or scalars): the number."""
    return float(np.ravel(x)[0])


@st.composite
def labelled_data(draw, min_n: int = 2):
    """(d on L, f on L, f on U): paired differences of K-sample means on the 0-2 scale, the judge = gold plus
    an error of whole points on some questions (so ties and repeated values, as in real scores)."""
    k = draw(st.integers(1, 3))
    big_n = draw(st.integers(min_n + 2, 80))
    n = draw(st.integers(min_n, big_n - 1))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    d = rng.integers(-2 * k, 2 * k + 1, big_n) / k
    err = rng.choice([-1.0, 0.0, 1.0], big_n, p=draw(st.sampled_from([(0.1, 0.8, 0.1), (0.0, 0.7, 0.3),
                                                                       (0.3, 0.4, 0.3)])))
    f = d + err + draw(st.sampled_from([0.0, 0.25, -0.5]))
    return d[:n], f[:n], f[n:]


def peer_ci(d, fl, fu, lam, alternative="two-sided"):
    """ppi_py's interval at the harness's convention: two-sided (1 - 2 alpha), or one-sided (1 - alpha)."""
    a = 2 * ALPHA if alternative == "two-sided" else ALPHA
    return ppi_py.ppi_mean_ci(d, fl, fu, alpha=a, alternative=alternative, lam=lam)


# ----------------------------------------------------------------------------------------
# The peer: ppi_py
# ----------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(labelled_data())
def test_tuned_estimate_and_interval_equal_ppi_py(data):
    """Tuned lam: estimate and two-sided interval as ppi_py computes them; the one-sided bound at our lam (ppi_py
    0.2.3's ppi_mean_ci drops ``alternative`` when it tunes lam itself, returning the two-sided interval)."""
    d, fl, fu = data
    assume(np.var(np.concatenate([fl, fu])) > 0)  # a constant judge: ppi_py's lam is 0/0 (see the next test)
    ours = ppi.ppi_mean(d, fl, fu, alpha=ALPHA, rule="normal")
    assert ours.estimate == pytest.approx(_f(ppi_py.ppi_mean_pointestimate(d, fl, fu)), **TOL)
    lo, hi = ppi_py.ppi_mean_ci(d, fl, fu, alpha=2 * ALPHA)  # tuned lam, two-sided
    assert (ours.low, ours.high) == (pytest.approx(_f(lo), **TOL), pytest.approx(_f(hi), **TOL))
    one_sided = peer_ci(d, fl, fu, ours.lam, alternative="larger")[0]  # the lower bound a decision uses
    assert ours.low == pytest.approx(_f(one_sided), **TOL)


@settings(max_examples=60, deadline=None)
@given(labelled_data(), st.floats(0, 1))
def test_fixed_lambda_equals_ppi_py(data, lam):
    d, fl, fu = data
    ours = ppi.ppi_mean(d, fl, fu, alpha=ALPHA, lam=lam, rule="normal")
    assert ours.estimate == pytest.approx(_f(ppi_py.ppi_mean_pointestimate(d, fl, fu, lam=lam)), **TOL)
    lo, hi = peer_ci(d, fl, fu, lam)
    assert (ours.low, ours.high) == (pytest.approx(_f(lo), **TOL), pytest.approx(_f(hi), **TOL))


def test_lambda_is_ppi_pys_power_tuning():
    """The tuned lam is ppi_py's _calc_lam_glm on the mean's gradients (theta - y), clip=True."""
    peer = ppi_py.ppi._calc_lam_glm
    rng = np.random.default_rng(3)
    for _ in range(50):
        big_n = int(rng.integers(5, 120))
        n = int(rng.integers(2, big_n))
        d = rng.integers(-2, 3, big_n).astype(float)
        f = d + rng.choice([-1.0, 0.0, 1.0], big_n, p=[0.2, 0.6, 0.2]) * rng.random()
        theta = 0.3  # the gradients' centre does not enter the mean's lam
        expected = _f(peer(d[:n] - theta, f[:n] - theta, f[n:] - theta, np.eye(1), clip=True))
        assert ppi.tuned_lambda(d[:n], f[:n], f[n:]) == pytest.approx(expected, **TOL)


@settings(max_examples=40, deadline=None)
@given(labelled_data())
def test_gold_only_is_ppi_pys_classical_interval(data):
    """ppi_py: "setting lam=0 recovers the classical CLT interval"; gold_only_mean is PPI at lam = 0."""
    d, fl, fu = data
    ours = ppi.gold_only_mean({None: (d, fl, fu)}, alpha=ALPHA, rule="normal")
    lo, hi = peer_ci(d, fl, fu, 0.0)
    assert (ours.low, ours.high) == (pytest.approx(_f(lo), **TOL), pytest.approx(_f(hi), **TOL))
    z = sps.norm.ppf(1 - ALPHA)  # and by hand: mean -/+ z sd0 / sqrt(n)
    assert ours.low == pytest.approx(d.mean() - z * d.std() / math.sqrt(d.size), **TOL)


@settings(max_examples=40, deadline=None)
@given(st.lists(labelled_data(), min_size=2, max_size=4))
def test_stratified_combines_ppi_py_per_stratum(strata):
    """StratPPI (Fisch et al. 2024): theta = sum W_h theta_h, var = sum W_h^2 var_h, W_h = N_h / N, lam_h per
    stratum; each stratum's theta_h and var_h from ppi_py (var_h from its interval's half-width / z)."""
    strata = [s for s in strata if np.var(np.concatenate([s[1], s[2]])) > 0]
    assume(len(strata) >= 2)
    data = {f"s{i}": s for i, s in enumerate(strata)}
    ours = ppi.stratified_ppi_mean(data, alpha=ALPHA, rule="normal")
    sizes = np.array([s[0].size + s[2].size for s in strata], dtype=float)
    w = sizes / sizes.sum()
    z = sps.norm.ppf(1 - ALPHA)
    thetas = [_f(ppi_py.ppi_mean_pointestimate(*s)) for s in strata]
    halves = [(_f(hi) - _f(lo)) / 2 for lo, hi in (ppi_py.ppi_mean_ci(*s, alpha=2 * ALPHA) for s in strata)]
    theta = float(np.sum(w * thetas))
    se = math.sqrt(float(np.sum((w * np.array(halves) / z) ** 2)))
    assert ours.estimate == pytest.approx(theta, **TOL)
    assert ours.se == pytest.approx(se, rel=1e-9)
    assert (ours.low, ours.high) == (pytest.approx(theta - z * se, rel=1e-9, abs=1e-12),
                                     pytest.approx(theta + z * se, rel=1e-9, abs=1e-12))


# ----------------------------------------------------------------------------------------
# Planted cases, by hand
# ----------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(labelled_data(), st.sampled_from([-1.0, -0.3, 0.15, 0.5, 2.0]))
def test_a_judge_off_by_a_constant_is_corrected_exactly(data, c):
    """f = d + c on every question. By hand, with lam = 1 (plain PPI, disjoint form):
    theta = mean_U(d + c) + mean_L(d - (d + c)) = mean_U(d) + c - c = mean_U(d): the gold mean of the questions
    without gold, exactly, whatever the offset. With lam = m / N (the labelled-within-all form's plain PPI,
    mu = 1): theta = (m/N) mean_U(d + c) + mean_L(d) - (m/N) mean_L(d + c) = (m mean_U(d) + n mean_L(d)) / N,
    the gold mean of all N questions. The rectifier d - f = -c has no spread, so the normal interval's variance
    is the imputed term alone: lam^2 var0(f_U) / m."""
    d_l, _, f_u = data
    d_u = f_u  # reuse the generated values as the unlabelled gold; the judge adds c to every question
    f_l, f_u = d_l + c, d_u + c
    n, m = d_l.size, d_u.size
    plain = ppi.ppi_mean(d_l, f_l, f_u, alpha=ALPHA, lam=1.0, rule="normal")
    assert plain.estimate == pytest.approx(d_u.mean(), abs=1e-12)
    assert plain.se == pytest.approx(d_u.std() / math.sqrt(m), rel=1e-9, abs=1e-15)
    within_all = ppi.ppi_mean(d_l, f_l, f_u, alpha=ALPHA, lam=m / (n + m), rule="normal")
    assert within_all.estimate == pytest.approx(np.concatenate([d_l, d_u]).mean(), abs=1e-12)


def test_a_judge_without_information_leaves_the_gold_estimate():
    """A judge that gives every question the same difference has no variance: lam = 0, so PPI is the gold mean
    and its interval the gold-only one (hand: mean of 1, 0, 0, -1, 2 = 0.4)."""
    d = np.array([1.0, 0.0, 0.0, -1.0, 2.0])
    est = ppi.ppi_mean(d, np.full(5, 0.5), np.full(30, 0.5), alpha=ALPHA, step=STEP)
    gold = ppi.gold_only_mean({None: (d, np.full(5, 0.5), np.full(30, 0.5))}, alpha=ALPHA, step=STEP)
    assert est.lam == 0.0 and est.estimate == pytest.approx(0.4, abs=1e-15)
    assert (est.low, est.high) == (gold.low, gold.high)


def test_a_complete_stratum_contributes_its_gold_mean_exactly():
    """Stratum "arith" (programmatic gold on all 10 questions, mean 0.3) and stratum "open" (gold on 4 of 30,
    PPI within it, compared with ppi_py): theta = 10/40 * 0.3 + 30/40 * theta_open. The complete stratum's
    variance is var0(d) / 10 under rule "normal", its judge scores never enter."""
    arith = np.array([1, 0, 0, 1, 0, 0, 1, 0, 0, 0], dtype=float)
    rng = np.random.default_rng(11)
    d_open = rng.integers(-2, 3, 30).astype(float)
    f_open = d_open + rng.choice([-1.0, 0.0, 1.0], 30, p=[0.1, 0.6, 0.3])
    data = {"arith": (arith, arith + 5.0, np.array([])), "open": (d_open[:4], f_open[:4], f_open[4:])}
    est = ppi.stratified_ppi_mean(data, alpha=ALPHA, rule="normal")
    theta_open = _f(ppi_py.ppi_mean_pointestimate(d_open[:4], f_open[:4], f_open[4:]))
    assert est.estimate == pytest.approx(0.25 * 0.3 + 0.75 * theta_open, abs=1e-12)
    arith_part = next(s for s in est.strata if s.name == "arith")
    assert (arith_part.estimate, arith_part.lam, arith_part.weight) == (pytest.approx(0.3), None, 0.25)
    assert arith_part.variance == pytest.approx(0.21 / 10)  # var0 of seven 0s and three 1s: 0.3 * 0.7


def test_the_guard_widens_and_never_moves_the_estimate():
    """Rule "guarded": same theta and lam as "normal", a wider interval (t, ddof 1, the rectifier's floor), and
    a judge that matched gold on every labelled question still leaves an interval of non-zero width."""
    d = np.array([1.0, 0.0, -1.0, 0.0, 1.0, 0.0, 0.0, 2.0])
    f = np.concatenate([d, np.array([0.0, 1.0, -1.0] * 20)])
    normal = ppi.ppi_mean(d, d, f[8:], alpha=ALPHA, lam=1.0, rule="normal")
    guarded = ppi.ppi_mean(d, d, f[8:], alpha=ALPHA, step=STEP, lam=1.0)
    assert guarded.estimate == normal.estimate and guarded.lam == normal.lam == 1.0
    assert guarded.low < normal.low and guarded.high > normal.high
    # by hand: rectifier d - f = 0 on L; its guarded variance (0 + 2 * 1^2) / (8 + 1), over n = 8
    v_imp = np.var(f, ddof=1) / 60
    v_rect = 2 / 9 / 8
    assert guarded.se == pytest.approx(math.sqrt(v_imp + v_rect), rel=1e-12)
    df = (v_imp + v_rect) ** 2 / (v_imp ** 2 / 67 + v_rect ** 2 / 9)
    assert guarded.df == pytest.approx(df, rel=1e-12)
    assert guarded.low == pytest.approx(guarded.estimate - sps.t.ppf(1 - ALPHA, df) * guarded.se, rel=1e-12)
    # lam = 1/2: imputed lam^2 var1(f over all 68) / 60; rectifier d - f/2 = d/2, SS = SS(d) / 4 = 5.875 / 4
    half = ppi.ppi_mean(d, d, f[8:], alpha=ALPHA, step=STEP, lam=0.5)
    v_imp, v_rect = 0.25 * np.var(f, ddof=1) / 60, (5.875 / 4 + 2) / 9 / 8
    assert half.se == pytest.approx(math.sqrt(v_imp + v_rect), rel=1e-12)


# ----------------------------------------------------------------------------------------
# The design decides whether labels may correct
# ----------------------------------------------------------------------------------------


def _questions(n_gold: int, size: int = 60, seed: int = 1):
    rng = np.random.default_rng(seed)
    d = rng.integers(-2, 3, size).astype(float)
    f = d + 0.3
    gold = np.where(np.arange(size) < n_gold, d, np.nan)
    return f, gold


def test_hand_picked_labels_never_correct():
    f, gold = _questions(20)
    c = ppi.correct(f, gold, design="convenience", alpha=ALPHA, step=STEP)
    assert c.ppi is None and c.gold_only is None and "agreement only" in c.reason
    assert c.judge_only.estimate == pytest.approx(f.mean())
    assert ppi.correct(f, gold, design="random_sample", alpha=ALPHA, step=STEP).ppi is not None


@pytest.mark.parametrize("labels,design,needle", [
    (["x"] * 30 + ["y"] * 30, "complete_strata", "stratum 'x': gold on 20 of 30"),  # not a whole stratum
    (["x"] * 20 + ["y"] * 40, "complete_strata", "stratum 'y': no gold"),  # y's judge bias would stay
    (["x"] * 19 + ["y"] * 41, "random_sample", "stratum 'y': gold on 1 of 41"),  # no spread within y
])
def test_strata_without_enough_gold_give_no_correction(labels, design, needle):
    f, gold = _questions(20)
    c = ppi.correct(f, gold, design=design, alpha=ALPHA, step=STEP, strata=labels)
    assert c.ppi is None and c.gold_only is None and needle in c.reason, c.reason


def test_complete_strata_correct():
    f, gold = _questions(60)
    labels = ["x"] * 20 + ["y"] * 40
    c = ppi.correct(f, gold, design="complete_strata", alpha=ALPHA, step=STEP, strata=labels)
    assert c.ppi.estimate == pytest.approx(np.nanmean(gold), abs=1e-12)  # all gold: the gold mean, exactly
    assert all(s.lam is None for s in c.ppi.strata)


def test_label_sample_is_a_seeded_simple_random_sample():
    ids = [f"q{i:03d}" for i in range(200)]
    first = ppi.label_sample(ids[::-1], 40, seed=7)
    assert first == ppi.label_sample(ids, 40, seed=7) == sorted(first) and len(set(first)) == 40
    assert first != ppi.label_sample(ids, 40, seed=8)
    # each id equally likely: over 400 seeds every id is drawn about 400 * 40 / 200 = 80 times
    counts = np.zeros(200)
    for seed in range(400):
        for q in ppi.label_sample(ids, 40, seed=seed):
            counts[int(q[1:])] += 1
    assert sps.chisquare(counts).pvalue > 0.001


# ----------------------------------------------------------------------------------------
# Coverage by simulation (seed-fixed; a broken estimator fails)
# ----------------------------------------------------------------------------------------


def _biased_sets(sims: int, seed: int):
    """N = 200 questions, gold on a random 40. d in {-2..2} with mean -0.10; the judge misreads a point on 20 %
    of questions and adds +1 on a further 25 % (bias +0.25 on the difference)."""
    rng = np.random.default_rng(seed)
    p = np.array([0.05, 0.25, 0.50, 0.15, 0.05])  # mean -0.10
    d = rng.choice(np.arange(-2, 3), size=(sims, 200), p=p).astype(float)
    f = d + rng.choice([-1.0, 0.0, 1.0], size=d.shape, p=[0.1, 0.8, 0.1]) + (rng.random(d.shape) < 0.25)
    lab = np.argsort(rng.random(d.shape), axis=1) < 40
    return d, f, lab, float(p @ np.arange(-2, 3))


def test_coverage_and_variance_by_simulation():
    """400 data sets with a judge biased by +0.25. The 95 % intervals must cover the true -0.10 about 95 % of the
    time (Monte Carlo SE 0.011), the estimated SE must match the spread of the estimates across data sets, and
    the judge alone must miss. The bounds fail a broken estimator: dropping the imputed or the rectifier term
    from the variance, or lam from the imputed term, gives coverage far below 0.90 or an SE ratio outside."""
    d, f, lab, truth = _biased_sets(400, seed=2026)
    assert truth == pytest.approx(-0.10)
    cover: dict[str, list[bool]] = {"guarded": [], "normal": [], "within_all": [], "judge_only": []}
    est, se = [], {"guarded": [], "normal": []}
    for s in range(d.shape[0]):
        L = lab[s]
        args = (d[s][L], f[s][L], f[s][~L])
        for rule in ("guarded", "normal"):
            e = ppi.ppi_mean(*args, alpha=ALPHA, step=STEP, rule=rule)
            cover[rule].append(e.low < truth < e.high)
            se[rule].append(e.se)
        est.append(e.estimate)
        w = ppi.ppi_mean(*args, alpha=ALPHA, lam=160 / 200, rule="normal")  # the within-all form, mu = 1
        cover["within_all"].append(w.low < truth < w.high)
        j = ppi.judge_only_mean(f[s], alpha=ALPHA, step=STEP)
        cover["judge_only"].append(j.low < truth < j.high)
    rate = {k: float(np.mean(v)) for k, v in cover.items()}
    assert 0.93 <= rate["guarded"] <= 0.99, rate
    assert 0.90 <= rate["normal"] <= 0.98, rate
    assert 0.90 <= rate["within_all"] <= 0.98, rate
    assert rate["judge_only"] < 0.2, rate
    spread = float(np.std(est, ddof=1))
    assert 0.85 <= float(np.mean(se["normal"])) / spread <= 1.05, spread
    assert 0.95 <= float(np.mean(se["guarded"])) / spread <= 1.2, spread
    assert abs(float(np.mean(est)) - truth) < 3 * spread / math.sqrt(len(est))  # unbiased
