"""Decisions at their edges: exact boundaries, clusters, small n (calibration), length and quantisation cautions.

Expected values come from hand computation (exact Fractions), planted facts, or a peer library.
"""
from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from core.records import Comparison
from judge.numbers.agreement import length_bias
from judge.numbers.bias_checks import style_check
from judge.numbers.comparisons import compare, quant_check
from judge.numbers.stats.bootstrap import differences, resample_counts, units
from judge.numbers.stats.calibration import calibrate
from judge.numbers.stats.decide import decide
from judge.numbers.stats.paired import paired
from judge.numbers.stats.rule import Scale
from judge.verify.second_path import bootstrap as second_path
from judge.verify.second_path import decisions
from registration.prereg import Analysis, Hypothesis
from registration.questions import Question

pytestmark = pytest.mark.unit

# ---------------------------------------------------------------- exact boundary (K samples per question)

# the reproduction: n = 10 questions, K = 3 samples each
REPRO_A = [[1, 1, 1], [2, 1, 2], [1, 1, 1], [2, 2, 2], [1, 1, 1], [0, 1, 1], [0, 2, 0], [0, 1, 0], [2, 0, 1], [1, 0, 1]]
REPRO_B = [[1, 1, 1], [2, 2, 2], [1, 2, 2], [1, 2, 2], [1, 1, 1], [0, 1, 1], [0, 2, 0], [2, 1, 2], [2, 0, 1], [1, 0, 0]]


def k_means(rows) -> list[Fraction]:
    return [Fraction(sum(r), len(r)) for r in rows]


def k6_n30() -> tuple[list[list[int]], list[list[int]]]:
    """A K = 6, n = 30 data set (scores 0/1/2) whose exact 97.5% bound (2,000 resamples, seed 7) is -1/10."""
    rng = np.random.default_rng(18)
    a = rng.integers(0, 3, (30, 6))
    b = np.clip(a + rng.integers(-1, 2, (30, 6)) * (rng.random((30, 6)) < 0.4), 0, 2)
    return a.tolist(), b.tolist()


def hand_bound(a, b, resamples: int, seed: int, alpha: Fraction) -> Fraction:
    """The percentile bound by hand: every resample mean as a Fraction, the type-7 quantile h = (B - 1) p."""
    d = [y - x for x, y in zip(a, b, strict=False)]
    kinds, counts = resample_counts(units(d), resamples, seed)
    assert sorted(k for k, _ in kinds) == sorted(set(d))  # the resamples describe these differences
    means = sorted(sum((c * k for c, (k, _) in zip(row, kinds, strict=False)), Fraction(0)) / len(d)
                   for row in counts.tolist())
    h = (resamples - 1) * alpha
    lo = math.floor(h)
    return means[lo] + (h - lo) * (means[lo + 1] - means[lo])


@pytest.mark.parametrize("case", ["issue n=10 K=3", "n=30 K=6"])
def test_a_bound_exactly_at_the_margin_is_not_shown_and_both_paths_agree(case):
    if case == "issue n=10 K=3":
        a, b, resamples, seed = k_means(REPRO_A), k_means(REPRO_B), 10000, 20261130
    else:
        ra, rb = k6_n30()
        a, b, resamples, seed = k_means(ra), k_means(rb), 2000, 7
    assert hand_bound(a, b, resamples, seed, Fraction(1, 40)) == Fraction(-1, 10)  # the planted tie
    p = paired(a, b, resamples=resamples, seed=seed, alpha=0.025, margin=0.1, rule="bootstrap")
    assert p.bound == -0.1  # exactly the margin, not -0.09999999999999998
    assert decide(p, "non_inferiority", 0.1).verdict == "not shown"
    chk = second_path.check_paired(a, b, resample_counts(units(differences(a, b)), resamples, seed), "percentile",
                                   0.025, margin=0.1)
    assert chk["bound"] == p.bound and chk["ci_high"] == p.ci_high  # bit for bit, not merely within 1e-9
    # the other registered rules are at least as strict
    k = 3 if case == "issue n=10 K=3" else 6
    for rule in ("score", "bootstrap_and_t"):
        p = paired(a, b, resamples=resamples, seed=seed, alpha=0.025, margin=0.1, rule=rule, scale=Scale(0, 2, k))
        assert decide(p, "non_inferiority", 0.1).verdict == "not shown"


