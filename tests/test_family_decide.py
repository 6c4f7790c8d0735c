"""The family under ``judge_error = "decide"`` steps down on the gold-corrected intervals that decide, in the main
path (judge.numbers.validity.decide_family) and in verify's second path (judge.verify.second_path.biases._family with
judge.verify.second_path.judge_error.corrected_verdicts). Expected values are computed here, independently: each
corrected interval by hand from its definition (rule "guarded": ppi_py's power-tuned lambda and point estimate, the
rectifier's ddof-1 spread with two pseudo-residuals of one point, Student t with Welch-Satterthwaite degrees of
freedom), and the family by a hand-written Holm and fixed sequence on those intervals' p-values."""
from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import ppi_py
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t

from core.records import Comparison, Judgment, KeyRow
from judge.gold.sources import Draw, GoldScore, GoldSet
from judge.numbers import validity
from judge.verify.second_path import judge_error as second
from judge.verify.second_path.biases import _family
from registration.prereg import Hypothesis
from registration.questions import Question

pytestmark = pytest.mark.unit

ALPHA, MARGIN = 0.025, 0.1


def folder(arms: dict[str, tuple[list[int], list[int]]], labelled: set[int], hyps: list[Hypothesis]):
    """A run in memory: arm -> (the judge's score, the gold score) per question; gold on every answer of the
    questions in ``labelled`` (a random sample, design "random_sample"). Returns what both paths read."""
    n = len(next(iter(arms.values()))[0])
    # the questions are named so that a real seeded draw (numpy's choice, as `judge label --sample` documents it)
    # picks exactly the labelled ones: both paths draw the recorded sample again before they believe it
    names = [f"q{i:02d}" for i in range(n)]
    rng = np.random.default_rng(0)
    picked = [names[i] for i in sorted(rng.choice(n, size=len(labelled), replace=False).tolist())]
    rest = iter(q for q in names if q not in picked)
    chosen = iter(picked)
    ids = [next(chosen) if i in labelled else next(rest) for i in range(n)]
    qmap = {q: Question(id=q, question="?", reference=None, tags=("all",), cluster=None, set="x.jsonl")
            for q in ids}
    keys, judgments, gold = [], [], []
    for arm, (judged, worth) in arms.items():
        for i, q in enumerate(qmap):
            label = f"L{arm}{i:02d}"
            keys.append(KeyRow(label=label, row=f"{arm}/{q}", arm=arm, quant="Q", question_id=q, sample=0,
                               scrubbed=0))
            judgments.append(Judgment(judge="j", label=label, question_id=q, status="scored", score=judged[i],
                                      fields=None, repaired=False, error=None, prompt_sha256="", attempts=[],
                                      latency_s=0.0, prompt_tokens=0, completion_tokens=0, cached_tokens=0))
            if i in labelled:
                gold.append(GoldScore(label=label, row=f"{arm}/{q}", arm=arm, quant="Q", question_id=q, sample=0,
                                      source="human", origin="labels/x.jsonl:1", labeller="x", score=worth[i],
                                      status="scored", error=None, time=None, note="", design="random_sample",
                                      stratum=None, draw=None))
    draw = Draw(labeller="x", seed=0, n=len(labelled), population=tuple(names), picked=tuple(picked), time="",
                line=1)
    gold_set = GoldSet(scale=(0, 1, 2), answers=len(keys), scores=tuple(gold), strata=(), draws=(draw,),
                       program=None, files=(), unmatched=())
    scores = {(arm, "Q"): {q: Fraction(judged[i]) for i, q in enumerate(qmap)} for arm, (judged, _) in arms.items()}
    exp = SimpleNamespace(hypotheses=hyps)  # all the second path's corrected verdicts read of the registration
    run = {"arms": list(arms), "judge": {"primary": "j", "panel": ["j"]}}
    blinded = {k.label: {"label": k.label, "arm": k.arm, "quant": k.quant, "question_id": k.question_id}
               for k in keys}
    verdicts = [{"judge": "j", "label": j.label, "status": "scored", "score": j.score, "kind": "single"}
                for j in judgments]
    return SimpleNamespace(exp=exp, gold=gold_set, keys=keys, qmap=qmap, scores=scores, run=run, blinded=blinded,
                           verdicts=verdicts, questions={q: ["all"] for q in qmap})


