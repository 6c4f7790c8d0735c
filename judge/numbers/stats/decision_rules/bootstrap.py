"""Rule "bootstrap": the bootstrap interval alone decides. Its calibration draws each simulated data set's units
(questions, or clusters) and decides it by the same exact bootstrap interval; ``simulate`` takes a guard that
widens each simulated interval, for a rule that decides on a wider one (``bootstrap_and_t``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from ..bootstrap import decimal, exact_interval
from .interface import Bounds, DecisionRule, Sample, Simulation
from .interval import claims, interval_verdict


@dataclass(frozen=True)
class Units:
    """The distinct units of the shifted differences, sorted: (sum, size) each, how many of each, and their sums,
    sizes and sums of squares as floats."""

    kinds: list[tuple[Fraction, int]]
    freq: np.ndarray
    sums: np.ndarray
    sizes: np.ndarray
    squares: np.ndarray


Guard = Callable[[Simulation, Units, np.ndarray], tuple[float, float]]
"""A simulated data set's guard interval, from its draw of each distinct unit (``data``)."""


def _units(sim: Simulation) -> Units:
    labels = list(range(len(sim.shifted))) if sim.clusters is None else list(sim.clusters)
    groups: dict[Any, list] = {}
    for x, c in zip(sim.shifted, labels, strict=False):
        g = groups.setdefault(c, [Fraction(0), 0, Fraction(0)])
        g[0] += x
        g[1] += 1
        g[2] += x * x
    tallied: dict[tuple, int] = {}
    for g in groups.values():
        tallied[tuple(g)] = tallied.get(tuple(g), 0) + 1
    kinds3 = sorted(tallied)
    return Units(kinds=[(s_, m_) for s_, m_, _ in kinds3], freq=np.array([tallied[k] for k in kinds3]),
                 sums=np.array([float(s_) for s_, _, _ in kinds3]),
                 sizes=np.array([m_ for _, m_, _ in kinds3], dtype=float),
                 squares=np.array([float(q_) for _, _, q_ in kinds3]))


def simulate(sim: Simulation, guard: Guard | None = None) -> int:
    """How many of the simulated data sets the bootstrap interval (widened by ``guard``'s, where given) makes the
    claim on: ``sims`` draws of the units with replacement, each with ``resamples`` bootstrap resamples."""
    u = _units(sim)
    n_units = int(u.freq.sum())
    rng = np.random.default_rng(sim.seed)
    outer = rng.multinomial(n_units, u.freq / n_units, size=sim.sims)
    a_frac = decimal(sim.alpha)
    hits = 0
    for data in outer:
        used = np.nonzero(data)[0]
        if n_units < 6 * used.size:  # few units of many kinds (clusters): draw units, cheaper than k binomials
            pool = np.repeat(np.arange(used.size), data[used])
            draws = (pool[rng.integers(0, n_units, (sim.resamples, n_units))]
                     + (np.arange(sim.resamples) * used.size)[:, None])
            inner = np.bincount(draws.ravel(), minlength=sim.resamples * used.size).reshape(sim.resamples,
                                                                                              used.size)
        else:
            inner = rng.multinomial(n_units, data[used] / n_units, size=sim.resamples)
        lo, hi = exact_interval([u.kinds[i] for i in used], data[used].tolist(), inner, a_frac, sim.method)
        low, high = float(lo), float(hi)
        if guard is not None:
            g_low, g_high = guard(sim, u, data)
            low, high = min(low, g_low), max(high, g_high)
        hits += claims(sim.kind, float(sim.margin), low, high)
    return hits


def bounds(s: Sample) -> Bounds:
    return Bounds(bound=s.ci_low, upper=s.ci_high)


RULE = DecisionRule(name="bootstrap", needs_scale=False, bounds=bounds, decide=interval_verdict,
                    calibrate=simulate)
