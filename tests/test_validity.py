"""The judge's error and the decisions it may change (judge.numbers.validity), and verify's second path through them
(judge.verify.second_path.judge_error), checked against sklearn, krippendorff, ppi_py, the main path and planted
facts."""
from __future__ import annotations

import math
import random
from dataclasses import replace
from fractions import Fraction

import krippendorff
import numpy as np
import ppi_py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from scipy.stats import t as scipy_t
from sklearn.metrics import cohen_kappa_score

from core.records import Comparison, ComparisonFamily, Judgment, KeyRow
from judge.gold.sources import GoldScore, GoldSet, GoldStratum
from judge.numbers import validity
from judge.numbers.stats import ppi
from judge.outputs.report import TEMPLATES
from judge.verify.second_path import agreement, gold_agreement
from judge.verify.second_path import judge_error as validity_check
from judge.verify.second_path import ppi as second_ppi
from registration.prereg import Hypothesis, load_experiment
from registration.questions import Question

from conftest import ROOT
from support import peer_agreement

pytestmark = pytest.mark.unit

SCALE = (0, 1, 2)
GUARD = 1.0  # the guarded rule's pseudo-residual on SCALE, by hand: half the range 2 - 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SCALE), st.sampled_from(SCALE)), min_size=2, max_size=40))
def test_the_second_path_agreement_equals_sklearn_and_krippendorff(pairs):
    gold, judge = [g for g, _ in pairs], [j for _, j in pairs]
    kappa = agreement.kappa_quadratic(gold, judge, list(SCALE))
    with np.errstate(all="ignore"):
        want = cohen_kappa_score(gold, judge, weights="quadratic", labels=list(SCALE))
    assert (kappa is None and not math.isfinite(want)) or kappa == pytest.approx(want, abs=1e-12)
    alpha = gold_agreement.alpha_ordinal(gold, judge)
    if len(set(gold) | set(judge)) < 2:
        assert alpha is None
    else:
        want = krippendorff.alpha(reliability_data=[gold, judge], level_of_measurement="ordinal",
                                  value_domain=list(SCALE))
        assert alpha == pytest.approx(want, abs=1e-9)


diffs = st.lists(st.integers(-2, 2), min_size=2, max_size=12)


@st.composite
def strata(draw):
    """Up to three strata, each (gold, judge on the labelled, judge on the others): labelled whole or in part."""
    out = {}
    for name in draw(st.lists(st.sampled_from([None, "t1", "t2"]), min_size=1, max_size=3, unique=True)):
        d = draw(diffs)
        fl = [x + draw(st.integers(-1, 1)) for x in d]
        fu = draw(st.lists(st.integers(-2, 2), min_size=0, max_size=20)) if len(d) >= 2 else []
        out[name] = (d, fl, fu)
    return out


@settings(max_examples=80, deadline=None)
@given(strata(), st.sampled_from([0.025, 0.05]), st.sampled_from([0.5, 1.0, 2.5, 5.0]))
def test_the_second_path_ppi_equals_the_main_path(split, alpha, step):
    main = ppi.stratified_ppi_mean(split, alpha=alpha, rule="guarded", step=step)
    gold = ppi.gold_only_mean(split, alpha=alpha, rule="guarded", step=step)
    second = second_ppi.guarded({k: tuple(map(lambda v: [float(x) for x in v], t)) for k, t in split.items()},
                                    alpha, False, step)
    second_gold = second_ppi.guarded({k: tuple(map(lambda v: [float(x) for x in v], t)) for k, t in split.items()},
                                         alpha, True, step)
    for ours, theirs in ((main, second), (gold, second_gold)):
        for f in ("estimate", "se", "low", "high", "step"):
            assert getattr(ours, f) == pytest.approx(theirs[f], rel=1e-9, abs=1e-12)
        lams = {"(rest)" if s.name is None else s.name: s.lam for s in ours.strata}
        assert lams == pytest.approx({s["id"]: s["lam"] for s in theirs["strata"]})