def judge_only(h: Hypothesis, verdict: str, alpha: float, paired: list[str]) -> Comparison:
    """A comparison as the judge alone decided it (the judge-only verdict is planted: under "decide" it must not
    matter unless inconclusive)."""
    return Comparison(id=h.id, text="", a=h.a, b=h.b, quant=h.quant, kind=h.kind, margin=h.margin, alpha=alpha,
                      subset=[], paired_questions=paired, unscored_rate={}, result={"bound": 0.0}, clusters=None,
                      clustered_se=None, calibration=None, quant_notes=[], verdict=verdict, reason="the judge alone")


def hand_p(arms, labelled: set[int], h: Hypothesis) -> float:
    """The p-value of "difference <= -margin" by the corrected interval, by hand: claim at level a exactly when
    this p is below a (the interval's lower bound est - t(1 - a, df) se above -margin)."""
    (ja, ga), (jb, gb) = arms[h.a], arms[h.b]
    n = len(ja)
    lab = sorted(labelled)
    rest = [i for i in range(n) if i not in labelled]
    d = np.array([gb[i] - ga[i] for i in lab], float)
    fl = np.array([jb[i] - ja[i] for i in lab], float)
    fu = np.array([jb[i] - ja[i] for i in rest], float)
    f_all = np.concatenate([fl, fu])
    lam = (float(np.asarray(ppi_py.ppi._calc_lam_glm(d, fl, fu, np.eye(1), clip=True)).reshape(-1)[0])
           if np.var(f_all) > 0 else 0.0)
    est = float(np.asarray(ppi_py.ppi_mean_pointestimate(d, fl, fu, lam=lam)).reshape(-1)[0])
    r = d - lam * fl
    v_rect = (np.sum((r - r.mean()) ** 2) + 2 * 1.0 ** 2) / (len(d) + 1) / len(d)
    v_imp = lam * lam * np.var(f_all, ddof=1) / len(fu)
    pieces = [(v_rect, len(d) + 1.0)] + ([(v_imp, n - 1.0)] if v_imp > 0 else [])
    var = sum(v for v, _ in pieces)
    df = var * var / sum(v * v / k for v, k in pieces)
    return float(student_t.sf((est + h.margin) / math.sqrt(var), df))


def hand_holm(p: list[float], alpha: float) -> set[int]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out: set[int] = set()
    for j, i in enumerate(order):
        if not p[i] < alpha / (len(p) - j):
            break
        out.add(i)
    return out


def hand_fixed_sequence(p: list[float], alpha: float) -> set[int]:
    out: set[int] = set()
    for i, x in enumerate(p):
        if not x < alpha:
            break
        out.add(i)
    return out


def both_paths(method: str, f, hyps: list[Hypothesis], judge_says) -> tuple[list[dict], dict]:
    """The main path's comparisons after its family, and the second path's family steps, on the same run.
    ``judge_says(i, alpha)``: the judge-only verdict of hypothesis i at a level."""
    paired = list(f.qmap)
    comparisons = [judge_only(h, judge_says(i, h.alpha), h.alpha, paired) for i, h in enumerate(hyps)]
    _, comparisons = validity.decide_family(method, hyps, comparisons,
                                            lambda i, a: judge_only(hyps[i], judge_says(i, a), a, paired),
                                            f.gold, f.keys, f.scores, f.qmap)
    comparisons = [c.to_dict() for c in comparisons]
    corrected = second.corrected_verdicts(f.run, f.exp, f.gold, f.blinded, f.verdicts, f.questions)
    ind = [{"id": h.id, "alpha": h.alpha, "kind": h.kind, "own_verdict": corrected(h.id, h.alpha) or "inconclusive"}
           for h in hyps]
    _, steps = _family(method, ind, {c["id"]: c for c in comparisons}, corrected)
    return comparisons, steps


