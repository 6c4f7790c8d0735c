"""The judge-bias measurements beside each registered decision, in numbers.json: each judge's estimate and a
same-family judge's lift (self-preference), the style adjustment over the hypothesis's own pairs, the test-retest
reliability of each judge, and the family adjustment of the registered hypotheses.

judge.numbers.analysis calls these on the records it has read; the statistics are judge.numbers.biases' pure functions,
and judge.verify.second_path.biases recomputes every number here by a path of its own for `judge verify`.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from fractions import Fraction
from typing import Callable, Mapping, Sequence

from core.records import (
    AnswerRow,
    Comparison,
    ComparisonFamily,
    DecisionChanged,
    FamilySection,
    FamilyTest,
    JudgeEstimate,
    Judgment,
    Lift,
    RetestSection,
    SelfPreference,
)
from registration.prereg import Experiment, Hypothesis
from registration.vocabulary import CLAIMS

from .biases import family_decisions, lift, retest_agreement, shares_family, style_adjustment, style_counts, unit_labels
from .stats.decide import decide
from .stats.paired import paired

Scores = Mapping[tuple[str, str], Mapping[str, Fraction]]  # (arm, quant) -> question id -> mean score


def subset_ids(h: Hypothesis, scores: Scores, wanted: Sequence[str]) -> list[str]:
    """The hypothesis's paired questions under one judge's scores, in the order of `wanted` (its subset)."""
    a, b = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
    return [q for q in wanted if q in a and q in b]


def _verdict_of(h: Hypothesis, scores: Scores, ids: list[str], exp: Experiment, scale,
                clusters: Mapping[str, str | None], family: str | None, shares: bool) -> JudgeEstimate:
    """One judge's estimate, decision interval and verdict (the registered rule, without the calibration and the
    minimum number of clusters), resampled as the decision is: whole clusters when the questions have them."""
    a, b = scores[(h.a, h.quant)], scores[(h.b, h.quant)]
    an = exp.analysis
    p = paired([a[q] for q in ids], [b[q] for q in ids], resamples=an.resamples, seed=an.seed,
               method=an.method, alpha=h.alpha, margin=h.margin, rule=an.rule, scale=scale,
               clusters=unit_labels(ids, clusters))
    return JudgeEstimate(family=family, shares_family=shares, n=p.n, estimate=p.diff, ci_low=p.ci_low,
                         ci_high=p.ci_high, bound=p.bound, verdict=decide(p, h.kind, h.margin).verdict,
                         resampling=p.resampling, units=p.units)


def self_preference(h: Hypothesis, exp: Experiment, by_judge: Mapping[str, Scores], wanted: Sequence[str],
                    scale, clusters: Mapping[str, str | None]) -> SelfPreference | None:
    """Each judge's estimate on this hypothesis, and the lift of each judge sharing a registered model family with an
    arm (against the others); None unless two or more judges scored it. A caution when the verdict differs by judge
    and a same-family judge is among them. `clusters`: question id -> registered cluster (or None); the intervals
    resample whole clusters when the questions have them, as the decisions do."""
    families = {j.name: exp.models[j.model].family for j in exp.judges}
    arm_families = [exp.models[exp.arm(x).model].family for x in (h.a, h.b)]
    scored = {j: s for j, s in by_judge.items() if len(subset_ids(h, s, wanted)) >= 2}
    if len(scored) < 2:
        return None
    judges = {j: _verdict_of(h, s, subset_ids(h, s, wanted), exp, scale, clusters, families.get(j),
                             shares_family(families.get(j), arm_families))
              for j, s in sorted(scored.items())}
    d = {j: {q: s[(h.b, h.quant)][q] - s[(h.a, h.quant)][q] for q in subset_ids(h, s, wanted)}
         for j, s in scored.items()}
    lifts = {j: lift(d, j, resamples=exp.analysis.resamples, seed=exp.analysis.seed, clusters=clusters)
             for j in sorted(scored) if judges[j].shares_family}
    kept = {j: x for j, x in lifts.items() if x is not None}
    verdicts = {v.verdict for v in judges.values()}
    notes = []
    for x in kept.values():
        if len(verdicts) > 1:
            own = judges[x.judge]
            rest = ", ".join(f"{j} {v.estimate:+.3f} (\"{v.verdict}\")" for j, v in judges.items() if j != x.judge)
            notes.append(
                f"judge {x.judge} shares the model family {own.family} with an arm and estimates "
                f"{own.estimate:+.3f} (\"{own.verdict}\"), where {rest}; its lift over the others is "
                f"{x.lift:+.3f} (95% paired bootstrap CI {x.ci_low:+.3f} to {x.ci_high:+.3f}, "
                f"{x.n} questions{_over(x)}): the verdict differs by judge")
    return SelfPreference(judges=judges, lifts=kept, notes=notes)


def _over(x: Lift) -> str:
    """What a clustered interval resampled, for the caution (nothing when it resampled questions)."""
    return f", resampling {x.units} units by cluster" if x.resampling == "clusters" else ""


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


def style_check(c: Comparison, h: Hypothesis, covariates: Sequence[str], scores: Scores,
                answers: Sequence[AnswerRow]) -> Comparison:
    """The comparison with the decision's paired differences regressed on the arms' style differences, over the
    hypothesis's own pairs (`style`), and a length (style) caution when the decision interval moved by the adjustment
    would decide otherwise."""
    r, ids = c.result, c.paired_questions
    if r is None:
        return c
    a, b = scores[(h.a, h.quant)], scores[(h.b, h.quant)]
    adj = style_adjustment([float(b[q] - a[q]) for q in ids], style_deltas(h, answers, ids, covariates),
                           h.alpha)
    c = replace(c, style=adj)
    if adj.adjusted is None or not adj.covariates:
        return c
    shift = adj.adjusted - adj.raw
    moved = replace(r, bound=r.bound + shift, upper=r.upper + shift, tests=None)
    before = decide(replace(r, tests=None), c.kind, c.margin).verdict
    after = decide(moved, c.kind, c.margin).verdict
    if after != before:
        what = "length" if adj.covariates == ["length"] else ", ".join(adj.covariates)
        c = replace(c, length_notes=[*c.length_notes, 
            f"over this hypothesis's {adj.n} pairs, adjusted for {what} the difference is {_signed(adj.adjusted)} "
            f"({100 * adj.confidence:.0f}% CI {_signed(adj.ci_low)} to {_signed(adj.ci_high)}) instead of "
            f"{_signed(adj.raw)}, and "
            f"the decision interval moved by {shift:+.3f} would say \"{after}\" instead of \"{before}\": answer "
            f"{what} is a rival explanation"])
    return c


def _signed(x: float) -> str:
    return f"{round(x, 3) + 0.0:+.3f}"  # never "-0.000"


# ---- test-retest ----------------------------------------------------------------------------------------------


def retest_section(retests: Sequence[Judgment], judgments: Sequence[Judgment], points: Sequence[int], seed: int,
                   redecide: Callable[[dict[str, int]], dict[str, str]], primary: str,
                   verdicts: Mapping[str, str]) -> RetestSection | None:
    """Per judge, its verdicts against the same verdicts asked again (retests.jsonl), and which registered decisions
    change when the primary judge's retest scores replace the originals (`redecide`: label -> score replaced ->
    hypothesis id -> verdict). None without retests."""
    if not retests:
        return None
    first = {(j.judge, j.label): j for j in judgments if j.kind == "single"}
    rows = {}
    for name in sorted({r.judge for r in retests}):
        mine = [r for r in retests if r.judge == name]
        pairs = [(first[(name, r.label)].score, r.score) for r in mine
                 if r.status == "scored" and (name, r.label) in first and first[(name, r.label)].status == "scored"]
        rows[name] = retest_agreement(name, len(mine), pairs, list(points), seed)
    replaced = {r.label: r.score for r in retests if r.judge == primary and r.status == "scored"}
    changed = []
    if replaced:
        again = redecide(replaced)
        changed = [DecisionChanged(id=h, verdict=v, with_retests=again[h])
                   for h, v in verdicts.items() if h in again and again[h] != v]
    return RetestSection(judges=rows, decisions_changed=changed, replaced=len(replaced))


# ---- the family -----------------------------------------------------------------------------------------------


def apply_family(method: str, comparisons: list[Comparison],
                 decide_at: Callable[[int, float], Comparison]) -> tuple[FamilySection, list[Comparison]]:
    """Decide the registered hypotheses as one family (judge.numbers.biases.family_decisions): the family, and each
    comparison with its `family` (the level it was last tested at, whether it claims, and every test the procedure
    made) and the verdict at that level. `decide_at(i, alpha)`: comparison i decided at one-sided `alpha` (its
    `verdict`, `reason`, and `claim`)."""
    tests: dict[int, dict[float, FamilyTest]] = defaultdict(dict)

    def claims(i: int, a: float) -> bool:
        if a < comparisons[i].alpha and not claims(i, comparisons[i].alpha):
            return False  # a claim at a level stays one at every larger level: none here, none below
        if a not in tests[i]:
            c = comparisons[i] if a == comparisons[i].alpha else decide_at(i, a)
            tests[i][a] = FamilyTest(alpha=a, verdict=c.verdict, claim=_claim(c))
        return tests[i][a].claim

    fam = family_decisions(method, [c.id for c in comparisons], [c.alpha for c in comparisons], claims)
    out = []
    for i, (c, s) in enumerate(zip(comparisons, fam.steps, strict=True)):
        c = replace(c, family=ComparisonFamily(method=method, size=fam.size, tested_at=s.tested_at, claimed=s.claimed,
                                               step=s.step, stopped_at=fam.stopped_at,
                                               tests=[tests[i][a] for a in sorted(tests[i], reverse=True)]))
        if s.tested_at is None:
            c = replace(c, verdict="inconclusive",
                        reason=f"not tested: the fixed sequence stopped at {fam.stopped_at}, the first hypothesis "
                               "before it that made no claim")
        elif s.tested_at != c.alpha and s.tested_at in tests[i]:
            last = tests[i][s.tested_at]
            if last.verdict != c.verdict:
                c = replace(c, verdict=last.verdict,
                            reason=f"{c.reason}; as one of {fam.size} hypotheses ({method}) it is tested at one-sided "
                                   f"α = {s.tested_at:.5g}, where it says \"{last.verdict}\"")
        out.append(c)
    return fam, out


def _claim(c: Comparison) -> bool:
    return c.verdict in CLAIMS[c.kind]