@settings(max_examples=40, deadline=None)
@given(diffs.filter(lambda d: len(d) >= 3), st.lists(st.integers(-2, 2), min_size=3, max_size=30))
def test_the_second_path_point_estimate_is_ppi_pys(d, fu):
    fl = [x + (i % 3 == 0) for i, x in enumerate(d)]
    p = second_ppi.guarded({None: ([float(x) for x in d], [float(x) for x in fl], [float(x) for x in fu])},
                               0.025, False, GUARD)
    want = np.asarray(ppi_py.ppi_mean_pointestimate(np.array(d, float), np.array(fl, float), np.array(fu, float),
                                                    lam=None)).reshape(-1)[0]
    if np.var(np.array(fl + fu, float)) > 0 and np.isfinite(want):
        assert p["estimate"] == pytest.approx(float(want), abs=1e-9)


# ----------------------------------------------------------------------------------------
# judge.numbers.validity.apply on a planted run
# ----------------------------------------------------------------------------------------

N = 30


def planted(judge_b, gold_b, design: str, *, mode: str = "report", floor: float | None = None, gold_on: bool = True,
            family_alpha: float | None = None, ceiling: float | None = None, strata: int = 1, scale=SCALE,
            base: int = 1, margin: float = 0.1, earlier: bool = False, interval: str = "bca"):
    """Arm a's answers all judged `base` and worth `base`; arm b's judged `judge_b[i]`, worth `gold_b[i]`; gold on
    every answer with `design`, on the rubric `scale`. One question per index, all tagged "all" (so gold covers the
    whole stratum), or with `strata` > 1 question i tagged "s{i % strata}"."""
    demo = load_experiment(ROOT / "sealed" / "demo")
    h = Hypothesis(id="H", a="a", b="b", quant="Q", kind="non_inferiority", margin=margin, alpha=0.025)
    exp = replace(demo, analysis=replace(demo.analysis, judge_error=mode, resamples=200, seed=3,
                                         calibration_ceiling=ceiling),
                  min_gold_agreement=floor, hypotheses=[h])
    tag = {f"q{i:02d}": "all" if strata == 1 else f"s{i % strata}" for i in range(N)}
    qmap = {q: Question(id=q, question="?", reference=None, tags=(t,), cluster=None, set="x.jsonl")
            for q, t in tag.items()}
    keys, judgments, scores = [], [], []
    for arm, judged, worth in (("a", [base] * N, [base] * N), ("b", judge_b, gold_b)):
        for i, q in enumerate(qmap):
            label = f"L{arm}{i:02d}"
            keys.append(KeyRow(label=label, row=f"{arm}/{q}", arm=arm, quant="Q", question_id=q, sample=0, scrubbed=0))
            judgments.append(Judgment(judge="j", label=label, question_id=q, status="scored", score=judged[i],
                                      fields=None, repaired=False, error=None, prompt_sha256="", attempts=[],
                                      latency_s=0.0, prompt_tokens=0, completion_tokens=0, cached_tokens=0))
            scores.append(GoldScore(label=label, row=f"{arm}/{q}", arm=arm, quant="Q", question_id=q, sample=0,
                                    source="human", origin="labels/x.jsonl:1", labeller="x", score=worth[i],
                                    status="scored", error=None, time=None, note="", design=design,
                                    stratum=tag[q] if design == "complete_strata" else None, draw=None))
    complete = design == "complete_strata"
    scores = scores if gold_on else []
    gold = GoldSet(scale=tuple(scale), answers=2 * N, scores=tuple(scores),
                   strata=tuple(GoldStratum(t, tuple(q for q in qmap if tag[q] == t), 2 * N // strata,
                                            len(scores) // strata, complete and gold_on)
                                for t in sorted(set(tag.values()))), draws=(),
                   program=None,
                   files=(), unmatched=())
    per = {("a", "Q"): {q: Fraction(base) for q in qmap},
           ("b", "Q"): {q: Fraction(judge_b[i]) for i, q in enumerate(qmap)}}
    comparison = Comparison(id="H", text="", a="a", b="b", quant="Q", kind=h.kind, margin=h.margin, alpha=h.alpha,
                            subset=[], paired_questions=list(qmap), unscored_rate={},
                            result={"diff": float(sum(judge_b) - base * N) / N}, clusters=None, clustered_se=None,
                            calibration=None, quant_notes=[], verdict="non-inferior", reason="the judge alone")
    if mode == "decide":  # as judge.numbers.analysis does before the family (decide_family), at the registered level
        comparison = validity.decide_by_gold(h, comparison, gold, keys, per, qmap, earlier)
    if family_alpha is not None:
        comparison = replace(comparison, family=ComparisonFamily(method="holm", size=1, tested_at=family_alpha,
                                                                 claimed=False, step=None, stopped_at=None, tests=[]))
    checked, (comparison,) = validity.apply(exp, gold, keys, judgments, ["j"], "j", [h], qmap, per, [comparison],
                                            earlier, interval)
    section, comparison = checked.to_dict(), comparison.to_dict()
    section["second_path_inputs"] = (
        {"arms": ["a", "b"], "judge": {"primary": "j", "panel": ["j"]}}, exp, gold,
        {k.label: {"label": k.label, "arm": k.arm, "quant": k.quant, "question_id": k.question_id} for k in keys},
        [{"judge": j.judge, "label": j.label, "status": j.status, "score": j.score, "kind": "single"}
         for j in judgments], {q: [tag[q]] for q in qmap}, {})
    return section, comparison


def test_a_judge_kinder_to_one_arm_is_measured_and_corrected():
    rng = random.Random(5)
    gold_b = [0 if i % 3 == 0 else 1 for i in range(N)]  # the truth: b is worse by 10/30
    kinder = set(rng.sample(range(N), 20))
    judge_b = [g + (i in kinder) for i, g in enumerate(gold_b)]
    section, c = planted(judge_b, gold_b, "complete_strata")
    (j,) = section["judges"]
    offsets = {p["id"]: p["offset"]["mean"] for p in j["agreement"]["per_arm"]}
    assert offsets == {"a": 0, "b": pytest.approx(20 / N)}
    assert j["pairs"][0]["offset_difference"]["mean"] == pytest.approx(20 / N)
    e = c["judge_error"]
    assert e["ppi"]["estimate"] == pytest.approx(-10 / N)  # gold on every question: the gold mean exactly
    assert c["verdict"] == "non-inferior" and e["verdict"] == "not shown" and "would say" in e["caution"]


def test_the_corrected_interval_is_held_to_the_level_the_family_tests_the_hypothesis_at():
    gold_b = [0 if i % 3 == 0 else 1 for i in range(N)]
    judge_b = [min(2, g + 1) for g in gold_b]
    _, alone = planted(judge_b, gold_b, "complete_strata")
    _, in_family = planted(judge_b, gold_b, "complete_strata", family_alpha=0.025 / 4)
    d = [float(b - 1) for b in judge_b]
    g = [float(b - 1) for b in gold_b]
    for c, alpha in ((alone, 0.025), (in_family, 0.025 / 4)):
        want = ppi.correct(d, g, design="complete_strata", alpha=alpha, strata=["all"] * N, rule="guarded",
                           step=GUARD)
        assert c["judge_error"]["ppi"]["low"] == pytest.approx(want.ppi.low)
    assert in_family["judge_error"]["ppi"]["low"] < alone["judge_error"]["ppi"]["low"]


def test_decide_makes_the_corrected_bound_the_verdict():
    gold_b = [0 if i % 3 == 0 else 1 for i in range(N)]
    judge_b = [min(2, g + 1) for g in gold_b]
    _, c = planted(judge_b, gold_b, "complete_strata", mode="decide")
    assert c["verdict"] == "not shown" and 'judge_error = "decide"' in c["reason"]
    assert c["judge_error"]["caution"] is None


@pytest.mark.parametrize("mode", ["report", "decide"])
def test_hand_picked_labels_measure_agreement_and_never_correct(mode):
    gold_b = [0 if i % 3 == 0 else 1 for i in range(N)]
    judge_b = [min(2, g + 1) for g in gold_b]
    section, c = planted(judge_b, gold_b, "convenience", mode=mode)
    assert section["judges"][0]["agreement"]["answers"] == 2 * N  # agreement is measured on them
    e = c["judge_error"]
    assert e["design"] == "convenience" and e["ppi"] is None and "picked by hand" in e["reason"]
    assert c["verdict"] == ("non-inferior" if mode == "report" else "inconclusive")
    if mode == "decide":
        assert "picked by hand" in c["reason"]


def test_a_judge_below_the_agreement_floor_leaves_the_decision_inconclusive_with_the_reason():
    rng = random.Random(8)
    gold_b = [rng.choice(SCALE) for _ in range(N)]
    noisy = [rng.choice(SCALE) for _ in range(N)]  # unrelated to the truth
    section, c = planted(noisy, gold_b, "complete_strata", floor=0.5)
    low = section["judges"][0]["agreement"]["kappa_low"]
    assert low < 0.5
    assert c["verdict"] == "inconclusive" and "min_gold_agreement 0.5" in c["reason"] and f"{low:.3f}" in c["reason"]


def test_a_judge_that_agrees_with_gold_passes_the_floor():
    gold_b = [i % 3 for i in range(N)]
    section, c = planted(gold_b, gold_b, "complete_strata", floor=0.5)
    assert section["judges"][0]["agreement"]["kappa_low"] == 1.0
    assert c["verdict"] == "non-inferior"  # unchanged: the floor is met (and the corrected verdict is noted)


@pytest.mark.parametrize("mode, floor", [("report", 0.2), ("decide", None)])
def test_a_registered_floor_or_decide_without_any_gold_is_inconclusive_with_the_reason(mode, floor):
    judge_b = [1] * N
    section, c = planted(judge_b, judge_b, "complete_strata", mode=mode, floor=floor, gold_on=False)
    assert section["judges"][0]["agreement"] is None and c["verdict"] == "inconclusive"
    assert ("no gold to measure it" if floor else "no gold-corrected interval") in c["reason"]


@pytest.mark.parametrize("strata", [1, 2])
def test_gold_on_every_question_is_the_gold_mean_with_golds_own_interval_and_the_line_says_so(strata):
    """With gold on every question nothing is left for the judge to impute: the PPI++ estimate is the gold mean and
    its interval the gold-only one, computed here by hand from the guarded rule (per stratum the gold differences'
    ddof-1 spread with two pseudo-residuals of one point, Student t with Welch-Satterthwaite degrees of freedom);
    the decision's line says so instead of presenting it as the judge's correction."""
    gold_b = [0 if i % 3 == 0 else 1 for i in range(N)]
    judge_b = [min(2, g + 1) for g in gold_b]  # a kinder judge: its scores must not move the interval
    _, c = planted(judge_b, gold_b, "complete_strata", strata=strata)
    e = c["judge_error"]
    p, g = e["ppi"], e["gold_only"]
    d = [float(x - 1) for x in gold_b]
    assert e["design"] == "complete_strata" and p["labelled"] == p["questions"] == N
    assert [s["lam"] for s in p["strata"]] == [None] * strata
    assert p["estimate"] == pytest.approx(sum(d) / N)
    assert (p["estimate"], p["se"], p["low"], p["high"]) == (g["estimate"], g["se"], g["low"], g["high"])
    parts = []
    for h in range(strata):
        x = d[h::strata]
        n, mean = len(x), sum(d[h::strata]) / len(x)
        v = (sum((y - mean) ** 2 for y in x) + 2 * GUARD ** 2) / (n + 1)
        parts.append(((n / N) ** 2 * v / n, n + 1))
    var = sum(v for v, _ in parts)
    df = var ** 2 / sum(v * v / k for v, k in parts)
    low = sum(d) / N - scipy_t.ppf(1 - 0.025, df) * math.sqrt(var)
    assert p["low"] == pytest.approx(low, abs=1e-12) and p["df"] == pytest.approx(df)
    c["result"]["bound"] = -0.05
    line = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined).get_template(
        "gold_corrected.md.j2").render(c=c, je=e)
    stratum = "1 stratum" if strata == 1 else f"{strata} strata"
    assert line.startswith('Gold-corrected (complete strata; judge_error = "report"): PPI++ estimate '
                           f'{p["estimate"]:+.3f}, CI [{p["low"]:+.3f}, {p["high"]:+.3f}], bound {p["low"]:+.3f} '
                           f"with gold on all {N} questions ({stratum}): no question is left to the judge, so this is "
                           "the gold mean with gold's own interval (the gold-only one), which the judge's scores do "
                           "not narrow; judge only ")
    assert "gold only [" not in line and "λ" not in line and line.endswith(f'corrected verdict "{e["verdict"]}".')