# The planted case: H1's judge (kinder to b) claims at alpha/2, so the judge-only step-down tested H2 at alpha,
# where H2's corrected bound clears -margin; at alpha/2 it does not (the hand computation below checks both).
N, LABELLED = 40, set(range(20))
PLANTED = {
    "a": ([1] * N, [1] * N),
    "b": ([2, 2, 1, 2, 2, 0, 0, 2, 2, 1, 1, 2, 1, 0, 2, 2, 1, 2, 2, 1, 2, 1, 1, 2, 1, 0, 2, 2, 1, 2, 0, 2, 2, 0, 2,
           2, 1, 1, 2, 1],
          [1, 1, 1, 2, 1, 0, 0, 2, 2, 1, 0, 2, 0, 0, 2, 1, 1, 2, 2, 1, 2, 0, 0, 1, 1, 0, 1, 2, 1, 1, 0, 1, 1, 0, 2,
           1, 0, 1, 2, 1]),
    "c": ([2, 1, 2, 2, 1, 1, 1, 2, 0, 1, 2, 2, 0, 2, 2, 2, 0, 2, 2, 2, 1, 1, 2, 2, 1, 2, 0, 2, 0, 1, 0, 0, 0, 0, 2,
           1, 2, 0, 2, 0],
          [2, 1, 1, 2, 1, 1, 1, 2, 0, 1, 2, 2, 0, 2, 2, 2, 0, 2, 2, 2, 1, 1, 2, 2, 1, 1, 1, 2, 0, 1, 1, 0, 1, 0, 2,
           1, 2, 0, 2, 0]),
}
H1 = Hypothesis(id="H1", a="a", b="b", quant="Q", kind="non_inferiority", margin=MARGIN, alpha=ALPHA)
H2 = Hypothesis(id="H2", a="a", b="c", quant="Q", kind="non_inferiority", margin=MARGIN, alpha=ALPHA)


def planted_judge(i: int, a: float) -> str:
    """H1's judge claims at every level; H2's judge alone claims only at the full alpha."""
    return "non-inferior" if i == 0 or a >= ALPHA else "not shown"


@pytest.mark.parametrize("method", ["holm", "fixed-sequence"])
def test_a_claim_by_the_judge_alone_no_longer_raises_the_level_of_the_corrected_intervals(method):
    p = [hand_p(PLANTED, LABELLED, h) for h in (H1, H2)]
    assert p[0] > ALPHA  # H1's corrected interval claims at no level the family tests
    assert ALPHA / 2 <= p[1] < ALPHA  # H2's clears -margin at alpha, not at alpha/2: the planted boundary
    want = hand_holm(p, ALPHA) if method == "holm" else hand_fixed_sequence(p, ALPHA)
    assert want == set()
    f = folder(PLANTED, LABELLED, [H1, H2])
    main, steps = both_paths(method, f, [H1, H2], planted_judge)
    h1, h2 = main
    assert not h1["family"]["claimed"] and not h2["family"]["claimed"]
    if method == "holm":  # both tested at alpha/2 by their corrected intervals; neither claims, so it stops there
        assert h2["family"]["tested_at"] == ALPHA / 2
        assert (h1["verdict"], h2["verdict"]) == ("not shown", "not shown")
        assert 'judge_error = "decide"' in h2["reason"]
    else:  # H1 first, by its corrected interval: no claim, so H2 is never tested
        assert h1["verdict"] == "not shown" and h2["verdict"] == "inconclusive" and h2["family"]["tested_at"] is None
    assert {h: s["claimed"] for h, s in steps.items()} == {"H1": False, "H2": False}
    assert {h: s["tested_at"] for h, s in steps.items()} == {c["id"]: c["family"]["tested_at"] for c in main}


def test_holm_steps_down_on_the_corrected_intervals_whatever_the_judge_alone_says():
    """H3's corrected interval claims at alpha/2, so H2 is tested again at alpha, where its corrected interval
    claims; the judge alone claims neither, at any level."""
    arms = {"a": PLANTED["a"], "c": PLANTED["c"], "d": ([2] * 36 + [1] * 4, [2] * 34 + [1] * 6)}
    h3 = Hypothesis(id="H3", a="a", b="d", quant="Q", kind="non_inferiority", margin=MARGIN, alpha=ALPHA)
    p = [hand_p(arms, LABELLED, h) for h in (H2, h3)]
    assert p[1] < ALPHA / 2 <= p[0] < ALPHA
    assert hand_holm(p, ALPHA) == {0, 1}
    assert hand_p(arms, LABELLED, Hypothesis(**{**h3.__dict__, "margin": 0.0})) < ALPHA / 2  # above 0: superior
    main, steps = both_paths("holm", folder(arms, LABELLED, [H2, h3]), [H2, h3], lambda i, a: "not shown")
    h2, d = main
    assert (d["family"]["step"], d["family"]["tested_at"], d["verdict"]) == (1, ALPHA / 2, "superior")
    assert (h2["family"]["step"], h2["family"]["tested_at"], h2["verdict"]) == (2, ALPHA, "non-inferior")
    assert {h: (s["claimed"], s["step"]) for h, s in steps.items()} == {"H2": (True, 2), "H3": (True, 1)}


