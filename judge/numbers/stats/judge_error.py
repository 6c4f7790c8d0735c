"""The judge's error against gold scores, in numbers: agreement, confusion, and the offsets that move a difference.

A judge can agree well with gold and still move a decision: what a paired difference b - a inherits from the
judge is the differential offset, offset(b) - offset(a), where offset = mean(judge - gold). So each judge gets,
against every gold score it can be compared with:

* agreement: exact agreement, quadratic-weighted Cohen's kappa and Krippendorff's alpha (ordinal), each with a
  bootstrap interval over whole questions (the same seeded resamples for the three; ``agreement_units``);
* the confusion matrix on the rubric scale (rows gold, columns judge);
* the mean offset judge - gold, overall and per arm, with a bootstrap interval over answers (or clusters);
* per hypothesis pair, the differential offset with a paired bootstrap interval over questions.

Why quadratic weights. The harness decides on means of scores, treating the rubric scale as interval: a judge
that reads 2 for a gold 0 moves a mean twice as far as one that reads 1, and quadratic weights charge a
disagreement by its squared distance, as a mean-squared error does (quadratic-weighted kappa is, up to the
marginals' terms, the intraclass correlation; Fleiss & Cohen 1973). Linear weights would rank a two-point
miss as only twice a one-point miss. The several-judges table (judge/numbers/agreement.py) uses the same weights, so
judge-judge and judge-gold figures compare. Krippendorff's ordinal alpha sits beside it as the view that uses
only the order of the scale points.

Intervals follow judge.numbers.stats: ``alpha`` is one-sided and every interval is the two-sided (1 - 2 alpha) one
(0.025 gives 95 %). The offsets reuse stats.paired (gold as arm a, judge as arm b: its difference is judge - gold,
its exact percentile bootstrap the interval); kappa and alpha reuse stats.cohen_kappa and krippendorff_alpha, and
on the resamples kappa_from_tables and ordinal_alpha_from_tables (each resample is a weighted sum of the drawn
questions' contingency tables).

Why questions, not answers. The answers to one question (both arms, every quant, K samples) share the question's
difficulty and so the judge's error on it: resampling answers as if independent treats them as more evidence than
they are, and with errors shared within a question the kappa interval covered 0.74 where it promises 0.95, so
``min_gold_agreement`` was passed too easily. The resample draws whole questions, every answer to a drawn question
entering as often as it is drawn (BENCHMARKS.md measures the coverage). Folders written before record no
``resampling`` and were resampled by answer: ``resampling = "answer"`` recomputes them as written.

Why BCa. With 20 questions the percentile interval of kappa covered 0.926 and its lower end lay above the truth
5 % of the time (2.5 % promised): kappa's resampling distribution is skewed and biased at few questions. The interval
is now BCa over questions (``interval = "bca"``; Efron 1987, Efron & Tibshirani 14.3), on the same draws:

* z0 = Phi^-1(p), p = (below + at_or_below) / (2 B): B the resamples where the statistic is defined, below /
  at_or_below those under / not over the observed value, a tie being within 1e-12 * max(1, |observed|) of it
  (a tie counts half);
* the acceleration a = sum(d_i^3) / (6 (sum(d_i^2))^1.5), d_i = mean - theta_(i), over the jackknife that leaves out
  one QUESTION at a time (all its answers), theta_(i) where defined, mean their mean;
* levels Phi(z0 + (z0 + z) / (1 - a (z0 + z))) for z = Phi^-1(alpha) and Phi^-1(1 - alpha); the interval the type-7
  percentiles of the defined resamples at those levels.

Degenerate cases fall back to the percentile levels (alpha, 1 - alpha): p of 0 or 1 (the observed value outside the
resamples), fewer than 2 defined jackknife values, their spread zero (every |d_i| <= 1e-12 * max(1, |mean|)),
or 1 - a (z0 + z) <= 0 at either end. When every resample is equal the interval is that value either way.
Folders written before record no ``interval`` and were percentile intervals: ``interval = "percentile"``
recomputes them as written (always so under "answer" resampling).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import special

from core.records import ArmOffset, GoldAgreement, Offset

from .agreement import (
    cohen_kappa,
    kappa_from_tables,
    kappa_weights,
    krippendorff_alpha,
    ordinal_alpha_from_tables,
    unit_draws,
)
from .bootstrap import exact
from .paired import exact_scores, paired

__all__ = ["WEIGHTS", "RESAMPLING", "INTERVALS", "offset", "agreement_units",
           "agreement_intervals", "bca_levels", "against_gold", "differential_offset"]

WEIGHTS = "quadratic"  # kappa's disagreement weights (see the module doc)
RESAMPLING = ("answer", "question")  # the agreement bootstrap's unit: "answer" only recomputes earlier folders
INTERVALS = ("percentile", "bca")  # the agreement interval: "percentile" only recomputes earlier folders
TIE_TOL = 1e-12  # relative: a resample (or jackknife deviation) within this of the observed value (of zero) ties


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def bca_levels(boots: np.ndarray, observed: float, jackknife: np.ndarray, alpha: float) -> tuple[float, float]:
    """The BCa quantile levels of the defined resamples ``boots`` (module doc: z0 from the share below ``observed``,
    the acceleration from the leave-one-question-out ``jackknife``); (alpha, 1 - alpha) where BCa is undefined."""
    tol = TIE_TOL * max(1.0, abs(observed))
    p = (np.count_nonzero(boots < observed - tol) + np.count_nonzero(boots <= observed + tol)) / (2 * boots.size)
    jack = jackknife[np.isfinite(jackknife)]
    if not 0 < p < 1 or jack.size < 2:
        return alpha, 1 - alpha
    d = jack.mean() - jack
    if np.all(np.abs(d) <= TIE_TOL * max(1.0, abs(float(jack.mean())))):
        return alpha, 1 - alpha
    z0 = float(special.ndtri(p))
    a = float(np.sum(d ** 3)) / (6 * float(np.sum(d ** 2)) ** 1.5)
    levels = []
    for z in (float(special.ndtri(alpha)), float(special.ndtri(1 - alpha))):
        den = 1 - a * (z0 + z)
        if den <= 0:
            return alpha, 1 - alpha
        levels.append(float(special.ndtr(z0 + (z0 + z) / den)))
    return levels[0], levels[1]


def _interval(boots: np.ndarray, observed: float, jackknife: np.ndarray, alpha: float,
              interval: str) -> tuple[float | None, float | None]:
    """The interval (type-7 percentiles at the percentile or BCa levels) of the defined resamples; None when fewer
    than half of them are defined or the observed value is not."""
    ok = boots[np.isfinite(boots)]
    if ok.size == 0 or ok.size * 2 < boots.size or not math.isfinite(observed):
        return None, None
    lo, hi = bca_levels(ok, observed, jackknife, alpha) if interval == "bca" else (alpha, 1 - alpha)
    low, high = np.percentile(ok, [100 * lo, 100 * hi])
    return float(low), float(high)


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


def agreement_units(n: int, clusters: Sequence | None, resampling: str) -> list[list[int]]:
    """The agreement bootstrap's resampling units, each the list of its answers (by position), in the documented
    order: "question": the distinct ``clusters`` (each answer's question) sorted as text, a question's answers in
    their order; "answer": each answer alone, in answer order."""
    if resampling not in RESAMPLING:
        raise ValueError(f"resampling must be one of {RESAMPLING}, got {resampling!r}")
    if resampling == "answer":
        return [[i] for i in range(n)]
    if clusters is None or len(clusters) != n:
        raise ValueError("resampling by question needs each answer's question (clusters)")
    members: dict[str, list[int]] = {}
    for i, c in enumerate(clusters):
        members.setdefault(str(c), []).append(i)
    return [members[c] for c in sorted(members)]


def _agreement_resamples(gold_codes: np.ndarray, judge_codes: np.ndarray, k: int, units: list[list[int]],
                         resamples: int, seed: int) -> dict[str, tuple[np.ndarray, float, np.ndarray]]:
    """Kappa, Krippendorff's alpha and exact agreement, each as (its value on every resample of ``units``
    (stats.agreement.unit_draws), its observed value, its jackknife leaving out one unit at a time): a drawn unit
    brings all its answers, as often as it is drawn, so each resample's table is the drawn units' tables weighted by
    their counts, and a jackknife table is the whole table less one unit's."""
    g = len(units)
    tables = np.zeros((g, k * k))
    for u, rows in enumerate(units):
        np.add.at(tables[u], gold_codes[rows] * k + judge_codes[rows], 1)
    agree = np.array([float(np.sum(gold_codes[rows] == judge_codes[rows])) for rows in units])
    sizes = np.array([float(len(rows)) for rows in units])
    w = kappa_weights(k, WEIGHTS)
    kappas, alphas, exacts = [], [], []
    for drawn in unit_draws(g, resamples, seed, block=max(1, 2_000_000 // max(g, 1))):
        offsets = (np.arange(len(drawn)) * g)[:, None]
        counts = np.bincount((drawn + offsets).ravel(), minlength=len(drawn) * g).reshape(len(drawn), g).astype(float)
        drawn_tables = (counts @ tables).reshape(-1, k, k)
        kappas.append(kappa_from_tables(drawn_tables, w))
        alphas.append(ordinal_alpha_from_tables(drawn_tables))
        exacts.append(counts @ agree / (counts @ sizes))
    whole = tables.sum(axis=0)
    left_out = (whole[None, :] - tables).reshape(-1, k, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact_jack = (agree.sum() - agree) / (sizes.sum() - sizes)
        return {"kappa": (np.concatenate(kappas), float(kappa_from_tables(whole.reshape(1, k, k), w)[0]),
                          kappa_from_tables(left_out, w)),
                "alpha": (np.concatenate(alphas), float(ordinal_alpha_from_tables(whole.reshape(1, k, k))[0]),
                          ordinal_alpha_from_tables(left_out)),
                "exact": (np.concatenate(exacts), float(agree.sum() / sizes.sum()), exact_jack)}


def agreement_intervals(judge, gold, scale: Sequence, *, alpha: float, resamples: int, seed: int,
                        clusters: Sequence | None, resampling: str = "question",
                        interval: str = "bca") -> tuple[tuple, tuple, tuple]:
    """The bootstrap intervals (low, high) of quadratic kappa, ordinal alpha and exact agreement, on one set of
    documented draws of ``resampling`` units (``agreement_units``, stats.agreement.unit_draws): BCa (module doc) or,
    to recompute a folder written before, the percentile interval; each the type-7 percentiles of the resamples where
    its statistic is defined at the interval's levels, (None, None) when fewer than half are or the statistic itself
    is undefined; exact agreement's is (None, None) under "answer" resampling (folders written before had none), which
    is always a percentile interval."""
    if interval not in INTERVALS:
        raise ValueError(f"interval must be one of {INTERVALS}, got {interval!r}")
    scale = tuple(scale)
    pos = {c: i for i, c in enumerate(scale)}
    units = agreement_units(len(judge), clusters, resampling)
    stats = _agreement_resamples(np.array([pos[x] for x in gold]), np.array([pos[x] for x in judge]), len(scale),
                                 units, resamples, seed)
    method = interval if resampling == "question" else "percentile"
    k_ci, a_ci, e_ci = (_interval(*stats[name], alpha, method) for name in ("kappa", "alpha", "exact"))
    return k_ci, a_ci, e_ci if resampling == "question" else (None, None)


def against_gold(judge, gold, scale: Sequence, *, arms: Sequence[str] | None = None, alpha: float = 0.025,
                 resamples: int = 2000, seed: int = 0, clusters: Sequence | None = None,
                 resampling: str = "question", interval: str = "bca") -> GoldAgreement:
    """Agreement, confusion matrix and offsets of one judge's scores against gold on the same answers.

    ``judge`` and ``gold``: one score on the rubric ``scale`` per answer; ``arms``: each answer's arm, for the
    per-arm offsets; ``clusters``: each answer's question (or cluster), so offsets resample whole clusters when
    K samples of a question are correlated. Exact agreement, kappa and alpha resample ``resampling`` units
    (``agreement_units``: whole questions; "answer" only to recompute a folder written before), on one set of draws,
    with BCa intervals (``interval``: "percentile" only to recompute a folder written before; always under "answer").
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
    k_alpha = _finite(krippendorff_alpha(np.array([[float(x) for x in gold], [float(x) for x in judge]]),
                                         level="ordinal"))
    (k_lo, k_hi), (a_lo, a_hi), (e_lo, e_hi) = agreement_intervals(judge, gold, scale, alpha=alpha,
                                                                   resamples=resamples, seed=seed, clusters=clusters,
                                                                   resampling=resampling, interval=interval)
    k_lo, k_hi = (k_lo, k_hi) if kappa is not None else (None, None)
    a_lo, a_hi = (a_lo, a_hi) if k_alpha is not None else (None, None)
    per_arm: list[ArmOffset] = []
    if arms is not None:
        arms = list(arms)
        if len(arms) != n:
            raise ValueError("arms must have one entry per answer")
        for arm in sorted(set(arms)):
            idx = [i for i, a in enumerate(arms) if a == arm]
            per_arm.append(ArmOffset(id=arm, offset=offset([judge[i] for i in idx], [gold[i] for i in idx],
                                                           alpha=alpha, resamples=resamples, seed=seed,
                                                           clusters=None if clusters is None
                                                           else [clusters[i] for i in idx])))
    return GoldAgreement(
        answers=n,
        exact=float(np.trace(table)) / n, exact_low=e_lo, exact_high=e_hi,
        kappa=kappa, kappa_low=k_lo, kappa_high=k_hi,
        krippendorff_alpha=k_alpha, krippendorff_low=a_lo, krippendorff_high=a_hi,
        scale=list(scale),
        confusion=[[int(x) for x in row] for row in table],
        offset=offset(judge, gold, alpha=alpha, resamples=resamples, seed=seed, clusters=clusters),
        per_arm=per_arm,
        alpha=float(alpha), resamples=int(resamples), seed=int(seed),
        resampling=resampling, interval=interval if resampling == "question" else "percentile",
    )


def differential_offset(judge_a, gold_a, judge_b, gold_b, *, alpha: float = 0.025, resamples: int = 10000,
                        seed: int = 0, clusters: Sequence | None = None) -> Offset | None:
    """offset(b) - offset(a) on the questions where both arms have gold, with a paired bootstrap over questions.

    Per question the four scores (each a mean over the question's samples); the question's differential error
    is ``(judge_b - gold_b) - (judge_a - gold_a)``, the judge's difference minus the gold difference: the amount by
    which the judge moved this question's b - a. Its mean is exactly what a judge-only decision is off by on
    these questions, and the paired bootstrap resamples questions (or ``clusters``) as the decision does. Scores
    are exact (int, or Fraction for a K-sample mean); a float is refused (TypeError), as every decision function
    refuses one, never taken at its binary value.
    """
    cols = [exact_scores(x, name) for x, name in zip((judge_a, gold_a, judge_b, gold_b),
                                                     ("judge_a", "gold_a", "judge_b", "gold_b"), strict=True)]
    if len({len(c) for c in cols}) != 1:
        raise ValueError("judge_a, gold_a, judge_b and gold_b must have one entry per question")
    ja, ga, jb, gb = ([exact(x) for x in c] for c in cols)
    return offset([y - x for x, y in zip(ja, jb, strict=True)], [y - x for x, y in zip(ga, gb, strict=True)],
                  alpha=alpha, resamples=resamples, seed=seed, clusters=clusters, unit="questions")