@settings(max_examples=5, deadline=None)
@given(st.integers(1, 6), st.integers(0, 3), st.integers(1, 2), st.integers(0, 2 ** 31))
def test_the_corrected_interval_scales_with_the_rubrics_range_in_both_paths(k, lo, strata, seed):
    """Scores on the rubric lo..lo+2k are an affine image of 0..2 (s -> lo + k s) and the margin k times 0.1: the
    guard is half the range, so the corrected estimate and interval are k times those on 0..2 and the verdict is
    the same, in both paths (a fixed one-point guard was a fifth as wide, relative to the scale, on 0..10)."""
    rng = random.Random(seed)
    gold_b = [rng.choice(SCALE) for _ in range(N)]
    judge_b = [min(2, g + (rng.random() < 0.4)) for g in gold_b]
    small, c_small = planted(judge_b, gold_b, "complete_strata", strata=strata)
    big, c_big = planted([lo + k * x for x in judge_b], [lo + k * x for x in gold_b], "complete_strata",
                         strata=strata, scale=range(lo, lo + 2 * k + 1), base=lo + k, margin=0.1 * k)
    p, q = c_small["judge_error"]["ppi"], c_big["judge_error"]["ppi"]
    assert (p["step"], q["step"]) == (GUARD, GUARD * k)
    for f in ("estimate", "se", "low", "high"):
        assert q[f] == pytest.approx(k * p[f], rel=1e-9, abs=1e-12), f
    assert c_big["judge_error"]["verdict"] == c_small["judge_error"]["verdict"]
    run, exp, gold, keys, judged, questions, alphas = big["second_path_inputs"]
    ours = validity_check.recompute(run, exp, gold, keys, judged, questions, alphas)["comparisons"][0]["judge_error"]
    assert ours["ppi"]["step"] == GUARD * k and ours["verdict"] == c_big["judge_error"]["verdict"]
    for f in ("estimate", "se", "low", "high"):
        assert ours["ppi"][f] == pytest.approx(q[f], rel=1e-9, abs=1e-12), f