@pytest.mark.parametrize("k", [3, 5, 6])
def test_bounds_of_k_averaged_data_equal_the_hand_computed_exact_bound(k):
    """Random K-averaged data sets: paired()'s bound is the exact bound rounded once, and the verdict is the
    exact comparison with the decimal margin (so a bound exactly at -1/10 never claims)."""
    rng = np.random.default_rng(100 + k)
    for _ in range(25):
        n = int(rng.integers(4, 16))
        raw = rng.integers(0, 3, (n, k))
        a, b = k_means(raw.tolist()), k_means(np.clip(raw + rng.integers(-1, 2, (n, k)), 0, 2).tolist())
        exact = hand_bound(a, b, 400, 3, Fraction(1, 40))
        p = paired(a, b, resamples=400, seed=3, alpha=0.025, rule="bootstrap")
        assert p.bound == float(exact)
        assert (decide(p, "non_inferiority", 0.1).verdict != "not shown") == (exact > Fraction(-1, 10))


def test_a_tie_at_zero_is_not_superior():
    # d = (0, 0, 1/3): a resample of three zeros has probability 8/27, so the 2.5% quantile is exactly 0
    a, b = [Fraction(0)] * 3, [Fraction(0), Fraction(0), Fraction(1, 3)]
    p = paired(a, b, resamples=4000, seed=1, alpha=0.025, rule="bootstrap")
    assert p.bound == 0.0
    assert decide(p, "superiority").verdict == "not shown"


# ---------------------------------------------------------------- clusters


def clustered_arms():
    """12 clusters of 5 questions; within a cluster every difference is the same (a strong cluster effect)."""
    per_cluster = [0] * 8 + [1] * 3 + [-1]
    a = [Fraction(1)] * 60
    b = [Fraction(1 + v) for v in per_cluster for _ in range(5)]
    labels = [f"c{i}" for i in range(12) for _ in range(5)]
    return a, b, labels, per_cluster


def test_cluster_bootstrap_of_equal_clusters_is_the_bootstrap_of_cluster_means():
    a, b, labels, per_cluster = clustered_arms()
    clustered = paired(a, b, resamples=5000, seed=3, alpha=0.025, clusters=labels, rule="bootstrap")
    of_means = paired([0] * 12, per_cluster, resamples=5000, seed=3, alpha=0.025, rule="bootstrap")
    assert (clustered.ci_low, clustered.ci_high) == (of_means.ci_low, of_means.ci_high)
    assert clustered.resampling == "clusters" and clustered.units == 12
    iid = paired(a, b, resamples=5000, seed=3, alpha=0.025, rule="bootstrap")
    assert iid.resampling == "questions" and iid.units == 60
    # the i.i.d. bootstrap treats 60 correlated questions as independent: it claims, the cluster bootstrap does not
    assert decide(iid, "non_inferiority", 0.1).verdict in ("non-inferior", "superior")
    assert decide(clustered, "non_inferiority", 0.1).verdict == "not shown"
    chk = second_path.check_paired(a, b, resample_counts(units(differences(a, b), labels), 5000, 3), "percentile",
                                   0.025, clusters=labels)
    assert (chk["ci_low"], chk["ci_high"], chk["units"]) == (clustered.ci_low, clustered.ci_high, 12)


