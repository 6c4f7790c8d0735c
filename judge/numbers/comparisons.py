"""Each registered hypothesis decided on the judge's scores (numbers.json's `comparisons`), its exploratory subsets by
question tag (`subsets`), and each arm's score at each quant beside them (`quant_check`).
"""
from __future__ import annotations

from dataclasses import replace

from core.records import Cell, Comparison, QuantCheck, Result, Subset
from registration.prereg import Experiment, Hypothesis
from registration.questions import Question
from registration.vocabulary import PASS_HAT_K, PASS_HAT_K_SCALE

from .cells import unscored_rate
from .stats.decide import decide
from .stats.hypothesis import decision
from .stats.paired import paired
from .stats.rule import Scale, cluster_units
from .stats.t_bounds import clustered_se


def paired_block(exp: Experiment, a_scores: dict, b_scores: dict, qs: list[Question], alpha: float,
                 margin: float, scale: Scale) -> tuple[list[str], Result | None]:
    """The questions of `qs` scored in both arms, and their paired result (None below two)."""
    ids = [q.id for q in qs if q.id in a_scores and q.id in b_scores]
    if len(ids) < 2:
        return ids, None
    an = exp.analysis
    labels = cluster_labels(ids, qs)
    return ids, paired([a_scores[q] for q in ids], [b_scores[q] for q in ids], resamples=an.resamples, seed=an.seed,
                       method=an.method, alpha=alpha, margin=margin, clusters=labels, rule=an.rule, scale=scale)


def cluster_of(ids: list[str], qs: list[Question]) -> list[str | None] | None:
    """Each question's registered cluster (None for a question without one); None when no question of `ids`
    carries a cluster: then questions are resampled one by one."""
    by_id = {q.id: q for q in qs}
    if not any(by_id[q].cluster for q in ids):
        return None
    return [by_id[q].cluster or None for q in ids]


def cluster_labels(ids: list[str], qs: list[Question]) -> list | None:
    """The resampling unit of each question (judge.numbers.stats.rule.cluster_units): its registered cluster, or, for a
    question without one in a clustered set, the question itself; None when the set declares no cluster."""
    of = cluster_of(ids, qs)
    return None if of is None else cluster_units(of)[0]


def rubric_scale(exp: Experiment, h: Hypothesis, points: tuple[int, ...]) -> Scale:
    """The scale a hypothesis is decided on: the rubric's lowest and highest score, and K, the most samples either
    arm averages per question (a question's mean may be over fewer, when some were unscored)."""
    return Scale(min(points), max(points), max(exp.arm(h.a).samples, exp.arm(h.b).samples))


def decided_scale(h: Hypothesis, scale: Scale) -> Scale:
    """The scale `h` is decided on: the rubric's (``scale``) for a mean, (0, 1, 1) for a pass^k indicator."""
    return Scale(*PASS_HAT_K_SCALE) if h.statistic == PASS_HAT_K else scale


def compare(h: Hypothesis, exp: Experiment, questions: dict[str, Question], scores, cells: list[Cell],
            scale: Scale) -> Comparison:
    """One hypothesis decided on the judge's scores (under ``judge_error = "decide"`` with gold, judge.numbers.validity
    .decide_by_gold then puts the gold-corrected verdict in its place). ``scores``: each question's value of the
    hypothesis's statistic (its mean score, or its pass^k indicator: judge.numbers.stability.pass_hat_k_scores)."""
    an, scale = exp.analysis, decided_scale(h, scale)
    a_scores, b_scores = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
    wanted = [q for q in questions.values() if all(t in q.tags for t in h.subset)]
    cell = {(c.arm, c.quant): c for c in cells}
    rates = {h.a: unscored_rate(cell[(h.a, h.quant)]), h.b: unscored_rate(cell[(h.b, h.quant)])}
    ids = [q.id for q in wanted if q.id in a_scores and q.id in b_scores]
    out = Comparison(id=h.id, text=h.text, a=h.a, b=h.b, quant=h.quant, kind=h.kind, margin=h.margin, alpha=h.alpha,
                     subset=list(h.subset), statistic=h.statistic if h.statistic == PASS_HAT_K else None,
                     questions_in_subset=len(wanted), paired_questions=ids,
                     unscored_rate=rates, result=None, clusters=None, clustered_se=None, calibration=None,
                     quant_notes=[], length_notes=[], verdict="inconclusive",
                     reason=f"only {len(ids)} question(s) scored in both arms")
    if len(ids) < 2:
        return out
    a, b = [a_scores[q] for q in ids], [b_scores[q] for q in ids]
    d = decision(a, b, kind=h.kind, margin=h.margin, alpha=h.alpha, scale=scale,
                 cluster_of=cluster_of(ids, wanted), settings=an)
    out = replace(out, result=d.result, clusters=d.clusters, calibration=d.calibration, verdict=d.verdict,
                  reason=d.reason)
    if d.clusters is not None and d.result.units > 1:  # one unit: the clustered SE is undefined (deviations cancel)
        out = replace(out, clustered_se=clustered_se([float(y - x) for x, y in zip(a, b, strict=False)],
                                                     [str(u) for u in cluster_labels(ids, wanted)]))
    if max(rates.values()) > an.max_unscored:
        who = ", ".join(f"{k} {v:.0%}" for k, v in rates.items())
        out = replace(out, verdict="inconclusive",
                      reason=f"unscored or failed answers ({who}) exceed the registered {an.max_unscored:.0%}; "
                             f"the statistic alone would say: {d.statistic.verdict}")
    return out