def test_twenty_labelled_ties_on_a_0_10_rubric_are_no_proof_of_non_inferiority_by_half_a_point():
    """The boundary world of a 0..10 rubric with margin 0.5: 5 % of the questions lose the full range (-10), the
    rest tie (mean -0.5). Twenty labelled questions all tie with probability 0.95^20 = 0.36. By hand (no judge
    information: lam 0, the gold mean with two pseudo-residuals, t with n + 1 = 21 df): a one-point guard gives the
    bound -t sqrt(2 / 21 / 20) = -0.144, a false "non-inferior"; half the range (5 points) gives
    -t sqrt(50 / 21 / 20) = -0.718, "not shown". Both paths take their step from the rubric's scale."""
    t = scipy_t.ppf(0.975, 21)
    one_point, anchored = -t * math.sqrt(2 / 21 / 20), -t * math.sqrt(50 / 21 / 20)
    assert one_point > -0.5 > anchored
    ten = type("Gold", (), {"scale": tuple(range(11))})()
    step = validity.step_of(ten)
    assert step == second_ppi.step_of(list(range(11))) == 5.0
    d, f = [0.0] * 20 + [math.nan] * 180, [0.0] * 200
    main = ppi.correct(f, d, design="random_sample", alpha=0.025, rule="guarded", step=step).ppi
    second = second_ppi.guarded({None: ([0.0] * 20, [0.0] * 20, [0.0] * 180)}, 0.025, False, step)
    assert main.low == pytest.approx(anchored, abs=1e-12) and second["low"] == pytest.approx(anchored, abs=1e-12)
    assert validity._verdict("non_inferiority", 0.5, main.low, main.high) == "not shown"
    assert validity.step_of(ten, earlier=True) == second_ppi.step_of(list(range(11)), earlier=True) == 1.0
    old = ppi.correct(f, d, design="random_sample", alpha=0.025, rule="guarded", step=1.0).ppi
    assert old.low == pytest.approx(one_point, abs=1e-12)


