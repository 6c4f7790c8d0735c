"""The judge-bias measurements beside each registered decision, in numbers.json: each judge's estimate and a
same-family judge's lift (self-preference), the style adjustment over the hypothesis's own pairs, the test-retest
reliability of each judge, and the family adjustment of the registered hypotheses.

judge.numbers.analysis calls these on the records it has read; the statistics are judge.numbers.biases' pure functions,
and judge.verify.second_path.biases recomputes every number here by a path of its own for `judge verify`.
"""
from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

from core.records import AnswerRow, Judgment
from registration.prereg import Experiment, Hypothesis
from registration.vocabulary import CLAIMS

from .biases import family_decisions, lift, retest_agreement, shares_family, style_adjustment, style_counts, unit_labels
from .stats.decide import decide
from .stats.paired import Paired, paired

Scores = Mapping[tuple[str, str], Mapping[str, Fraction]]  # (arm, quant) -> question id -> mean score


def subset_ids(h: Hypothesis, scores: Scores, wanted: Sequence[str]) -> list[str]:
    """The hypothesis's paired questions under one judge's scores, in the order of `wanted` (its subset)."""
    a, b = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
    return [q for q in wanted if q in a and q in b]


def _verdict_of(h: Hypothesis, scores: Scores, ids: list[str], exp: Experiment, scale,
                clusters: Mapping[str, str | None]) -> dict[str, Any]:
    """One judge's estimate, decision interval and verdict (the registered rule, without the calibration and the
    minimum number of clusters), resampled as the decision is: whole clusters when the questions have them."""
    a, b = scores[(h.a, h.quant)], scores[(h.b, h.quant)]
    an = exp.analysis
    p = paired([a[q] for q in ids], [b[q] for q in ids], resamples=an.resamples, seed=an.seed,
               method=an.method, alpha=h.alpha, margin=h.margin, rule=an.rule, scale=scale,
               clusters=unit_labels(ids, clusters))
    return {"n": p.n, "estimate": p.diff, "ci_low": p.ci_low, "ci_high": p.ci_high, "bound": p.bound,
            "verdict": decide(p, h.kind, h.margin).verdict, "resampling": p.resampling, "units": p.units}


def self_preference(h: Hypothesis, exp: Experiment, by_judge: Mapping[str, Scores], wanted: Sequence[str],
                    scale, clusters: Mapping[str, str | None]) -> dict[str, Any] | None:
    """Each judge's estimate on this hypothesis, and the lift of each judge sharing a registered model family with an
    arm (against the others); None unless two or more judges scored it. A caution when the verdict differs by judge
    and a same-family judge is among them. `clusters`: question id -> registered cluster (or None); the intervals
    resample whole clusters when the questions have them, as the decisions do."""
    families = {j.name: exp.models[j.model].family for j in exp.judges}
    arm_families = [exp.models[exp.arm(x).model].family for x in (h.a, h.b)]
    scored = {j: s for j, s in by_judge.items() if len(subset_ids(h, s, wanted)) >= 2}
    if len(scored) < 2:
        return None
    judges = {j: {"family": families.get(j), "shares_family": shares_family(families.get(j), arm_families),
                  **_verdict_of(h, s, subset_ids(h, s, wanted), exp, scale, clusters)}
              for j, s in sorted(scored.items())}
    d = {j: {q: s[(h.b, h.quant)][q] - s[(h.a, h.quant)][q] for q in subset_ids(h, s, wanted)}
         for j, s in scored.items()}
    lifts = {j: lift(d, j, resamples=exp.analysis.resamples, seed=exp.analysis.seed, clusters=clusters)
             for j in sorted(scored) if judges[j]["shares_family"]}
    out = {"judges": judges, "lifts": {j: x.to_dict() for j, x in lifts.items() if x is not None}, "notes": []}
    verdicts = {v["verdict"] for v in judges.values()}
    for x in out["lifts"].values():
        if len(verdicts) > 1:
            own = judges[x["judge"]]
            rest = ", ".join(f"{j} {v['estimate']:+.3f} (\"{v['verdict']}\")" for j, v in judges.items()
                             if j != x["judge"])
            out["notes"].append(
                f"judge {x['judge']} shares the model family {own['family']} with an arm and estimates "
                f"{own['estimate']:+.3f} (\"{own['verdict']}\"), where {rest}; its lift over the others is "
                f"{x['lift']:+.3f} (95% paired bootstrap CI {x['ci_low']:+.3f} to {x['ci_high']:+.3f}, "
                f"{x['n']} questions{_over(x)}): the verdict differs by judge")
    return out


def _over(x: Mapping[str, Any]) -> str:
    """What a clustered interval resampled, for the caution (nothing when it resampled questions)."""
    return f", resampling {x['units']} units by cluster" if x["resampling"] == "clusters" else ""


# ---- style ----------------------------------------------------------------------------------------------------


def style_deltas(h: Hypothesis, answers: Sequence[AnswerRow], ids: Sequence[str],
                 covariates: Sequence[str]) -> dict[str, list[float]]:
    """covariate -> per question, b's mean style over its answered samples minus a's
    (judge.numbers.biases.style_counts)."""
    acc: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for r in answers:
        if r.status == "ok" and r.quant == h.quant and r.arm in (h.a, h.b):
            acc[(r.arm, r.question_id)].append(style_counts(r.text or ""))

    def mean(arm: str, q: str, c: str) -> float:
        rows = acc.get((arm, q)) or [style_counts("")]
        return sum(x[c] for x in rows) / len(rows)

    return {c: [mean(h.b, q, c) - mean(h.a, q, c) for q in ids] for c in covariates}