def subset_analyses(h: Hypothesis, exp: Experiment, questions: dict[str, Question], scores,
                    scale: Scale) -> list[Subset]:
    """Secondary analyses by question tag, Bonferroni-adjusted over the tags of one hypothesis.

    Exploratory: they never change the registered verdict, and the report says so.
    """
    scale = decided_scale(h, scale)
    base = [q for q in questions.values() if all(t in q.tags for t in h.subset)]
    tags = sorted({t for q in base for t in q.tags} - set(h.subset))
    out = []
    for tag in tags:
        qs = [q for q in base if tag in q.tags]
        alpha = h.alpha / len(tags)
        ids, result = paired_block(exp, scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {}), qs, alpha,
                                   h.margin, scale)
        verdict = "inconclusive" if result is None else decide(result, h.kind, h.margin).verdict
        out.append(Subset(id=f"{h.id} [{tag}]", hypothesis=h.id, tag=tag, tests=len(tags), alpha_adjusted=alpha,
                          questions=len(qs), paired_questions=ids, result=result, verdict=verdict))
    return out


def quant_check(exp: Experiment, arms: list[str], scores,
                comparisons: list[Comparison]) -> tuple[QuantCheck, list[Comparison]]:
    """Each arm's own score at each quant, and each comparison with what that means for it: a caution when the
    effect changes sign at another quant, or when the reference arm's own score moves between the quants, on the
    questions both comparisons paired (the hypothesis's subset), by at least half the effect."""
    means: dict[str, dict[str, float | None]] = {}
    for arm in arms:
        means[arm] = {}
        for q in exp.arm(arm).quants:
            s = scores.get((arm, q), {})
            means[arm][q] = float(sum(s.values()) / len(s)) if s else None
    out = []
    for c in comparisons:
        out.append(c if c.result is None else replace(c, quant_notes=[*c.quant_notes,
                                                                      *_quant_notes(c, comparisons, scores)]))
    return QuantCheck(means=means), out


def _quant_notes(c: Comparison, comparisons: list[Comparison], scores) -> list[str]:
    notes = []
    effect = c.result.diff
    for o in comparisons:
        if o is c or (o.a, o.b, o.subset, o.statistic) != (c.a, c.b, c.subset, c.statistic) or o.result is None:
            continue
        other = o.result.diff
        if effect * other < 0:
            notes.append(f"the effect changes sign at {o.quant} ({other:+.3f})")
        common = set(c.paired_questions) & set(o.paired_questions)
        if effect == 0 or not common or c.statistic is not None:  # a pass^k effect is not in score points
            continue
        own, there = scores[(c.a, c.quant)], scores[(c.a, o.quant)]
        ma, mo = (float(sum(s[q] for q in common) / len(common)) for s in (own, there))
        if abs(mo - ma) >= abs(effect) / 2:
            notes.append(
                f"{c.a}'s own score moves {mo - ma:+.3f} from {c.quant} to {o.quant}, comparable to the "
                f"effect {effect:+.3f}: quantisation is a rival explanation")
    return notes