def test_the_guarded_rule_has_no_default_step():
    with pytest.raises(ValueError, match="half the rubric's range"):
        ppi.ppi_mean([0.0, 1.0], [0.0, 1.0], [1.0], alpha=0.025)


def test_a_folder_written_before_is_recomputed_as_written_by_both_paths():
    """A folder whose judge_validity records no ``resampling`` and no ``step`` was computed by answer resampling
    (no exact-agreement interval, percentile) and a one-point guard; one that records ``resampling`` but no
    ``interval`` by percentile intervals over questions: both paths recompute each so, writing neither field it
    lacks; a new folder records "question", "bca" and half the range. (The intervals on each scheme's draws are the
    peers': the tests of the second path's agreement intervals below.)"""
    gold_b = [0] * 3 + [2] * 15 + [1] * (N - 18)
    judge_b = [min(2, g + (i % 3 == 0)) for i, g in enumerate(gold_b)]
    kappa_low = {}
    for earlier, interval in ((True, "percentile"), (False, "percentile"), (False, "bca")):
        section, c = planted(judge_b, gold_b, "complete_strata", earlier=earlier, interval=interval)
        ag = section["judges"][0]["agreement"]
        run, exp, gold, keys, judged, questions, alphas = section["second_path_inputs"]
        check = validity_check.recompute(run, exp, gold, keys, judged, questions, alphas, earlier, interval)
        ours = check["judge_validity"]["judges"][0]["agreement"]
        fields = ("kappa_low", "kappa_high", "krippendorff_low", "krippendorff_high", "exact_low", "exact_high",
                  "resampling", "interval")
        assert {f: ag.get(f) for f in fields} == pytest.approx({f: ours.get(f) for f in fields})
        p, q = c["judge_error"]["ppi"], check["comparisons"][0]["judge_error"]["ppi"]
        assert ("step" in p, "step" in q, "resampling" in ag, "exact_low" in ag) == (not earlier,) * 4
        assert ("interval" in ag, "interval" in ours) == (interval == "bca",) * 2
        kappa_low[earlier, interval] = ag["kappa_low"]
        if not earlier:
            assert (ag["resampling"], p["step"]) == ("question", GUARD)
            assert ag["exact_low"] <= ag["exact"] <= ag["exact_high"]
    assert ag["interval"] == "bca"
    assert len(set(kappa_low.values())) == 3  # answers or questions drawn; percentile or BCa levels


