"""verify's own path for the judge-bias numbers (judge.verify.second_path.biases) against peers: its style regression
against statsmodels' OLS, its test-retest kappa and that kappa's bootstrap interval against scikit-learn, its Holm
procedure against statsmodels' multipletests, and the main path's family against it on the same claims."""
from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.records import Comparison
from judge.numbers.bias_checks import apply_family
from judge.verify.second_path.agreement import kappa_quadratic
from judge.verify.second_path.biases import _family, _ols, clopper_pearson, retest_kappa_interval

pytestmark = pytest.mark.unit


@settings(max_examples=30, deadline=None)
@given(st.integers(5, 30), st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_the_style_regression_is_statsmodels_ols(n, seed, k):
    import statsmodels.api as sm

    rng = np.random.default_rng(seed)
    names = ["length", "headers", "citations"][:k]
    xs = {c: rng.normal(size=n).round(2).tolist() for c in names}
    y = (rng.integers(-2, 3, n) + 0.0).tolist()
    x = sm.add_constant(np.column_stack([xs[c] for c in names]), has_constant="add")
    got = _ols(y, xs, 0.025)
    if n - x.shape[1] < 1 or np.linalg.matrix_rank(x) < x.shape[1]:
        assert got["adjusted"] is None
        return
    fit = sm.OLS(y, x).fit()
    lo, hi = fit.conf_int(alpha=0.05)[0]
    assert got["adjusted"] == pytest.approx(fit.params[0], abs=1e-9) and got["se"] == pytest.approx(fit.bse[0])
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(lo, abs=1e-9), pytest.approx(hi, abs=1e-9))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=50))
def test_the_retest_kappa_is_sklearns(pairs):
    from sklearn.metrics import cohen_kappa_score

    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    got = kappa_quadratic(a, b, [0, 1, 2])
    with np.errstate(all="ignore"):
        want = cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2])
    assert got == pytest.approx(want, abs=1e-9) if np.isfinite(want) else got is None


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_flip_rate_interval_is_statsmodels_clopper_pearson(xn):
    from statsmodels.stats.proportion import proportion_confint

    x, n = xn
    low, high = proportion_confint(x, n, alpha=0.05, method="beta")
    assert clopper_pearson(x, n) == [pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)]


@settings(max_examples=3, deadline=None)  # scikit-learn takes a millisecond a kappa: 1,000 per example
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=40), st.integers(0, 2**32 - 1))
def test_the_retest_kappa_interval_is_sklearns_kappa_on_the_documented_draws(pairs, seed):
    """Resample r is the r-th ``default_rng(seed).integers(0, n, n)`` of 1,000; the interval is the 2.5 and 97.5
    percentiles (numpy's linear rule) of the resamples where scikit-learn's quadratic kappa is defined, none when
    100 or fewer are."""
    from sklearn.metrics import cohen_kappa_score

    a, b = np.array([x for x, _ in pairs]), np.array([y for _, y in pairs])
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(1000):
        idx = rng.integers(0, len(a), len(a))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an undefined kappa (one category) is NaN, left out below
            boots.append(cohen_kappa_score(a[idx], b[idx], weights="quadratic", labels=[0, 1, 2]))
    boots = [k for k in boots if np.isfinite(k)]
    got = retest_kappa_interval(a.tolist(), b.tolist(), [0, 1, 2], seed)
    if len(boots) <= 100:
        assert got is None
        return
    assert got == pytest.approx(np.percentile(boots, [2.5, 97.5]).tolist(), abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 0.1, allow_nan=False), min_size=1, max_size=6),
       st.sampled_from(["holm", "fixed-sequence", "none"]))  # multipletests takes a third of a second a call here
def test_the_family_by_the_independent_path_is_the_main_paths_and_holm_is_statsmodels(p, method):
    """Hypotheses with p-values p, claiming at a level a when p <= a: both paths run the procedure on the same claims
    (the main path records its tests at adjusted levels; the independent path reads them) and agree on every level,
    claim and verdict; Holm's claims are statsmodels' rejections."""
    from statsmodels.stats.multitest import multipletests

    def verdict(i, a):
        return "superior" if p[i] <= a else "not shown"

    main = [Comparison(id=f"H{i}", text="", a="a", b="b", quant="q", kind="superiority", margin=0.0, alpha=0.025,
                       subset=[], paired_questions=[], unscored_rate={}, result=None, clusters=None, clustered_se=None,
                       calibration=None, quant_notes=[], verdict=verdict(i, 0.025), reason="r") for i in range(len(p))]
    fam, main = apply_family(method, main, lambda i, a: SimpleNamespace(verdict=verdict(i, a), kind="superiority"))
    main = [c.to_dict() for c in main]
    ind = [{"id": c["id"], "alpha": 0.025, "kind": "superiority", "own_verdict": verdict(i, 0.025)}
           for i, c in enumerate(main)]
    again, steps = _family(method, ind, {c["id"]: c for c in main})
    assert again == fam.to_dict()
    for c in main:
        assert {k: c["family"][k] for k in ("tested_at", "claimed", "step")} == steps[c["id"]]
    if method == "holm":
        reject = multipletests(p, alpha=0.025, method="holm")[0]
        assert [c["family"]["claimed"] for c in main] == list(reject)
        assert [c["verdict"] for c in main] == ["superior" if r else "not shown" for r in reject]
    if method == "fixed-sequence" and fam.stopped_at is not None:
        stop = [c["id"] for c in main].index(fam.stopped_at)
        assert all(c["verdict"] == "inconclusive" and c["family"]["tested_at"] is None for c in main[stop + 1:])


