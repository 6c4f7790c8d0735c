"""One registered hypothesis decided: the paired comparison, its verdict, the registered guard that can only withdraw
a claim (too few registered clusters), and its calibration, a diagnostic that decides nothing
(docs/explanation/statistics.md, Calibration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from core.records import Calibration, Result

from . import rule as score_rule
from .calibration import calibrate
from .decide import Decision, decide
from .paired import paired
from .rule import Scale


@dataclass(frozen=True)
class Decided:
    """One registered hypothesis decided: what the rule says on these data, its calibration (reported, deciding
    nothing), and the verdict after the registered guard (too few registered clusters)."""

    result: Result
    calibration: Calibration
    clusters: int | None  # registered clusters among the paired questions; None: none of them has a cluster
    statistic: Decision  # what the rule alone says
    verdict: str
    reason: str


def decision(a, b, *, kind: str, margin: float, alpha: float, scale: Scale, cluster_of: Sequence | None,
             settings) -> Decided:
    """Decide one registered hypothesis on its paired scores (a: reference arm, b: arm under test, exact).

    ``scale``: the rubric's scale and K; ``cluster_of``: each question's registered cluster (None or "" for a
    question without one; None for the whole list when the set declares none); ``settings``: the registered
    [analysis] (resamples, method, seed, rule, min_clusters, calibration_sims, calibration_ceiling). A question
    without a cluster in a clustered set is a unit of its own for resampling and variance, but only registered
    clusters count towards ``min_clusters`` (``judge.numbers.stats.rule.cluster_units``). The calibration withdraws no
    claim: measured at the boundary it withdrew almost none of the false claims (BENCHMARKS.md, calibration), so
    it is reported beside the verdict and the rule, measured over the type-I grid, is what holds alpha.
    """
    labels, registered = None, None
    if cluster_of is not None and any(c not in (None, "") for c in cluster_of):
        labels, registered = score_rule.cluster_units(cluster_of)
    p = paired(a, b, resamples=settings.resamples, seed=settings.seed, method=settings.method, alpha=alpha,
               margin=margin, clusters=labels, rule=settings.rule, scale=scale)
    ceiling = settings.calibration_ceiling if settings.calibration_ceiling is not None else 2 * alpha
    cal = calibrate(a, b, kind, margin, alpha=alpha, method=settings.method, resamples=settings.resamples,
                    rule=settings.rule, sims=settings.calibration_sims, seed=settings.seed, ceiling=ceiling,
                    clusters=labels, scale=scale)
    d = decide(p, kind, margin)
    verdict, reason = d.verdict, d.reason
    if labels is not None and registered < settings.min_clusters:
        loose = p.units - registered
        why = (f" ({loose} question(s) without a cluster are units of their own, not clusters)" if loose else "")
        verdict = "inconclusive"
        reason = (f"only {registered} cluster(s) of questions{why}, fewer than the registered minimum of "
                  f"{settings.min_clusters} for a clustered decision; the statistic alone would say: {d.verdict}")
    return Decided(result=p, calibration=cal, clusters=registered, statistic=d, verdict=verdict, reason=reason)