# ----------------------------------------------------------------------------------------
# The second path's bootstrap intervals, and the calibration of a gold-corrected decision
# ----------------------------------------------------------------------------------------

answered = st.lists(st.tuples(st.sampled_from(SCALE), st.sampled_from(SCALE), st.integers(0, 11)), min_size=2,
                    max_size=30)  # (gold, judge, the answer's question): several answers to a question


@settings(max_examples=8, deadline=None)
@given(answered, st.integers(0, 2 ** 31), st.booleans(), st.booleans())
def test_the_second_path_agreement_intervals_are_the_peer_libraries_on_the_documented_draws(rows, seed, by_question,
                                                                                           bca):
    """The second path's intervals against tests/support/peer_agreement.py (sklearn, krippendorff, the BCa written
    from its definition): BCa over questions now, percentile for a folder written before."""
    gold, judge = [g for g, _, _ in rows], [j for _, j, _ in rows]
    questions = [f"q{c}" for _, _, c in rows] if by_question else None
    got = gold_agreement.agreement_intervals(gold, judge, list(SCALE), seed, resamples=80, questions=questions,
                                             bca=bca)
    (k_lo, k_hi), (a_lo, a_hi), (e_lo, e_hi) = peer_agreement.intervals(
        gold, judge, seed, 80, questions, method="bca" if bca and by_question else "percentile")
    pairs = [("kappa_low", k_lo), ("kappa_high", k_hi), ("krippendorff_low", a_lo), ("krippendorff_high", a_hi)]
    if by_question:
        pairs += [("exact_low", e_lo), ("exact_high", e_hi)]
        assert got["resampling"] == "question" and got.get("interval") == ("bca" if bca else None)
    else:  # a folder written before: answers resampled, percentile, no exact-agreement interval
        assert "exact_low" not in got and "resampling" not in got and "interval" not in got
    for key, theirs in pairs:
        assert (got[key] is None and theirs is None) or got[key] == pytest.approx(theirs, abs=1e-9), key


@settings(max_examples=15, deadline=None)
@given(answered, st.integers(0, 2 ** 31), st.booleans(), st.booleans())
def test_the_second_path_offsets_and_agreement_intervals_are_the_main_paths(rows, seed, by_question, bca):
    gold, judge = [g for g, _, _ in rows], [j for _, j, _ in rows]
    clusters = [f"q{c}" for _, _, c in rows]
    main = validity.judge_error.against_gold(judge, gold, SCALE, alpha=0.025, resamples=200, seed=seed,
                                             clusters=clusters, resampling="question" if by_question else "answer",
                                             interval="bca" if bca else "percentile")
    ours = gold_agreement.agreement_intervals(gold, judge, list(SCALE), seed, resamples=200,
                                              questions=clusters if by_question else None, bca=bca)
    for f in ("kappa_low", "kappa_high", "krippendorff_low", "krippendorff_high") + (
            ("exact_low", "exact_high") if by_question else ()):
        theirs = getattr(main, f)
        assert (ours[f] is None and theirs is None) or ours[f] == pytest.approx(theirs, abs=1e-9)
    off = gold_agreement.offset(judge, gold, resamples=200, seed=seed, clusters=clusters)
    assert off == pytest.approx(main.offset.to_dict(), abs=1e-12)


