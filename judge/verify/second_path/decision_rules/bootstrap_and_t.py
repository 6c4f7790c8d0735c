"""Rule "bootstrap_and_t" by hand: the wider of the recomputed bootstrap interval and the guard, a t interval with a
pseudo-loss and a pseudo-win of half the rubric's range (``guard``; CR1 over clusters)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

from ..bootstrap import t_crit, t_interval
from .interface import DecisionRule, PairedDifferences
from .interval import interval_verdict


def _cr1_interval(groups: list[list], alpha: float, step: float) -> tuple[float, float]:
    """The clustered guard by hand: CR1 t interval of the mean over the units plus a pseudo-unit of -step and one
    of +step, each of the mean unit size; G + 1 degrees of freedom (G units)."""
    size = sum(g[1] for g in groups) / len(groups)
    pairs = [(float(g[0]), float(g[1])) for g in groups] + [(-step * size, size), (step * size, size)]
    total = math.fsum(m for _, m in pairs)
    mean = math.fsum(s for s, _ in pairs) / total
    cr1 = math.fsum((s - m * mean) ** 2 for s, m in pairs)
    half = t_crit(1 - alpha, len(pairs) - 1) * math.sqrt(len(pairs) / (len(pairs) - 1) * cr1) / total
    return mean - half, mean + half


def guard(d: list[Fraction], labels: Sequence | None, alpha: float, step: float) -> tuple[float, float]:
    """The guard interval: the t interval of the differences with -step and +step added, or over clusters (each
    question's unit in ``labels``) the CR1 one."""
    if labels is None:
        return t_interval([float(x) for x in d] + [-float(step), float(step)], alpha)
    groups: dict[Any, list] = {}
    for x, c in zip(d, labels, strict=True):
        g = groups.setdefault(c, [Fraction(0), 0])
        g[0] += x
        g[1] += 1
    return _cr1_interval(list(groups.values()), alpha, float(step))


def bounds(c: PairedDifferences) -> dict[str, Any]:
    lo, hi, _ = c.scale
    g_low, g_high = guard(c.d, c.labels, c.alpha, (hi - lo) / 2)
    return {"bound": min(c.result["ci_low"], g_low), "upper": max(c.result["ci_high"], g_high), "guard_low": g_low,
            "guard_high": g_high}


RULE = DecisionRule(name="bootstrap_and_t", bounds=bounds, verdict=interval_verdict)