@pytest.mark.parametrize("method", ["percentile", "bca"])
# rule "score": judge.verify.second_path, tested below
@pytest.mark.parametrize("rule", ["bootstrap", "bootstrap_and_t"])
def test_check_path_agrees_on_unequal_clusters(method, rule):
    rng = np.random.default_rng(4)
    a = k_means(rng.integers(0, 3, (45, 3)).tolist())
    b = k_means(rng.integers(0, 3, (45, 3)).tolist())
    labels = [f"c{int(x)}" for x in rng.integers(0, 14, 45)]  # clusters of unequal size
    p = paired(a, b, resamples=3000, seed=2, alpha=0.025, method=method, clusters=labels, rule=rule, margin=0.1,
                 scale=Scale(0, 2, 3))
    chk = decisions.comparison(a, b, alpha=0.025, margin=0.1, rule=rule, method=method, resamples=3000, seed=2,
                               scale=(0, 2, 3), labels=labels)
    for key, v in chk.items():
        if isinstance(v, float):
            assert p.to_dict()[key] == pytest.approx(v, abs=1e-9), key
        else:
            assert p.to_dict()[key] == v, key


def analysis(**kw) -> SimpleNamespace:
    return SimpleNamespace(analysis=Analysis(resamples=2000, seed=5, calibration_sims=100, **kw))


def cells(*arms):
    return [SimpleNamespace(arm=arm, quant="Q8_0", answers=60, answer_errors=0, unscored=0, judge_errors=0)
            for arm in arms]


def questions(labels):
    return {f"q{i:02d}": Question(f"q{i:02d}", "?", None, (), c, "x.jsonl") for i, c in enumerate(labels)}


def scores(a, b):
    return {("base", "Q8_0"): {f"q{i:02d}": x for i, x in enumerate(a)},
            ("trained", "Q8_0"): {f"q{i:02d}": x for i, x in enumerate(b)}}


H = Hypothesis(id="H1", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1, alpha=0.025)
S02 = Scale(0, 2)


def test_a_declared_cluster_set_is_decided_by_clusters_and_below_the_minimum_is_inconclusive():
    a, b, labels, _ = clustered_arms()
    out = compare(H, analysis(), questions(labels), scores(a, b), cells("base", "trained"), S02)
    assert out.result.resampling == "clusters" and out.clusters == 12
    assert out.verdict == "not shown"
    few = compare(H, analysis(min_clusters=13), questions(labels), scores(a, b), cells("base", "trained"), S02)
    assert few.verdict == "inconclusive"
    assert "only 12 cluster(s)" in few.reason and "minimum of 13" in few.reason
    one = compare(H, analysis(), questions(["d1"] * 60), scores(a, b), cells("base", "trained"), S02)
    assert one.clusters == 1 and one.clustered_se is None  # undefined, not 0.0
    assert one.verdict == "inconclusive" and "only 1 cluster(s)" in one.reason
    none = compare(H, analysis(), questions([None] * 60), scores(a, b), cells("base", "trained"), S02)
    assert none.result.resampling == "questions" and none.clusters is None


# ---------------------------------------------------------------- small n: calibration at the boundary