@pytest.mark.parametrize("gold, judge, questions", [
    ([0, 1, 2] * 6, [0, 1, 2] * 6, [i // 3 for i in range(18)]),  # every resample and jackknife value the same
    ([0, 1, 2, 0, 1, 2, 1, 1], [0, 1, 1, 2, 2, 0, 1, 1], ["q"] * 8),  # one question: no jackknife
    ([0, 0, 0, 0, 1, 2], [0, 0, 0, 0, 1, 2], [0, 0, 1, 1, 2, 3]),  # kappa undefined where only zeros are drawn
    ([0, 1, 2, 2, 1, 0, 2, 2], [0, 1, 2, 1, 1, 0, 2, 0], [0, 1, 2, 3, 4, 5, 6, 7]),  # one answer per question
])
def test_both_paths_take_the_same_bca_fallbacks(gold, judge, questions):
    """The degenerate cases (no spread, no jackknife, undefined resamples): both paths give the same interval, the
    peer computation's."""
    main = validity.judge_error.against_gold(judge, gold, SCALE, alpha=0.025, resamples=300, seed=4,
                                             clusters=questions)
    ours = gold_agreement.agreement_intervals(gold, judge, list(SCALE), 4, resamples=300, questions=questions)
    (k_lo, k_hi), (a_lo, a_hi), (e_lo, e_hi) = peer_agreement.intervals(gold, judge, 4, 300, questions)
    peer = {"kappa_low": k_lo, "kappa_high": k_hi, "krippendorff_low": a_lo, "krippendorff_high": a_hi,
            "exact_low": e_lo, "exact_high": e_hi}
    for f, theirs in peer.items():
        assert (getattr(main, f) is None) == (ours[f] is None) == (theirs is None), f
        if theirs is not None:
            assert getattr(main, f) == pytest.approx(theirs, abs=1e-9) and ours[f] == pytest.approx(theirs, abs=1e-9)


def test_a_judge_one_point_above_gold_everywhere_has_the_offset_interval_of_one_point():
    gold = [i % 2 for i in range(12)]
    off = gold_agreement.offset([g + 1 for g in gold], gold, resamples=500, seed=1, clusters=None)
    assert (off["mean"], off["low"], off["high"], off["units"]) == (1.0, 1.0, 1.0, 12)  # planted: every pair +1


def _guarded_whole_stratum_rate(d, kind, margin, alpha, sims, seed):
    """By hand, from the definitions: gold on every question (one complete stratum), so the corrected estimate is
    the gold mean and rule "guarded" its t interval with two pseudo-residuals one point either side (n + 1
    degrees of freedom). The world: d shifted to the boundary; each data set the documented draw
    default_rng(seed).integers(0, n, n)."""
    from scipy import stats as sps
    d = np.asarray(d, dtype=float)
    n = d.size
    target = -margin if kind == "non_inferiority" else 0.0
    shifted = d + (target - d.mean())
    rng, hits = np.random.default_rng(seed), 0
    for _ in range(sims):
        x = shifted[rng.integers(0, n, n)]
        se = math.sqrt((np.sum((x - x.mean()) ** 2) + 2.0) / (n + 1) / n)
        low = x.mean() - sps.t.ppf(1 - alpha, n + 1) * se
        hits += low > (-margin if kind == "non_inferiority" else 0.0)
    return hits


def test_under_decide_the_calibration_line_is_the_corrected_intervals():
    gold_b = [2 if i % 4 == 0 else 1 for i in range(N)]  # the truth: b better by 8/30
    judge_b = [max(0, g - 1) if i % 2 else g for i, g in enumerate(gold_b)]  # a judge harsh on b
    _, c = planted(judge_b, gold_b, "complete_strata", mode="decide")
    want = _guarded_whole_stratum_rate([g - 1 for g in gold_b], "non_inferiority", 0.1, 0.025, 200, 3)
    assert c["calibration"] == {"boundary": -0.1, "sims": 200, "claims": want, "rate": want / 200,
                                "ceiling": 0.05, "seed": 3, "interval": "ppi"}
    assert c["verdict"] == c["judge_error"]["verdict"] == "superior"


def test_under_decide_a_corrected_claim_above_the_ceiling_stands_the_calibration_decides_nothing():
    gold_b = [0] * 3 + [2] * 15 + [1] * (N - 18)  # b better by 12/30, with spread in both directions
    judge_b = list(gold_b)
    demo_ceiling = 0.001  # below any rate but zero: a calibration that decided would withdraw the claim
    section, c = planted(judge_b, gold_b, "complete_strata", mode="decide", ceiling=demo_ceiling)
    rate = _guarded_whole_stratum_rate([g - 1 for g in gold_b], "non_inferiority", 0.1, 0.025, 200, 3) / 200
    assert rate > demo_ceiling and c["calibration"]["rate"] == rate  # reported, above the ceiling
    assert c["verdict"] == "superior" and "false-claim rate" not in c["reason"]


@st.composite
def gold_strata(draw):
    """One to three strata, each (gold, judge on the labelled, judge on the others), as ppi.split gives them."""
    out = {}
    for name in draw(st.lists(st.sampled_from([None, "t1", "t2"]), min_size=1, max_size=3, unique=True)):
        d = draw(st.lists(st.integers(-2, 2), min_size=2, max_size=10))
        fl = [x + draw(st.integers(-1, 1)) for x in d]
        fu = draw(st.lists(st.integers(-2, 2), max_size=12))
        out[name] = ([float(x) for x in d], [float(x) for x in fl], [float(x) for x in fu])
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


@settings(max_examples=30, deadline=None)
@given(gold_strata(), st.sampled_from(["non_inferiority", "superiority", "equivalence"]), st.integers(0, 2 ** 31))
def test_the_second_path_calibration_of_a_corrected_decision_is_the_main_paths(split, kind, seed):
    from judge.numbers.stats.calibration import calibrate_ppi
    main = calibrate_ppi(split, kind, 0.2, alpha=0.025, sims=40, seed=seed, ceiling=0.05, step=GUARD)
    ours = validity_check.calibration(split, kind, 0.2, 0.025, 40, seed, 0.05, GUARD)
    assert ours == pytest.approx(main.to_dict() | {"interval": "ppi"})


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(-2, 2), min_size=3, max_size=25), st.integers(0, 2 ** 31))
def test_both_paths_calibrate_a_whole_stratum_as_the_hand_computation(d, seed):
    from judge.numbers.stats.calibration import calibrate_ppi
    split = {"all": ([float(x) for x in d], [float(x) for x in d], [])}
    want = _guarded_whole_stratum_rate(d, "non_inferiority", 0.1, 0.025, 60, seed)
    assert calibrate_ppi(split, "non_inferiority", 0.1, alpha=0.025, sims=60, seed=seed, ceiling=0.05,
                         step=GUARD).claims == want
    assert validity_check.calibration(split, "non_inferiority", 0.1, 0.025, 60, seed, 0.05, GUARD)["claims"] == want