def test_a_folder_decided_before_the_family_existed_gets_one_line_saying_how_to_re_decide_it():
    from types import SimpleNamespace

    from judge.verify.earlier_versions import earlier_rule_findings

    exp = SimpleNamespace(analysis=SimpleNamespace(rule="score"))
    old = {"comparisons": [{"result": {"rule": "score", "scale": [0, 2, 1]}}]}
    (line,) = earlier_rule_findings(old, exp)
    assert "one family" in line and "`judge run` into the folder re-decides it" in line
    assert earlier_rule_findings(old | {"family": {"method": "holm"}}, exp) == []


def test_a_claim_recorded_at_an_adjusted_alpha_that_verifys_own_score_test_does_not_make_is_a_finding():
    """Under the score rule: +1 on 30 of 40 questions is superior at 0.025 / 4 (far from the boundary: mean 0.75,
    SE 0.069, t = 10.8 by hand), all ties at no level; a recorded claim for the ties is forged."""
    from fractions import Fraction
    from types import SimpleNamespace

    from judge.verify.second_path.biases import forged_claims
    from registration.prereg import Hypothesis

    qs = {f"q{i:02d}": [] for i in range(40)}
    h = [Hypothesis(id=x, a="base", b=arm, quant="Q8_0", kind="superiority", margin=0.0, alpha=0.025)
         for x, arm in (("Hup", "up"), ("Htie", "tie"))]
    exp = SimpleNamespace(analysis=SimpleNamespace(rule="score"), judge_panel_rule="primary", hypotheses=h,
                          rubric="correctness", dir=Path(__file__).resolve().parents[1] / "sealed" / "demo",  # 0 to 2
                          contamination=None)
    means = {("base", "Q8_0"): {q: Fraction(0) for q in qs},
             ("up", "Q8_0"): {q: Fraction(int(i < 30)) for i, q in enumerate(qs)},
             ("tie", "Q8_0"): {q: Fraction(0) for q in qs}}

    def numbers(claim_tie: bool) -> dict:
        return {"comparisons": [
            {"id": "Hup", "alpha": 0.025, "family": {"tests": [{"alpha": 0.00625, "verdict": "superior",
                                                                "claim": True}]}},
            {"id": "Htie", "alpha": 0.025, "family": {"tests": [{"alpha": 0.00625, "verdict": "superior",
                                                                 "claim": claim_tie}]}}]}

    clusters = {q: None for q in qs}
    assert forged_claims(numbers(False), exp, means, qs, clusters) == []
    (finding,) = forged_claims(numbers(True), exp, means, qs, clusters)
    assert finding.startswith("numbers.json comparisons[Htie].family.tests: a claim ('superior') at one-sided "
                              "α = 0.00625, but verify's own score test there says")


@pytest.mark.parametrize(("bound", "upper", "adjusted", "raised"), [
    (-0.1, 0.5, 0.4, True),  # lower bound -0.1 moved by +0.2 is 0.1 > 0: "superior" for "not shown"
    (0.3, 0.9, 0.1, False),  # moved by -0.1 to 0.2 > 0: "superior" either way
    (0.05, 0.5, 0.0, True),  # moved by -0.2 to -0.15: "not shown" for "superior"
    (-0.5, 0.2, 0.3, False),  # moved by +0.1 to -0.4: "not shown" either way
])
def test_which_style_caution_is_raised_is_decided_again_by_verifys_own_path(bound, upper, adjusted, raised):
    """Superiority at margin 0, the paired mean 0.2: the style caution is raised exactly where the decision
    interval moved by (adjusted - 0.2) crosses 0 (by hand); a caution present where it is not, or missing where it
    is, is a finding; the self-preference cautions are decided alike from the judges' own verdicts."""
    from types import SimpleNamespace

    from judge.verify.second_path.biases import caution_findings
    from registration.prereg import Hypothesis

    h = Hypothesis(id="H1", a="base", b="up", quant="Q8_0", kind="superiority", margin=0.0, alpha=0.025)
    exp = SimpleNamespace(hypotheses=[h])
    ind = {"comparisons": [{"id": "H1", "result": {"rule": "percentile", "bound": bound, "upper": upper},
                            "style": {"raw": 0.2, "adjusted": adjusted, "covariates": ["length"]},
                            "self_preference": {"judges": {"a": {"verdict": "superior"}, "b": {"verdict": "not shown"}},
                                                "lifts": {"b": {}}}}]}

    def numbers(length_notes: int, sp_notes: list[str]) -> dict:
        return {"comparisons": [{"id": "H1", "length_notes": ["note"] * length_notes,
                                 "self_preference": {"notes": sp_notes}}]}

    shares = ["judge b shares the model family f with an arm and estimates ..."]
    assert caution_findings(numbers(int(raised), shares), ind, exp) == []
    (finding,) = caution_findings(numbers(1 - int(raised), shares), ind, exp)
    assert finding.startswith(f"numbers.json comparisons[H1].length_notes: {1 - int(raised)} style caution(s), but "
                              f"verify's own path raises {int(raised)}")
    (finding,) = caution_findings(numbers(int(raised), []), ind, exp)
    assert finding.startswith("numbers.json comparisons[H1].self_preference.notes: self-preference cautions for [], "
                              "but verify's own path raises them for ['b']")
