"""The judge's error and the decisions it may change (judge.validity), and verify's second path through them
(judge.second_path.judge_error), checked against sklearn, krippendorff, ppi_py, the main path and planted facts."""
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

from core.records import Judgment, KeyRow
from judge import validity
from judge.gold import GoldScore, GoldSet, GoldStratum
from judge.report import TEMPLATES
from judge.second_path import decisions
from judge.second_path import judge_error as validity_check
from judge.stats import ppi
from registration.prereg import Hypothesis, load_experiment
from registration.questions import Question

from conftest import ROOT

pytestmark = pytest.mark.unit

SCALE = (0, 1, 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SCALE), st.sampled_from(SCALE)), min_size=2, max_size=40))
def test_the_second_path_agreement_equals_sklearn_and_krippendorff(pairs):
    gold, judge = [g for g, _ in pairs], [j for _, j in pairs]
    kappa = decisions.kappa_quadratic(gold, judge, list(SCALE))
    with np.errstate(all="ignore"):
        want = cohen_kappa_score(gold, judge, weights="quadratic", labels=list(SCALE))
    assert (kappa is None and not math.isfinite(want)) or kappa == pytest.approx(want, abs=1e-12)
    alpha = validity_check.alpha_ordinal(gold, judge)
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
@given(strata(), st.sampled_from([0.025, 0.05]))
def test_the_second_path_ppi_equals_the_main_path(split, alpha):
    main = ppi.stratified_ppi_mean(split, alpha=alpha, rule="guarded")
    gold = ppi.gold_only_mean(split, alpha=alpha, rule="guarded")
    second = validity_check.guarded({k: tuple(map(lambda v: [float(x) for x in v], t)) for k, t in split.items()},
                                    alpha, gold_only=False)
    second_gold = validity_check.guarded({k: tuple(map(lambda v: [float(x) for x in v], t)) for k, t in split.items()},
                                         alpha, gold_only=True)
    for ours, theirs in ((main, second), (gold, second_gold)):
        for f in ("estimate", "se", "low", "high"):
            assert getattr(ours, f) == pytest.approx(theirs[f], rel=1e-9, abs=1e-12)
        lams = {"(rest)" if s.name is None else s.name: s.lam for s in ours.strata}
        assert lams == pytest.approx({s["id"]: s["lam"] for s in theirs["strata"]})


@settings(max_examples=40, deadline=None)
@given(diffs.filter(lambda d: len(d) >= 3), st.lists(st.integers(-2, 2), min_size=3, max_size=30))
def test_the_second_path_point_estimate_is_ppi_pys(d, fu):
    fl = [x + (i % 3 == 0) for i, x in enumerate(d)]
    p = validity_check.guarded({None: ([float(x) for x in d], [float(x) for x in fl], [float(x) for x in fu])},
                               0.025, gold_only=False)
    want = np.asarray(ppi_py.ppi_mean_pointestimate(np.array(d, float), np.array(fl, float), np.array(fu, float),
                                                    lam=None)).reshape(-1)[0]
    if np.var(np.array(fl + fu, float)) > 0 and np.isfinite(want):
        assert p["estimate"] == pytest.approx(float(want), abs=1e-9)


# ----------------------------------------------------------------------------------------
# judge.validity.apply on a planted run
# ----------------------------------------------------------------------------------------

N = 30


def planted(judge_b, gold_b, design: str, *, mode: str = "report", floor: float | None = None, gold_on: bool = True,
            family_alpha: float | None = None, strata: int = 1):
    """Arm a's answers all judged 1 and worth 1; arm b's judged `judge_b[i]`, worth `gold_b[i]`; gold on every
    answer with `design`. One question per index, all tagged "all" (so gold covers the whole stratum), or with
    `strata` > 1 question i tagged "s{i % strata}"."""
    demo = load_experiment(ROOT / "sealed" / "demo")
    h = Hypothesis(id="H", a="a", b="b", quant="Q", kind="non_inferiority", margin=0.1, alpha=0.025)
    exp = replace(demo, analysis=replace(demo.analysis, judge_error=mode, resamples=200, seed=3),
                  min_gold_agreement=floor, hypotheses=[h])
    tag = {f"q{i:02d}": "all" if strata == 1 else f"s{i % strata}" for i in range(N)}
    qmap = {q: Question(id=q, question="?", reference=None, tags=(t,), cluster=None, set="x.jsonl")
            for q, t in tag.items()}
    keys, judgments, scores = [], [], []
    for arm, judged, worth in (("a", [1] * N, [1] * N), ("b", judge_b, gold_b)):
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
    gold = GoldSet(scale=SCALE, answers=2 * N, scores=tuple(scores),
                   strata=tuple(GoldStratum(t, tuple(q for q in qmap if tag[q] == t), 2 * N // strata,
                                            len(scores) // strata, complete and gold_on)
                                for t in sorted(set(tag.values()))), draws=(),
                   program=None,
                   files=(), unmatched=())
    per = {("a", "Q"): {q: Fraction(1) for q in qmap},
           ("b", "Q"): {q: Fraction(judge_b[i]) for i, q in enumerate(qmap)}}
    comparison = {"id": "H", "result": {"diff": float(sum(judge_b) - N) / N}, "verdict": "non-inferior",
                  "reason": "the judge alone", "paired_questions": list(qmap)}
    if family_alpha is not None:
        comparison["family"] = {"tested_at": family_alpha}
    section = validity.apply(exp, gold, keys, judgments, ["j"], "j", [h], qmap, per, [comparison])
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
                           step=validity.STEP)
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
        v = (sum((y - mean) ** 2 for y in x) + 2 * validity.STEP ** 2) / (n + 1)
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