def test_two_questions_one_win_one_tie_the_calibration_shows_the_bootstrap_rules_rate_and_decides_nothing():
    a, b = [Fraction(0), Fraction(0)], [Fraction(1), Fraction(0)]
    labels = [None, None]
    # the bootstrap bound alone is 0 (it cannot fall below the smallest observed difference) ...
    p = paired(a, b, resamples=2000, seed=5, alpha=0.025, rule="bootstrap")
    assert p.bound == 0.0 and decide(p, "non_inferiority", 0.1).verdict == "non-inferior"
    # ... but simulated at the boundary (differences 0.4 and -0.6) the rule claims whenever both draws are the 0.4:
    # a quarter of the time, ten times alpha
    cal = calibrate(a, b, "non_inferiority", 0.1, alpha=0.025, method="percentile", resamples=2000,
                      rule="bootstrap", sims=400, seed=5, ceiling=0.05)
    assert cal.boundary == -0.1 and cal.sims == 400
    assert 0.18 < cal.rate < 0.32  # 0.25 +- 3.5 binomial SEs
    out = compare(H, analysis(rule="bootstrap"), questions(labels), scores(a, b), cells("base", "trained"), S02)
    c = out.calibration  # the registered 100 simulations with the analysis seed: 0.25 +- 3.5 binomial SEs
    assert (c.sims, c.seed, c.boundary) == (100, 5, -0.1) and c.rate == c.claims / 100
    assert 0.10 < c.rate < 0.40 and c.rate > c.ceiling == 0.05
    # reported above the ceiling, it withdraws nothing: the registered rule decides (BENCHMARKS.md: at the boundary
    # the withdrawal removed almost none of the false claims, so it is a diagnostic)
    assert out.verdict == "non-inferior" and "false-claim rate" not in out.reason
    assert "The claim stands above the ceiling: the calibration is a diagnostic" in calibration_line(out.to_dict())
    assert "ceiling:" not in calibration_line(out.to_dict() | {"verdict": "not shown"})  # no claim: nothing to say
    # the default rule does not claim at all
    default = compare(H, analysis(), questions(labels), scores(a, b), cells("base", "trained"), S02)
    assert default.verdict == "not shown"


def calibration_line(c: dict) -> str:
    """The report's calibration line of comparison c, rendered from judge/outputs/templates/report.md.j2's own text,
    with c read as numbers.json's reader reads it."""
    from jinja2 import Environment, StrictUndefined

    from core.records import Comparison
    from judge.outputs.report import TEMPLATES

    from support.planted import contract
    src = (TEMPLATES / "report.md.j2").read_text()
    start = src.index('{% if c.calibration %}')
    line = Environment(undefined=StrictUndefined).from_string(src[start:src.index("{% endif %}{% endif %}", start)]
                                                             + "{% endif %}{% endif %}")
    return line.render(c=contract(Comparison, c))


def test_calibration_is_seeded_and_shifts_to_the_boundary():
    rng = np.random.default_rng(9)
    a = k_means(rng.integers(0, 3, (40, 2)).tolist())
    b = k_means(rng.integers(0, 3, (40, 2)).tolist())
    kw = dict(alpha=0.025, method="percentile", resamples=1000, rule="bootstrap_and_t", sims=150, ceiling=0.05,
              scale=Scale(0, 2, 2))
    one = calibrate(a, b, "non_inferiority", 0.1, seed=1, **kw)
    assert one == calibrate(a, b, "non_inferiority", 0.1, seed=1, **kw)
    assert one.rate <= 0.05  # n = 40: near alpha, and never much above it
    # shifting b by a constant does not change the simulated population (it is re-centred on the boundary)
    assert calibrate(a, [x + Fraction(1, 2) for x in b], "non_inferiority", 0.1, seed=1, **kw).rate == one.rate
    assert calibrate(a, b, "superiority", 0.0, seed=1, **kw).boundary == 0.0


# ---------------------------------------------------------------- length bias


def answer(arm: str, q: str, words: int) -> SimpleNamespace:
    return SimpleNamespace(arm=arm, quant="Q8_0", question_id=q, status="ok", text=" ".join(["w"] * words))


def length_paying_subset():
    """40 questions, the first 20 tagged "s". On "s" the judge pays for length: trained writes 60 words and gets 2;
    base writes 10 words and gets 1, except on every fourth question, where it writes 60 and gets 2 too (a paired
    difference of 1 on 15 questions, 0 on 5: +0.75, all of it length). Outside "s" both arms write 10 words and
    trained is better by 2 points, whatever the length."""
    a, b, answers = {}, {}, []
    for i in range(40):
        q = f"q{i:02d}"
        if i < 20:
            long_a = i % 4 == 0
            a[q], b[q] = Fraction(2 if long_a else 1), Fraction(2)
            answers += [answer("base", q, 60 if long_a else 10), answer("trained", q, 60)]
        else:
            a[q], b[q] = Fraction(0), Fraction(2)
            answers += [answer("base", q, 10), answer("trained", q, 10)]
    qs = {f"q{i:02d}": Question(f"q{i:02d}", "?", None, ("s",) if i < 20 else ("t",), None, "x.jsonl")
          for i in range(40)}
    return {("base", "Q8_0"): a, ("trained", "Q8_0"): b}, answers, qs


