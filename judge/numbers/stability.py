"""numbers.json's `stability`: each cell's pass^k, pass@k, pass rate and agreement across its K samples
(judge.numbers.stats.stability), from the primary judge's single verdicts. verify recomputes it by
judge.verify.second_path.stability.
"""
from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from core.records import Judgment, KeyRow, Stability, StabilityCell
from registration.prereg import Experiment
from registration.questions import Question

from .stats.rule import cluster_units
from .stats.stability import CONFIDENCE, question_values, stability


def pass_score(exp: Experiment, points: tuple[int, ...]) -> float:
    """The registered `[analysis] pass_score`, or the rubric's highest score when none is registered."""
    return max(points) if exp.analysis.pass_score is None else exp.analysis.pass_score


def sample_scores(keys: list[KeyRow], judgments: list[Judgment], judge: str) -> dict[tuple[str, str, str],
                                                                                      dict[int, int]]:
    """(arm, quant, question id) -> sample -> the judge's score of that sample's single answer."""
    by_label = {k.label: k for k in keys}
    scored: dict[tuple[str, str, str], dict[int, int]] = defaultdict(dict)
    for j in judgments:
        if j.judge == judge and j.kind == "single" and j.status == "scored" and j.label in by_label:
            k = by_label[j.label]
            scored[(k.arm, k.quant, k.question_id)][k.sample] = j.score
    return scored


def pass_hat_k_scores(exp: Experiment, keys: list[KeyRow], judgments: list[Judgment],
                      judge: str) -> dict[tuple[str, str], dict[str, Fraction]]:
    """(arm, quant) -> question id -> its pass^k indicator (1 when each of its K registered samples is scored at or
    above the registered pass score, else 0): what a hypothesis registered with ``statistic = "pass^k"`` is decided
    on. A question with a sample the judge did not score is left out, as the stability section leaves it out."""
    out: dict[tuple[str, str], dict[str, Fraction]] = defaultdict(dict)
    for (arm, quant, q), got in sample_scores(keys, judgments, judge).items():
        k = exp.arm(arm).samples
        if all(i in got for i in range(k)):
            out[(arm, quant)][q] = question_values([got[i] for i in range(k)], exp.analysis.pass_score)["pass_hat_k"]
    return out


def stability_section(exp: Experiment, arms: list[str], keys: list[KeyRow], judgments: list[Judgment], judge: str,
                      questions: dict[str, Question], points: tuple[int, ...]) -> Stability:
    """One row per (arm, quant): the statistics over the questions whose K registered samples the judge all scored,
    and how many questions of the run were left out for a sample without a score."""
    scored = sample_scores(keys, judgments, judge)
    an, threshold = exp.analysis, pass_score(exp, points)
    cells = []
    for arm in arms:
        k = exp.arm(arm).samples
        for quant in exp.arm(arm).quants:
            complete = {q: [scored[(arm, quant, q)][i] for i in range(k)] for q in questions
                        if all(i in scored.get((arm, quant, q), {}) for i in range(k))}
            of = [questions[q].cluster or None for q in complete]
            labels = cluster_units(of)[0] if any(of) else None
            stats = stability(complete, threshold, labels, an.resamples, an.seed)
            cells.append(StabilityCell(arm=arm, quant=quant, k=k, questions=len(complete),
                                       incomplete=len(questions) - len(complete),
                                       resampling="questions" if labels is None else "clusters",
                                       units=len(set(labels)) if labels is not None else len(complete), **stats))
    return Stability(pass_score=threshold, confidence=CONFIDENCE, method="percentile", resamples=an.resamples,
                     seed=an.seed, cells=cells)
