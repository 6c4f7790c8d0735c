"""The judge's error against gold scores, in numbers: agreement, confusion, and the offsets that move a difference.

A judge can agree well with gold and still move a decision: what a paired difference b - a inherits from the
judge is the differential offset, offset(b) - offset(a), where offset = mean(judge - gold). So each judge gets,
against every gold score it can be compared with:

* agreement: quadratic-weighted Cohen's kappa and Krippendorff's alpha (ordinal), each with a bootstrap interval
  over answers (the same seeded resamples for both);
* the confusion matrix on the rubric scale (rows gold, columns judge);
* the mean offset judge - gold, overall and per arm, with a bootstrap interval over answers (or clusters);
* per hypothesis pair, the differential offset with a paired bootstrap interval over questions.

Why quadratic weights. The harness decides on means of scores, treating the rubric scale as interval: a judge
that reads 2 for a gold 0 moves a mean twice as far as one that reads 1, and quadratic weights charge a
disagreement by its squared distance, as a mean-squared error does (quadratic-weighted kappa is, up to the
marginals' terms, the intraclass correlation; Fleiss & Cohen 1973). Linear weights would rank a two-point
miss as only twice a one-point miss. The several-judges table (judge/agreement.py) uses the same weights, so
judge-judge and judge-gold figures compare. Krippendorff's ordinal alpha sits beside it as the view that uses
only the order of the scale points.

Intervals follow judge.stats: ``alpha`` is one-sided and every interval is the two-sided (1 - 2 alpha) one
(0.025 gives 95 %). The offsets reuse stats.paired (gold as arm a, judge as arm b: its difference is judge - gold,
its exact percentile bootstrap the interval); kappa and alpha reuse stats.cohen_kappa, kappa_bootstrap and
krippendorff_alpha.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from .agreement import cohen_kappa, kappa_bootstrap, krippendorff_alpha
from .bootstrap import exact
from .paired import paired

__all__ = ["WEIGHTS", "Offset", "GoldAgreement", "offset", "against_gold", "differential_offset"]

WEIGHTS = "quadratic"  # kappa's disagreement weights (see the module doc)


@dataclass(frozen=True)
class Offset:
    """Mean of judge - gold over ``units`` (answers, questions or clusters) with its bootstrap interval."""

    n: int  # answers (or questions) compared
    mean: float
    low: float  # two-sided (1 - 2 alpha) percentile bootstrap interval
    high: float
    resampling: str  # "answers", "questions" or "clusters"
    units: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class GoldAgreement:
    """One judge against gold on the answers both scored."""

    answers: int
    exact: float  # share of answers where judge == gold
    kappa: float | None  # quadratic-weighted Cohen's kappa; None where undefined (one category only)
    kappa_low: float | None
    kappa_high: float | None
    krippendorff_alpha: float | None  # ordinal
    krippendorff_low: float | None
    krippendorff_high: float | None
    scale: tuple  # the rubric's scale points, the confusion matrix's order
    confusion: tuple[tuple[int, ...], ...]  # confusion[i][j]: answers with gold scale[i] that the judge scored scale[j]
    offset: Offset | None  # judge - gold over all answers (None with fewer than 2)
    per_arm: tuple[tuple[str, Offset | None], ...]  # (arm, offset) in arm order
    alpha: float
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _percentile(boots: np.ndarray, alpha: float) -> tuple[float | None, float | None]:
    """Percentile interval of the defined resamples; None when fewer than half of them are defined."""
    ok = boots[np.isfinite(boots)]
    if ok.size == 0 or ok.size * 2 < boots.size:
        return None, None
    lo, hi = np.percentile(ok, [100 * alpha, 100 * (1 - alpha)])
    return float(lo), float(hi)


def offset(judge, gold, *, alpha: float = 0.025, resamples: int = 10000, seed: int = 0,
           clusters: Sequence | None = None, unit: str = "answers") -> Offset | None:
    """Mean judge - gold with the exact percentile bootstrap of stats.paired (None with fewer than 2 pairs).

    ``clusters`` (one label per item, e.g. the question of each of K samples) resamples whole clusters.
    """
    if len(judge) != len(gold):
        raise ValueError("judge and gold must be equally long")
    if len(judge) < 2:
        return None
    p = paired(list(gold), list(judge), resamples=resamples, seed=seed, alpha=alpha, clusters=clusters)
    return Offset(n=p.n, mean=p.diff, low=p.ci_low, high=p.ci_high,
                  resampling=unit if clusters is None else "clusters", units=p.units)


def against_gold(judge, gold, scale: Sequence, *, arms: Sequence[str] | None = None, alpha: float = 0.025,
                 resamples: int = 2000, seed: int = 0, clusters: Sequence | None = None) -> GoldAgreement:
    """Agreement, confusion matrix and offsets of one judge's scores against gold on the same answers.

    ``judge`` and ``gold``: one score on the rubric ``scale`` per answer; ``arms``: each answer's arm, for the
    per-arm offsets; ``clusters``: each answer's question (or cluster), so offsets resample whole clusters when
    K samples of a question are correlated. Kappa and alpha resample answers (kappa_bootstrap's resamples).
    """
    judge, gold = list(judge), list(gold)
    if len(judge) != len(gold) or not judge:
        raise ValueError("need equally long, non-empty judge and gold scores")
    scale = tuple(scale)
    pos = {c: i for i, c in enumerate(scale)}
    outside = [x for x in (*judge, *gold) if x not in pos]
    if outside:
        raise ValueError(f"score {outside[0]!r} is not on the scale {scale}")
    k, n = len(scale), len(judge)
    table = np.zeros((k, k), dtype=int)
    np.add.at(table, (np.array([pos[x] for x in gold]), np.array([pos[x] for x in judge])), 1)
    kappa = _finite(cohen_kappa(gold, judge, weights=WEIGHTS, labels=scale))
    kb = kappa_bootstrap(gold, judge, scale, WEIGHTS, resamples, seed)
    k_lo, k_hi = _percentile(kb, alpha) if kappa is not None else (None, None)
    matrix = np.array([[float(x) for x in gold], [float(x) for x in judge]])
    k_alpha = _finite(krippendorff_alpha(matrix, level="ordinal"))
    a_lo = a_hi = None
    if k_alpha is not None:
        rng = np.random.default_rng(seed)  # kappa_bootstrap's resamples, drawn again in the same order
        ab = np.array([krippendorff_alpha(matrix[:, rng.integers(0, n, n)], level="ordinal")
                       for _ in range(resamples)])
        a_lo, a_hi = _percentile(ab, alpha)
    per_arm: list[tuple[str, Offset | None]] = []
    if arms is not None:
        arms = list(arms)
        if len(arms) != n:
            raise ValueError("arms must have one entry per answer")
        for arm in sorted(set(arms)):
            idx = [i for i, a in enumerate(arms) if a == arm]
            per_arm.append((arm, offset([judge[i] for i in idx], [gold[i] for i in idx], alpha=alpha,
                                        resamples=resamples, seed=seed,
                                        clusters=None if clusters is None else [clusters[i] for i in idx])))
    return GoldAgreement(
        answers=n,
        exact=float(np.trace(table)) / n,
        kappa=kappa, kappa_low=k_lo, kappa_high=k_hi,
        krippendorff_alpha=k_alpha, krippendorff_low=a_lo, krippendorff_high=a_hi,
        scale=scale,
        confusion=tuple(tuple(int(x) for x in row) for row in table),
        offset=offset(judge, gold, alpha=alpha, resamples=resamples, seed=seed, clusters=clusters),
        per_arm=tuple(per_arm),
        alpha=float(alpha), resamples=int(resamples), seed=int(seed),
    )


def differential_offset(judge_a, gold_a, judge_b, gold_b, *, alpha: float = 0.025, resamples: int = 10000,
                        seed: int = 0, clusters: Sequence | None = None) -> Offset | None:
    """offset(b) - offset(a) on the questions where both arms have gold, with a paired bootstrap over questions.

    Per question the four scores (each a mean over the question's samples); the question's differential error
    is ``(judge_b - gold_b) - (judge_a - gold_a)``, the judge's difference minus the gold difference: the amount by
    which the judge moved this question's b - a. Its mean is exactly what a judge-only decision is off by on
    these questions, and the paired bootstrap resamples questions (or ``clusters``) as the decision does.
    """
    cols = [list(x) for x in (judge_a, gold_a, judge_b, gold_b)]
    if len({len(c) for c in cols}) != 1:
        raise ValueError("judge_a, gold_a, judge_b and gold_b must have one entry per question")
    ja, ga, jb, gb = ([exact(x) for x in c] for c in cols)  # exact: K-sample means stay fractions
    return offset([y - x for x, y in zip(ja, jb, strict=True)], [y - x for x, y in zip(ga, gb, strict=True)],
                  alpha=alpha, resamples=resamples, seed=seed, clusters=clusters, unit="questions")