def style_check(c: dict, h: Hypothesis, covariates: Sequence[str], scores: Scores,
                answers: Sequence[AnswerRow]) -> None:
    """The decision's paired differences regressed on the arms' style differences, over the hypothesis's own pairs
    (`c["style"]`), and a length (style) caution when the decision interval moved by the adjustment would decide
    otherwise."""
    r, ids = c["result"], c["paired_questions"]
    if r is None:
        return
    a, b = scores[(h.a, h.quant)], scores[(h.b, h.quant)]
    adj = style_adjustment([float(b[q] - a[q]) for q in ids], style_deltas(h, answers, ids, covariates),
                           h.alpha)
    c["style"] = adj.to_dict()
    if adj.adjusted is None or not adj.covariates:
        return
    shift = adj.adjusted - adj.raw
    moved = r | {"bound": r["bound"] + shift, "upper": r["upper"] + shift, "tests": None}
    before = decide(Paired(**(r | {"tests": None})), c["kind"], c["margin"]).verdict
    after = decide(Paired(**moved), c["kind"], c["margin"]).verdict
    if after != before:
        what = "length" if adj.covariates == ["length"] else ", ".join(adj.covariates)
        c["length_notes"].append(
            f"over this hypothesis's {adj.n} pairs, adjusted for {what} the difference is {_signed(adj.adjusted)} "
            f"({100 * adj.confidence:.0f}% CI {_signed(adj.ci_low)} to {_signed(adj.ci_high)}) instead of "
            f"{_signed(adj.raw)}, and "
            f"the decision interval moved by {shift:+.3f} would say \"{after}\" instead of \"{before}\": answer "
            f"{what} is a rival explanation")


def _signed(x: float) -> str:
    return f"{round(x, 3) + 0.0:+.3f}"  # never "-0.000"


# ---- test-retest ----------------------------------------------------------------------------------------------


def retest_section(retests: Sequence[Judgment], judgments: Sequence[Judgment], points: Sequence[int], seed: int,
                   redecide: Callable[[dict[str, int]], dict[str, str]], primary: str,
                   verdicts: Mapping[str, str]) -> dict[str, Any] | None:
    """Per judge, its verdicts against the same verdicts asked again (retests.jsonl), and which registered decisions
    change when the primary judge's retest scores replace the originals (`redecide`: label -> score replaced ->
    hypothesis id -> verdict). None without retests."""
    if not retests:
        return None
    first = {(j.judge, j.label): j for j in judgments if j.kind == "single"}
    out: dict[str, Any] = {"judges": {}, "decisions_changed": []}
    for name in sorted({r.judge for r in retests}):
        mine = [r for r in retests if r.judge == name]
        pairs = [(first[(name, r.label)].score, r.score) for r in mine
                 if r.status == "scored" and (name, r.label) in first and first[(name, r.label)].status == "scored"]
        out["judges"][name] = retest_agreement(name, len(mine), pairs, list(points), seed).to_dict()
    replaced = {r.label: r.score for r in retests if r.judge == primary and r.status == "scored"}
    if replaced:
        again = redecide(replaced)
        out["decisions_changed"] = [{"id": h, "verdict": v, "with_retests": again[h]}
                                    for h, v in verdicts.items() if h in again and again[h] != v]
    out["replaced"] = len(replaced)
    return out


# ---- the family -----------------------------------------------------------------------------------------------


def apply_family(method: str, comparisons: list[dict], decide_at: Callable[[int, float], dict]) -> dict[str, Any]:
    """Decide the registered hypotheses as one family (judge.numbers.biases.family_decisions): each comparison gets
    `family` (the level it was last tested at, whether it claims, and every test the procedure made), and its
    verdict becomes the one at that level. `decide_at(i, alpha)`: comparison i decided at one-sided `alpha`
    (its `verdict`, `reason`, and `claim`)."""
    tests: dict[int, dict[float, dict]] = defaultdict(dict)

    def claims(i: int, a: float) -> bool:
        if a < comparisons[i]["alpha"] and not claims(i, comparisons[i]["alpha"]):
            return False  # a claim at a level stays one at every larger level: none here, none below
        if a not in tests[i]:
            tests[i][a] = comparisons[i] if a == comparisons[i]["alpha"] else decide_at(i, a)
            tests[i][a] = {"alpha": a, "verdict": tests[i][a]["verdict"], "claim": _claim(tests[i][a])}
        return tests[i][a]["claim"]

    fam = family_decisions(method, [c["id"] for c in comparisons], [c["alpha"] for c in comparisons], claims)
    for i, (c, s) in enumerate(zip(comparisons, fam.steps, strict=True)):
        c["family"] = {"method": method, "size": fam.size, "tested_at": s.tested_at, "claimed": s.claimed,
                       "step": s.step, "stopped_at": fam.stopped_at,
                       "tests": [tests[i][a] for a in sorted(tests[i], reverse=True)]}
        if s.tested_at is None:
            c["verdict"] = "inconclusive"
            c["reason"] = (f"not tested: the fixed sequence stopped at {fam.stopped_at}, the first hypothesis before "
                           "it that made no claim")
        elif s.tested_at != c["alpha"] and s.tested_at in tests[i]:
            last = tests[i][s.tested_at]
            if last["verdict"] != c["verdict"]:
                c["reason"] = (f"{c['reason']}; as one of {fam.size} hypotheses ({method}) it is tested at one-sided "
                               f"α = {s.tested_at:.5g}, where it says \"{last['verdict']}\"")
                c["verdict"] = last["verdict"]
    return fam.to_dict()


def _claim(c: dict) -> bool:
    return c["verdict"] in CLAIMS[c["kind"]]