def test_the_length_caution_is_computed_on_the_hypothesis_own_pairs():
    """A planted length-paying judge on a subset hypothesis: over the subset's pairs the difference at equal length is
    0 (by hand: d = slope x log-length difference exactly), so the subset's "superior" gets a length caution; the
    adjustment over every answer of both arms (the earlier caution's basis) moves the subset's decision interval by
    too little to change it: the two disagree, and the caution follows the subset."""
    sc, answers, qs = length_paying_subset()
    hs = Hypothesis(id="Hs", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1, alpha=0.025,
                    subset=("s",))
    c = compare(hs, analysis(), qs, sc, cells("base", "trained"), S02)
    assert c.verdict == "superior" and c.result.diff == pytest.approx(0.75)
    c = style_check(c, hs, ("length",), sc, answers)
    st = c.style
    assert st.n == 20 and st.raw == pytest.approx(0.75) and st.adjusted == pytest.approx(0.0, abs=1e-12)
    assert st.slopes["length"] == pytest.approx(1 / (math.log(61) - math.log(11)))
    assert len(c.length_notes) == 1
    assert "over this hypothesis's 20 pairs, adjusted for length the difference is +0.000" in c.length_notes[0]
    assert '"not shown" instead of "superior"' in c.length_notes[0]
    # the earlier basis: every answer of both arms, score on arm and log length
    points = [(r.arm, "Q8_0", len(r.text.split()), int(sc[(r.arm, "Q8_0")][r.question_id])) for r in answers]
    everywhere = length_bias(points, [("Hs", "base", "trained", "Q8_0")]).comparisons[0]
    shift = everywhere.length_adjusted_difference - everywhere.raw_difference
    r = c.result
    moved = replace(r, bound=r.bound + shift, upper=r.upper + shift, tests=None)
    assert decide(moved, "non_inferiority", 0.1).verdict == "superior"


def test_no_length_caution_far_from_the_threshold_or_without_length_differences():
    sc, answers, qs = length_paying_subset()
    everything = Hypothesis(id="H", a="base", b="trained", quant="Q8_0", kind="non_inferiority", margin=0.1,
                            alpha=0.025)
    c = compare(everything, analysis(), qs, sc, cells("base", "trained"), S02)
    c = style_check(c, everything, ("length",), sc, answers)
    assert c.verdict == "superior" and c.style.adjusted > 0.1 and c.length_notes == []
    same = [answer(r.arm, r.question_id, 10) for r in answers]  # no length difference: nothing to adjust
    c = compare(everything, analysis(), qs, sc, cells("base", "trained"), S02)
    c = style_check(c, everything, ("length",), sc, same)
    assert c.style.covariates == [] and c.length_notes == []


# ---------------------------------------------------------------- quantisation caution


def quant_setup(base_q4: float):
    exp = SimpleNamespace(arm=lambda name: SimpleNamespace(quants=["Q8_0", "Q4_K_M"]))
    sc = {("base", "Q8_0"): {"q1": Fraction(1), "q2": Fraction(1)},
          ("base", "Q4_K_M"): {"q1": Fraction(base_q4), "q2": Fraction(base_q4)},
          ("trained", "Q8_0"): {"q1": Fraction(6, 5), "q2": Fraction(6, 5)},
          ("trained", "Q4_K_M"): {"q1": Fraction(base_q4) + Fraction(1, 5), "q2": Fraction(base_q4) + Fraction(1, 5)}}
    comps = [Comparison(id="H1", text="", a="base", b="trained", quant=q, kind="non_inferiority", margin=0.1,
                        alpha=0.025, subset=[], paired_questions=["q1", "q2"], unscored_rate={},
                        result=SimpleNamespace(diff=0.2), clusters=None, clustered_se=None, calibration=None,
                        quant_notes=[], verdict="superior", reason="") for q in ("Q8_0", "Q4_K_M")]
    return exp, sc, comps


