"""Several judges: agreement between them, and how each judge's scores follow answer length.

Per-judge scores stay separate; the registered panel rule says who decides (judge.numbers.biases measures
self-preference, test-retest reliability and style beside each decision). Agreement is weighted
(quadratic) Cohen's kappa for two judges with a bootstrap CI over answers, and Krippendorff's
alpha (ordinal) for any number. Length bias: the Spearman correlation of score with answer
length, and for each comparison the arm difference with and without a length adjustment (a
linear model with log length as covariate; AlpacaEval's length-controlled idea, simplified).
"""
from __future__ import annotations

import math

import numpy as np

from core.records import Agreement, AgreementPair, LengthBias, LengthRow

from .stats.agreement import cohen_kappa, kappa_bootstrap, krippendorff_alpha


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def kappa_with_ci(a: list[int], b: list[int], scale: tuple[int, ...] | list[int],
                  seed: int) -> tuple[float | None, list[float] | None]:
    """Quadratic-weighted Cohen's kappa of two raters on the same items, and its 95% percentile bootstrap interval
    over the items (1,000 resamples, seeded; None when fewer than 101 resamples give a defined kappa)."""
    kappa = _finite(cohen_kappa(a, b, weights="quadratic", labels=scale))
    boots = kappa_bootstrap(a, b, scale, "quadratic", 1000, seed)
    boots = boots[np.isfinite(boots)]
    ci = [float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))] if boots.size > 100 else None
    return kappa, ci


def agreement(scores: dict[str, dict[str, int]], scale: tuple[int, ...], seed: int) -> Agreement | None:
    """`scores`: judge -> label -> score. None with fewer than two judges.

    Kappa is per pair of judges on the answers both scored; Krippendorff's alpha uses every pairable rating
    (each answer scored by at least two judges), as the `krippendorff` package does.
    """
    judges = sorted(scores)
    if len(judges) < 2:
        return None
    common = sorted(set.intersection(*(set(scores[j]) for j in judges)))
    pairs = []
    for i, x in enumerate(judges):
        for y in judges[i + 1:]:
            both = sorted(set(scores[x]) & set(scores[y]))
            if len(both) < 2:
                continue
            a = [scores[x][lab] for lab in both]
            b = [scores[y][lab] for lab in both]
            kappa, ci = kappa_with_ci(a, b, scale, seed)
            pairs.append(AgreementPair(judges=[x, y], answers=len(both),
                                       exact_agreement=sum(p == q for p, q in zip(a, b, strict=False)) / len(a),
                                       kappa_quadratic=kappa, kappa_ci95=ci))
    pairable = sorted(lab for lab in set().union(*(scores[j] for j in judges))
                      if sum(lab in scores[j] for j in judges) >= 2)
    matrix = [[scores[j].get(lab, float("nan")) for lab in pairable] for j in judges]
    return Agreement(judges=judges, answers=len(common), pairs=pairs, pairable_answers=len(pairable),
                     krippendorff_alpha_ordinal=_finite(krippendorff_alpha(matrix, level="ordinal")) if pairable
                     else None)


def length_bias(points: list[tuple[str, str, int, int]], comparisons: list[tuple[str, str, str, str]]) -> LengthBias:
    """`points`: (arm, quant, words, score) per scored answer; `comparisons`: (id, a, b, quant)."""
    from scipy import stats as sps  # inside, as in judge.numbers.stats: importing scipy costs ~0.6 s

    spearman = None
    if len(points) >= 3 and len({p[2] for p in points}) > 1 and len({p[3] for p in points}) > 1:
        spearman = _finite(sps.spearmanr([p[2] for p in points], [p[3] for p in points]).statistic)
    rows = []
    for cid, a, b, quant in comparisons:
        scored = [(p[0] == b, math.log1p(p[2]), p[3]) for p in points if p[1] == quant and p[0] in (a, b)]
        raw = adjusted = None
        sa = [s for is_b, _, s in scored if not is_b]
        sb = [s for is_b, _, s in scored if is_b]
        if sa and sb:
            raw = float(np.mean(sb) - np.mean(sa))
            x = np.array([[1.0, float(is_b), ll] for is_b, ll, _ in scored])
            y = np.array([s for _, _, s in scored], dtype=float)
            if np.linalg.matrix_rank(x) == 3:
                adjusted = float(np.linalg.lstsq(x, y, rcond=None)[0][1])
        rows.append(LengthRow(id=cid, raw_difference=raw, length_adjusted_difference=adjusted))
    return LengthBias(answers=len(points), length_spearman=spearman, comparisons=rows)
