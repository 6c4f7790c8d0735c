"""Calibration: how often the registered rule makes its claim on data like these simulated at the boundary of the
hypothesis, computed with the decision's own rule (seeded, so verify recomputes it): ``calibrate`` for the
judge-only decision, ``calibrate_ppi`` for the gold-corrected (PPI++) interval where it decides
(``[analysis] judge_error = "decide"``).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from core.records import Calibration
from registration.vocabulary import boundary

from . import ppi
from .bootstrap import decimal, differences
from .decision_rules import DECISION_RULES
from .decision_rules.interface import Simulation
from .decision_rules.interval import claims
from .paired import exact_scores
from .rule import Scale


def calibrate(a, b, kind: str, margin: float, *, alpha: float, method: str, resamples: int, rule: str,
              sims: int, seed: int, ceiling: float, clusters: Sequence | None = None,
              scale: Scale | None = None) -> Calibration:
    """The false-claim rate of the registered rule, simulated at the boundary, for data like these.

    The observed differences are shifted so that their mean is exactly the boundary (the registered decimal
    margin), and ``sims`` data sets are drawn from them (questions, or whole clusters, with replacement);
    each is decided by the same rule (``DecisionRule.calibrate``; for the bootstrap rules, with ``resamples``
    bootstrap resamples), exact arithmetic and strict comparison as the real decision. Equivalence is simulated at
    the margin on the side of the estimate. Seeded: the same inputs give the same rate, so verify can recompute it.
    Computed with the score rule it tracks the rule's true rate over the type-I grid (BENCHMARKS.md); with the
    bootstrap rules it cannot see a loss the sample did not show.
    """
    decides = DECISION_RULES.named(rule)
    if decides.needs_scale and scale is None:
        raise ValueError(f"rule {rule!r} needs the rubric's scale")
    ed = differences(exact_scores(a, "a"), exact_scores(b, "b"))
    mean = sum(ed) / len(ed)
    target = boundary(kind, decimal(margin), mean)
    shifted = [x + (target - mean) for x in ed]
    hits = decides.calibrate(Simulation(shifted=shifted, kind=kind, margin=margin, alpha=alpha, method=method,
                                        resamples=resamples, scale=scale, clusters=clusters, sims=sims, seed=seed))
    return Calibration(boundary=float(target), sims=int(sims), claims=int(hits), rate=hits / sims,
                       ceiling=float(ceiling), seed=int(seed))


def calibrate_ppi(strata: dict[Any, tuple], kind: str, margin: float, *, alpha: float, sims: int, seed: int,
                  ceiling: float, step: float) -> Calibration:
    """The false-claim rate of the gold-corrected decision (stratified PPI++, rule "guarded"), simulated at the
    boundary, for data like these.

    ``strata``: ``ppi.split``'s (name -> gold, judge on the labelled questions, judge on the others), in its order.
    The world simulated: in each stratum, the questions with gold, their gold and judge differences shifted
    together by one amount so that the strata's weighted gold mean is exactly the boundary (-margin, 0 for
    superiority; for equivalence the margin on the side of the estimate), the judge keeping the error it showed.
    Each of ``sims`` data sets draws, stratum by stratum in order, ``rng.integers(0, n, n + m)`` from
    ``numpy.random.default_rng(seed)`` (n labelled and m other questions, as observed): the first n are labelled,
    the judge's differences of the other m stand for the questions without gold. Each is decided by the PPI++
    interval at ``alpha`` and the registered rule's strict comparison.
    """
    parts = {k: tuple(np.asarray(x, dtype=float) for x in v) for k, v in strata.items()}
    total = sum(d.size + fu.size for d, _, fu in parts.values())
    gold_mean = math.fsum((d.size + fu.size) / total * float(np.mean(d)) for d, _, fu in parts.values())
    observed = ppi.stratified_ppi_mean(parts, alpha=alpha, rule="guarded", step=step).estimate
    target = boundary(kind, margin, observed)
    shift = target - gold_mean
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        drawn = {}
        for name, (d, fl, fu) in parts.items():
            idx = rng.integers(0, d.size, d.size + fu.size)
            drawn[name] = (d[idx[:d.size]] + shift, fl[idx[:d.size]] + shift, fl[idx[d.size:]] + shift)
        e = ppi.stratified_ppi_mean(drawn, alpha=alpha, rule="guarded", step=step)
        hits += claims(kind, margin, e.low, e.high)
    return Calibration(boundary=float(target), sims=int(sims), claims=int(hits), rate=hits / sims,
                       ceiling=float(ceiling), seed=int(seed))