@pytest.mark.parametrize("mode, floor, ceiling, want", [("decide", None, None, "superior"),
                                                        ("decide", None, 0.001, "superior"),  # the ceiling: nothing
                                                        ("report", 0.5, None, "non-inferior"),
                                                        ("report", 0.99, None, "inconclusive")])  # the floor
def test_the_second_path_does_to_its_own_verdict_what_the_gold_does_to_the_main_paths(mode, floor, ceiling, want):
    gold_b = [0] * 3 + [2] * 15 + [1] * (N - 18)
    judge_b = [min(2, g + (i % 3 == 0)) for i, g in enumerate(gold_b)]
    section, c = planted(judge_b, gold_b, "complete_strata", mode=mode, floor=floor, ceiling=ceiling)
    run, exp, gold, keys, judged, questions, alphas = section["second_path_inputs"]
    check = validity_check.recompute(run, exp, gold, keys, judged, questions, alphas)
    said = "non-inferior"
    if mode == "decide":  # the second path's family steps down on its own corrected verdicts (one hypothesis here)
        said = validity_check.corrected_verdicts(run, exp, gold, keys, judged, questions)("H", 0.025)
    ours = [{"id": "H", "paired_questions": list(questions), "verdict": said, "calibration": None}]
    validity_check.decide(ours, check, run, exp, gold, keys, judged, questions, alphas)
    assert ours[0]["verdict"] == c["verdict"] == want
    if mode == "decide":
        assert ours[0]["calibration"] == pytest.approx(c["calibration"])
