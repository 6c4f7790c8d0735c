"""Rule "bootstrap_and_t": the wider of the bootstrap interval and the small-sample t interval with a pseudo-loss and
a pseudo-win of half the rubric's range (judge.numbers.stats.t_bounds.guarded_t_interval; CR1 over clusters), so a
claim needs both. Its calibration is the bootstrap's, each simulated interval widened by the same guard.
"""

from __future__ import annotations

import math

import numpy as np

from ..t_bounds import guard_step, guarded_t_interval
from . import bootstrap
from .interface import Bounds, DecisionRule, Sample, Simulation
from .interval import interval_verdict


def bounds(s: Sample) -> Bounds:
    g_low, g_high = guarded_t_interval(s.d, 1 - 2 * s.alpha, guard_step(s.scale), s.units)
    return Bounds(bound=min(s.ci_low, g_low), upper=max(s.ci_high, g_high), guard_low=g_low, guard_high=g_high)


def decide(p, kind: str, margin: float) -> tuple[str, str]:
    return interval_verdict(p, kind, margin, note=(f" (the lower of the {p.resampling} bootstrap {p.ci_low:+.4f} "
                                                   f"and the small-sample t {p.guard_low:+.4f})"))


def _guard(sim: Simulation, u: bootstrap.Units, data: np.ndarray) -> tuple[float, float]:
    """The guard over one simulated data set: CR1 over its drawn clusters, or the t interval of its questions with
    the pseudo-loss and pseudo-win, from the drawn units' sums and sums of squares."""
    conf = 1 - 2 * sim.alpha
    step = guard_step(sim.scale)
    if sim.clusters is not None:
        used = np.nonzero(data)[0]
        return guarded_t_interval(None, conf, step, [u.kinds[i] for i in used for _ in range(int(data[i]))])
    from scipy import stats
    nq = float(data @ u.sizes) + 2
    md = float(data @ u.sums) / nq
    var = (float(data @ u.squares) + 2 * step * step - nq * md * md) / (nq - 1)
    half = float(stats.t.ppf((1 + conf) / 2, nq - 1)) * math.sqrt(max(var, 0.0) / nq)
    return md - half, md + half


def calibrate(sim: Simulation) -> int:
    return bootstrap.simulate(sim, guard=_guard)


RULE = DecisionRule(name="bootstrap_and_t", needs_scale=True, bounds=bounds, decide=decide, calibrate=calibrate)
