"""The gold-corrected decision's power before its labels (judge.numbers.stats.ppi_power,
judge.numbers.validity.power_plan, the line `judge label --sample` prints): the variance against a hand computation, the
large-sample limit against statsmodels and scipy, the stated power against the decision itself (judge.numbers.stats.ppi)
simulated, the labels needed minimal, and what is assumed before gold exists and measured after."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from judge.gold.label_power import power_line
from judge.numbers.stats import ppi
from judge.numbers.stats.decision_rules.interval import claims
from judge.numbers.stats.ppi_power import Design, labels_for_power, mde, power, spread
from judge.numbers.validity import MEASURED_FROM, planning_alpha, power_plan
from registration.prereg import Analysis, Hypothesis

pytestmark = pytest.mark.unit

ALPHA = 0.025


def design(**kw) -> Design:
    base = dict(questions=100, labelled=20, sd_judge=1.0, sd_gold=1.0, correlation=0.6, alpha=ALPHA, step=0.5)
    return Design(**(base | kw))


def test_the_variance_and_degrees_of_freedom_by_hand():
    # N = 100, n = 20 (m = 80), sds 1, rho 0.6, step 0.5:
    # lam = 0.6 * 1 * 80/100 * 19/20 = 0.456; s2_r = 1 - 2 * 0.456 * 0.6 + 0.456^2 = 0.660736
    # the bound's SE: rectifier 18 * s2_r / (21 * 20) (lam fitted: n - 2), guard 2 * 0.25 / 420, imputed 0.456^2 / 80
    rect, guard, imputed = 18 * 0.660736 / 420, 0.5 / 420, 0.456 ** 2 / 80
    # the estimate's own: imputed + s2_r / 20 + lam's noise (80/100)^2 * 1 * (1 + 0.36) / 20 * (1/80 + 1/20)
    own = imputed + 0.660736 / 20 + 0.64 * 1.36 / 20 * 0.0625
    var = rect + guard + imputed
    s = spread(design())
    assert s.se == pytest.approx(math.sqrt(var), rel=1e-12) and s.sd == pytest.approx(math.sqrt(own), rel=1e-12)
    assert s.df == pytest.approx(var ** 2 / ((rect + guard) ** 2 / 21 + imputed ** 2 / 99), rel=1e-12)
    assert s.se_df == pytest.approx(var ** 2 / (rect ** 2 / 18 + imputed ** 2 / 99), rel=1e-12)
    # every question labelled: gold alone, ((N - 1) s2 + 2 step^2) / ((N + 1) N) on N + 1 df, as rule "guarded"'s
    s = spread(design(labelled=100))
    assert s.se == pytest.approx(math.sqrt((99 + 0.5) / (101 * 100)), rel=1e-12) and s.sd == pytest.approx(0.1)
    assert s.df == pytest.approx(101) and s.se_df == pytest.approx((99 + 0.5) ** 2 / 99 ** 2 * 99)


def test_the_stated_se_is_the_decisions_own_on_a_large_sample():
    """ppi.ppi_mean's SE on one large data set whose gold and judge differences have the design's sds and rho."""
    rng = np.random.default_rng(5)
    big, n, rho = 20_000, 4_000, 0.7
    z = rng.multivariate_normal([0, 0], [[1.0, rho * 1.5], [rho * 1.5, 2.25]], size=big)
    d, f = z[:, 0], z[:, 1]
    e = ppi.ppi_mean(d[:n], f[:n], f[n:], alpha=ALPHA, step=1.0)
    stated = spread(Design(big, n, 1.5, 1.0, rho, ALPHA, 1.0))
    assert e.se == pytest.approx(stated.se, rel=0.03) and stated.sd == pytest.approx(stated.se, rel=0.01)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_the_large_sample_power_is_the_normal_power_of_the_two_phase_effective_n(rho):
    """For large n the guard's parts vanish and the t is normal: the power is statsmodels' one-sample normal power at
    the effective n = n / (1 - (1 - n/N) rho^2) (two-phase sampling; ppi_py's power analysis uses the same SE)."""
    big, n, sd = 200_000, 20_000, 1.3
    d = design(questions=big, labelled=n, sd_judge=sd, sd_gold=sd, correlation=rho)
    n_eff = n / (1 - (1 - n / big) * rho ** 2)
    se = sd / math.sqrt(n_eff)
    distance = 2.5 * se  # power about 0.7
    peer = NormalIndPower().power(effect_size=distance / sd, nobs1=n_eff, alpha=ALPHA, ratio=0, alternative="larger")
    assert power(d, distance, "non_inferiority") == pytest.approx(peer, abs=2e-3)
    # the MDE at 80 %: (z_{1-alpha} + z_{0.8}) * SE, by scipy's normal quantiles
    assert mde(d, 0.8, "superiority") == pytest.approx((sps.norm.ppf(1 - ALPHA) + sps.norm.ppf(0.8)) * se, rel=2e-3)
    # equivalence at a true difference of 0: both one-sided tests pass, 2 Phi(m / se - z) - 1
    m = 3 * se
    expected = 2 * sps.norm.cdf(m / se - sps.norm.ppf(1 - ALPHA)) - 1
    assert power(d, m, "equivalence") == pytest.approx(expected, abs=3e-3)


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.9])
def test_the_labels_needed_on_a_large_set_are_ppi_pys_power_analysis(rho):
    """ppi_py's power analysis (ppi_py.ppi_power) gives the fewest labelled of n_max questions whose PPI++ estimate has
    the classical SE of ``effective_n`` labels; the corrected decision needs that SE for 80 % power at the distance
    (z_{1-alpha} + z_{0.8}) sd / sqrt(effective_n) (scipy's normal quantiles). Predictions cost next to nothing, so
    ppi_py uses all n_max questions."""
    import ppi_py

    total, effective = 100_000, 20_000
    peer = ppi_py.ppi_power(ppi_corr=rho, cost_X=0, cost_Y=1.0, cost_Yhat=1e-6, effective_n=effective, n_max=total)
    assert peer["n"] + peer["N"] == total
    distance = (sps.norm.ppf(1 - ALPHA) + sps.norm.ppf(0.8)) / math.sqrt(effective)
    k = labels_for_power(Design(total, 2, 1.0, 1.0, rho, ALPHA, 0.5), distance, 0.8, "non_inferiority")
    assert abs(k - peer["n"]) <= 5  # ppi_py rounds its n; here the fewest, with t quantiles and the guard