def test_quantisation_caution_names_the_base_shift_and_the_effect():
    exp, sc, comps = quant_setup(1.5)  # base moves +0.5 between quants; the effect is +0.2
    check, comps = quant_check(exp, ["base", "trained"], sc, comps)
    assert check.means["base"] == {"Q8_0": 1.0, "Q4_K_M": 1.5}
    q8 = comps[0].quant_notes
    assert q8 == ["base's own score moves +0.500 from Q8_0 to Q4_K_M, comparable to the effect +0.200: "
                  "quantisation is a rival explanation"]
    assert "-0.500 from Q4_K_M to Q8_0" in comps[1].quant_notes[0]


def test_no_quantisation_caution_when_the_base_barely_moves():
    exp, sc, comps = quant_setup(1.05)  # base moves +0.05 < half the effect
    _, comps = quant_check(exp, ["base", "trained"], sc, comps)
    assert comps[0].quant_notes == [] and comps[1].quant_notes == []


def test_quantisation_caution_uses_the_hypothesis_questions_not_the_whole_arm():
    # base at Q4_K_M: +1 on q3..q6 (outside the subset), unchanged on the subset's q1, q2
    exp, sc, comps = quant_setup(1.0)
    for q in ("q3", "q4", "q5", "q6"):
        sc[("base", "Q8_0")][q], sc[("base", "Q4_K_M")][q] = Fraction(0), Fraction(1)
    comps = [replace(c, subset=["arithmetic"]) for c in comps]
    check, comps = quant_check(exp, ["base", "trained"], sc, comps)
    assert check.means["base"]["Q4_K_M"] - check.means["base"]["Q8_0"] == pytest.approx(4 / 6)  # whole arm
    assert comps[0].quant_notes == []  # on the subset's questions the base did not move at all
    # and the other way round: the subset's questions move, the whole arm hardly
    exp, sc, comps = quant_setup(1.0)
    sc[("base", "Q4_K_M")]["q1"] = Fraction(2)  # +1 on one of the two paired questions: +0.5 on the subset
    for i in range(3, 40):
        sc[("base", "Q8_0")][f"q{i}"] = sc[("base", "Q4_K_M")][f"q{i}"] = Fraction(1)
    _, comps = quant_check(exp, ["base", "trained"], sc, comps)
    assert comps[0].quant_notes == ["base's own score moves +0.500 from Q8_0 to Q4_K_M, comparable to the "
                                       "effect +0.200: quantisation is a rival explanation"]


# ---------------------------------------------------------------- registration


@pytest.mark.parametrize("line, field", [("decision_rule = \"t\"", "decision_rule"),
                                         ("min_clusters = 0", "min_clusters"),
                                         ("calibration_sims = 1.5", "calibration_sims"),
                                         ("calibration_ceiling = 2", "calibration_ceiling")])