@st.composite
def families(draw):
    """2-4 non-inferiority hypotheses against one reference arm, 28-40 questions with gold on a random 10-24 of them;
    each arm's gold drawn from well below to well above the boundary, and its judge off by a seeded error (kinder to
    some arms)."""
    m = draw(st.integers(2, 4))
    n = draw(st.integers(28, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    labelled = set(rng.choice(n, size=draw(st.integers(10, 24)), replace=False).tolist())
    arms = {"a": ([1] * n, [1] * n)}
    for k in range(m):
        down, up = draw(st.floats(0.0, 0.3)), draw(st.floats(0.0, 0.7))
        gold = rng.choice([0, 1, 2], size=n, p=[down, 1 - down - up, up] if down + up <= 1 else [0.3, 0, 0.7]).tolist()
        kind = draw(st.floats(0.0, 0.5))
        judged = [int(min(2, max(0, g + (rng.random() < kind) - (rng.random() < 0.1)))) for g in gold]
        arms[f"b{k}"] = (judged, gold)
    hyps = [Hypothesis(id=f"H{k + 1}", a="a", b=f"b{k}", quant="Q", kind="non_inferiority", margin=MARGIN,
                       alpha=ALPHA) for k in range(m)]
    says = [draw(st.sampled_from(["non-inferior", "not shown", "superior"])) for _ in range(m)]
    return arms, labelled, hyps, says, draw(st.sampled_from(["holm", "fixed-sequence"]))


@settings(max_examples=40, deadline=None)
@given(families())
def test_the_familys_claims_are_an_independent_holm_or_fixed_sequence_on_the_corrected_intervals(family):
    arms, labelled, hyps, says, method = family
    p = [hand_p(arms, labelled, h) for h in hyps]
    want = hand_holm(p, ALPHA) if method == "holm" else hand_fixed_sequence(p, ALPHA)
    main, steps = both_paths(method, folder(arms, labelled, hyps), hyps, lambda i, a: says[i])
    assert {i for i, c in enumerate(main) if c["family"]["claimed"]} == want
    assert {i for i, c in enumerate(main) if c["verdict"] in ("non-inferior", "superior")} == want
    assert {i for i, h in enumerate(hyps) if steps[h.id]["claimed"]} == want


def test_a_folder_an_earlier_version_decided_otherwise_gets_one_line_naming_why_and_how_to_re_decide_it():
    from judge.verify.earlier_versions import earlier_version_findings

    withdrawn = {"id": "H1", "verdict": "inconclusive", "family": {"size": 1},
                 "reason": "one-sided 97.5% lower bound -0.05 > -0.1: non-inferior; but the rule's false-claim rate "
                           "simulated at the boundary is 0.120 (12 of 100 simulated data sets), above the registered "
                           "ceiling 0.050: inconclusive"}
    stepped = {"id": "H2", "verdict": "non-inferior", "family": {"size": 2},
               "reason": 'judge_error = "decide": the gold-corrected (PPI++) one-sided bound -0.0715 decides'}
    now = {"comparisons": [{"id": "H1", "verdict": "non-inferior", "reason": "one-sided ... non-inferior"},
                           {"id": "H2", "verdict": "not shown", "reason": 'judge_error = "decide": ... not shown'}]}
    first, second_line = earlier_version_findings({"comparisons": [withdrawn, stepped]}, now)
    assert first.startswith("numbers.json comparisons[H1]: withdrawn by its calibration line")
    assert second_line.startswith("numbers.json comparisons[H2]: decided under judge_error")
    assert all("`judge run` into the folder re-decides it" in x for x in (first, second_line))
    assert earlier_version_findings(now, now) == []  # verdicts the decision code gives now: nothing to say
    judges = {"id": "H1", "verdict": "inconclusive", "reason": "only 3 cluster(s)", "calibration": {"rate": 0.0}}
    ppi_line = judges | {"calibration": {"rate": 0.0, "interval": "ppi"}}
    (line,) = earlier_version_findings({"comparisons": [judges]}, {"comparisons": [ppi_line]})
    assert line.startswith("numbers.json comparisons[H1]: its calibration line is the judge's")