def test_the_mde_is_where_the_power_reaches_the_target():
    for kind in ("non_inferiority", "superiority", "equivalence"):
        for target in (0.5, 0.8, 0.95):
            d = design()
            assert power(d, mde(d, target, kind), kind) == pytest.approx(target, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(big=st.integers(3, 600), sd=st.floats(0.05, 3), ratio=st.floats(0.3, 2), rho=st.floats(0, 1),
       step=st.sampled_from([0.5, 1.0, 5.0]), distance=st.floats(0.01, 2), target=st.sampled_from([0.5, 0.8, 0.9]),
       kind=st.sampled_from(["non_inferiority", "superiority", "equivalence"]))
def test_the_labels_needed_are_the_fewest_that_reach_the_target(big, sd, ratio, rho, step, distance, target, kind):
    d = Design(big, 2, sd, sd * ratio, rho, ALPHA, step)
    k = labels_for_power(d, distance, target, kind)

    def at(n: int) -> float:
        return power(Design(big, n, sd, sd * ratio, rho, ALPHA, step), distance, kind)

    if k is None:
        assert at(big) < target
    else:
        assert 2 <= k <= big and at(k) >= target and (k == 2 or at(k - 1) < target)


def test_no_labels_are_tied_to_a_margin_of_zero():
    assert labels_for_power(design(), 0.0, 0.8, "superiority") is None


@pytest.mark.parametrize(("questions", "labelled", "rho"), [(400, 20, 0.9), (40, 20, 0.4), (400, 80, 0.6)])
def test_the_stated_power_is_the_simulated_power_of_the_decision(questions, labelled, rho):
    """Gold and judge differences drawn as whole points (-2..2) with correlation rho; each data set decided by
    ppi.ppi_mean (rule "guarded") against the boundary that lies the stated 80 % MDE below the truth."""
    rng = np.random.default_rng(labelled + questions)
    sims = 600
    gold = rng.integers(-2, 3, (sims, questions)).astype(float)
    noise = rng.integers(-2, 3, (sims, questions)).astype(float)
    judge = rho * gold + math.sqrt(1 - rho ** 2) * noise  # the same spread as gold, correlation rho
    sd = float(np.std(np.arange(-2, 3), ddof=0))
    d = Design(questions, labelled, sd, sd, rho, ALPHA, 1.0)
    distance = mde(d, 0.8, "non_inferiority")
    hits = 0
    for s in range(sims):
        lab = np.argsort(rng.random(questions)) < labelled
        e = ppi.ppi_mean(gold[s][lab], judge[s][lab], judge[s][~lab], alpha=ALPHA, step=1.0)
        hits += claims("non_inferiority", distance, e.low, e.high)  # truth 0, boundary -distance
    p = hits / sims
    assert abs(p - 0.8) <= 4 * math.sqrt(0.16 / sims) + 0.03, p


# ----------------------------------------------------------------------------------------
# What is assumed before gold, and measured after (judge.numbers.validity.power_plan)
# ----------------------------------------------------------------------------------------


def experiment(**analysis):
    return SimpleNamespace(analysis=Analysis(judge_error="decide", **analysis))


H = Hypothesis("H1", "a", "b", "q", "non_inferiority", 0.3, ALPHA)
JUDGE = [float(x) for x in np.random.default_rng(1).integers(-1, 2, 200)]


def test_before_gold_the_gold_differences_spread_as_the_judges_at_the_registered_correlation():
    p = power_plan(experiment(target_power=0.9, assumed_gold_correlation=0.3), H, JUDGE, ALPHA, 20, 1.0)
    sd = float(np.std(JUDGE, ddof=1))
    assert (p.basis, p.correlation, p.gold_questions, p.target) == ("assumed", 0.3, 0, 0.9)
    assert p.sd_judge == pytest.approx(sd, rel=1e-12) and p.sd_gold == pytest.approx(sd, rel=1e-12)
    d = Design(200, 20, sd, sd, 0.3, ALPHA, 1.0)
    assert p.mde == pytest.approx(mde(d, 0.9, "non_inferiority"), rel=1e-9)
    assert p.power_at_margin == pytest.approx(power(d, 0.3, "non_inferiority"), rel=1e-9)
    assert p.labels_needed == labels_for_power(d, 0.3, 0.9, "non_inferiority")
    assert p.labels_needed_gold_only == labels_for_power(Design(200, 20, sd, sd, 0.0, ALPHA, 1.0), 0.3, 0.9,
                                                            "non_inferiority")
    assert p.labels_needed < p.labels_needed_gold_only  # a correlated judge saves labels
    nothing = power_plan(experiment(), H, JUDGE, ALPHA, None, 1.0)
    assert nothing.labelled is None and nothing.mde is None and nothing.power_at_margin is None
    assert nothing.labels_needed is not None


def test_with_enough_gold_the_correlation_and_spread_are_measured():
    rng = np.random.default_rng(2)
    g = rng.integers(-2, 3, MEASURED_FROM).astype(float)
    f = g + rng.integers(-1, 2, MEASURED_FROM)
    p = power_plan(experiment(), H, JUDGE, ALPHA, 30, 1.0, list(zip(g.tolist(), f.tolist(), strict=True)))
    assert (p.basis, p.gold_questions) == ("measured", MEASURED_FROM)
    assert p.correlation == pytest.approx(np.corrcoef(g, f)[0, 1], rel=1e-12)
    assert p.sd_gold == pytest.approx(np.std(g, ddof=1), rel=1e-12)
    fewer = power_plan(experiment(), H, JUDGE, ALPHA, 30, 1.0, list(zip(g, f, strict=True))[:-1])
    assert fewer.basis == "assumed" and fewer.correlation == 0.5


def test_the_planning_level_is_holms_first_step_under_holm():
    assert planning_alpha(experiment(), H, 4) == ALPHA / 4
    assert planning_alpha(SimpleNamespace(analysis=Analysis(family="none")), H, 4) == ALPHA


def test_the_label_line_states_the_draw_the_mde_and_the_labels_needed():
    p = {"basis": "assumed", "correlation": 0.5, "sd_judge": 0.8125, "sd_gold": 0.8125, "gold_questions": 0,
         "questions": 200, "labelled": 20, "alpha": 0.025, "step": 1.0, "target": 0.8, "mde": 0.4321,
         "power_at_margin": 0.2468, "labels_needed": 57, "labels_needed_gold_only": 71}
    line = power_line(H, p, 200)
    assert line == ("H1 (non-inferiority, margin 0.3, one-sided α 0.025, 200 paired questions): with 20 of them "
                    "labelled, the smallest difference beyond the boundary it detects with 80% power is 0.432; its "
                    "power at the margin is 0.25. 80% power at the margin needs 57 labelled questions (71 if the "
                    "judge's scores carry nothing). Assumed: judge–gold correlation of the paired differences 0.50 "
                    "(`assumed_gold_correlation`), gold differences spreading as the judge's (SD 0.812).")
    # a comparison of 200 of the run's 250 questions: the draw that gives 57 of them is about 57 * 250 / 200
    assert "57 (about --sample 72) labelled questions" in power_line(H, p, 250)
    out = power_line(H, p | {"labels_needed": None, "labels_needed_gold_only": None}, 200)
    assert "80% power at the margin is out of reach: gold on all 200 questions falls short" in out
    assert "no labels drawn yet" in power_line(H, p | {"labelled": None, "mde": None}, 200)


def test_judge_label_sample_states_each_hypothesis_power_with_the_draw_before_the_first_label():
    """judge.gold.label_power.sample_power on a planted run: 30 questions, arm a scored 1 everywhere, arm b's planted
    scores, q05 unscored in b (so 29 paired questions); the draw picks q00-q09 (9 of them paired)."""
    from core.records import Judgment, KeyRow
    from judge.gold.label_power import sample_power

    b_scores = [int(x) for x in np.random.default_rng(3).integers(0, 3, 30)]
    keys, verdicts = [], []
    for i in range(30):
        for arm, s in (("a", 1), ("b", b_scores[i])):
            label = f"L{arm}{i:02d}"
            keys.append(KeyRow(label=label, row=label, arm=arm, quant="q", question_id=f"q{i:02d}", sample=0,
                               scrubbed=0))
            status = "unscored" if (arm, i) == ("b", 5) else "scored"
            verdicts.append(Judgment(judge="J", label=label, question_id=f"q{i:02d}", status=status,
                                     score=s if status == "scored" else None, fields=None, repaired=False, error=None,
                                     prompt_sha256="", attempts=[], latency_s=0.0, prompt_tokens=0,
                                     completion_tokens=0, cached_tokens=0))
    h1 = Hypothesis("H1", "a", "b", "q", "non_inferiority", 1.0, ALPHA)
    h2 = Hypothesis("H2", "a", "b", "q", "superiority", 0.0, ALPHA, subset=("nowhere",))  # no question: no line
    folder = SimpleNamespace(exp=SimpleNamespace(analysis=Analysis(judge_error="decide"), hypotheses=[h1, h2]),
                             run=SimpleNamespace(arms=["a", "b"], judge=SimpleNamespace(primary="J")),
                             raw=SimpleNamespace(keys=keys, judgments=verdicts),
                             questions={f"q{i:02d}": SimpleNamespace(id=f"q{i:02d}", tags=()) for i in range(30)},
                             scale=(0, 1, 2))
    lines = sample_power(folder, {f"q{i:02d}" for i in range(10)})
    assert len(lines) == 2 and lines[0].startswith("Power of the gold-corrected (PPI++) interval, which decides each")
    diffs = [b_scores[i] - 1 for i in range(30) if i != 5]
    # Holm over the 2 registered hypotheses: H1 is planned at its first step, alpha / 2
    assert lines[1].startswith("H1 (non-inferiority, margin 1, one-sided α 0.0125, 29 paired questions): with 9 of "
                               "them labelled, ")
    assert lines[1].endswith(f"(SD {np.std(diffs, ddof=1):.3f}).")
    # the labels needed are counted in the comparison's questions; the draw that gives them, in the run's 30
    k = int(lines[1].split("needs ")[1].split(" ")[0])
    assert f"needs {k} (about --sample {math.ceil(k * 30 / 29)}) labelled questions" in lines[1]