def test_bad_analysis_settings_are_refused_naming_the_field(tmp_path, line, field):
    import re

    from test_readme import _example

    from core.errors import BadInput
    from registration.prereg import load_experiment

    text = re.sub(rf"(?m)^{field} = .*$", line, _example(), count=1)
    assert line in text
    (tmp_path / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(tmp_path)
    assert e.value.field == field


def test_registered_analysis_defaults():
    a = Analysis()
    assert (a.rule, a.min_clusters, a.calibration_sims, a.calibration_ceiling) == ("score", 10, 200, None)


# ---------------------------------------------------------------- panel rules


def panel_exp():
    """Arms base (family fam-a) and trained (fam-b); judges: kin (fam-b), other (gpt), plain (no family)."""
    models = {m: SimpleNamespace(family=f) for m, f in (("ma", "fam-a"), ("mb", "fam-b"), ("mk", "fam-b"),
                                                        ("mo", "gpt"), ("mp", None))}
    arms = {"base": SimpleNamespace(model="ma"), "trained": SimpleNamespace(model="mb")}
    judges = [SimpleNamespace(name=n, model=m) for n, m in (("kin", "mk"), ("other", "mo"), ("plain", "mp"))]
    return SimpleNamespace(models=models, arm=arms.__getitem__, judges=judges)


def test_unrelated_mean_averages_only_the_judges_sharing_no_family_with_either_arm():
    from judge.numbers.panel_rules import PANEL_RULES

    by_judge = {"kin": scores([Fraction(0)] * 3, [Fraction(2)] * 3),
                "other": scores([Fraction(1), Fraction(0), Fraction(2)], [Fraction(1), Fraction(1), Fraction(2)]),
                "plain": scores([Fraction(2), Fraction(0)], [Fraction(0), Fraction(1)])}
    got = PANEL_RULES["unrelated-mean"].decided_on(panel_exp(), H, {}, by_judge)
    # other and plain on the questions both scored (q00, q01); kin (trained's family) left out
    assert got == {("base", "Q8_0"): {"q00": Fraction(3, 2), "q01": Fraction(0)},
                   ("trained", "Q8_0"): {"q00": Fraction(1, 2), "q01": Fraction(1)}}


def test_all_agree_claims_only_what_every_judge_claims():
    from judge.numbers.panel_rules import PANEL_RULES

    def panel_verdict(rule, c, sp):
        return PANEL_RULES[rule].verdict(c, sp)

    sp = SimpleNamespace(judges={"kin": SimpleNamespace(verdict="superior"),
                                 "other": SimpleNamespace(verdict="not shown")})
    c = SimpleNamespace(verdict="superior")
    assert panel_verdict("all-agree", c, sp) == ("inconclusive", 'panel rule all-agree: the judges disagree '
                                                 '(kin "superior", other "not shown")')
    agree = SimpleNamespace(judges={"kin": SimpleNamespace(verdict="superior"),
                                    "other": SimpleNamespace(verdict="superior")})
    assert panel_verdict("all-agree", c, agree) is None
    assert panel_verdict("primary", c, sp) is None and panel_verdict("all-agree", c, None) is None


# ---------------------------------------------------------------- test-retest


def test_retest_counts_flips_per_judge_and_names_a_decision_the_retests_change():
    from judge.numbers.bias_checks import retest_section

    def v(judge, label, score, status="scored"):
        return SimpleNamespace(judge=judge, label=label, kind="single", status=status, score=score)

    first = [v("p", f"L{i}", 1) for i in range(6)] + [v("o", f"L{i}", 2) for i in range(6)]
    again = ([v("p", "L0", 2), v("p", "L1", 1), v("p", "L2", 0), v("p", "L3", None, "unscored")]
             + [v("o", f"L{i}", 2) for i in range(3)])
    seen = []

    def redecide(swap):
        seen.append(swap)
        return {"H1": "not shown", "H2": "superior"}

    out = retest_section(again, first, (0, 1, 2), 1, redecide, "p", {"H1": "superior", "H2": "superior"})
    p, o = out.judges["p"], out.judges["o"]
    assert (p.drawn, p.n, p.flips, p.flip_rate) == (4, 3, 2, 2 / 3)  # the unscored retest is not a pair
    assert (o.drawn, o.n, o.flips) == (3, 3, 0)
    assert seen == [{"L0": 2, "L1": 1, "L2": 0}] and out.replaced == 3  # only the primary judge's scored retests
    assert [d.to_dict() for d in out.decisions_changed] == [{"id": "H1", "verdict": "superior",
                                                             "with_retests": "not shown"}]
    assert retest_section([], first, (0, 1, 2), 1, redecide, "p", {}) is None
