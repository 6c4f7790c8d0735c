"""Calibration: how often the registered rule makes its claim on data like these simulated at the boundary of the
hypothesis, computed with the decision's own rule (seeded, so verify recomputes it): ``calibrate`` for the
judge-only decision, ``calibrate_ppi`` for the gold-corrected (PPI++) interval where it decides
(``[analysis] judge_error = "decide"``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from core.records import Calibration

from . import ppi
from . import rule as score_rule
from .bootstrap import decimal, differences, exact_interval
from .decide import claims
from .paired import exact_scores
from .rule import Scale
from .t_bounds import guard_step, guarded_t_interval


def calibrate(a, b, kind: str, margin: float, *, alpha: float, method: str, resamples: int, rule: str,
              sims: int, seed: int, ceiling: float, clusters: Sequence | None = None,
              scale: Scale | None = None) -> Calibration:
    """The false-claim rate of the registered rule, simulated at the boundary, for data like these.

    The observed differences are shifted so that their mean is exactly the boundary (the registered decimal
    margin), and ``sims`` data sets are drawn from them (questions, or whole clusters, with replacement);
    each is decided by the same rule (and, for the bootstrap rules, ``resamples`` bootstrap resamples), exact
    arithmetic and strict comparison as the real decision. Equivalence is simulated at the margin on the side of
    the estimate. Seeded: the same inputs give the same rate, so verify can recompute it. Computed with the score
    rule it tracks the rule's true rate over the type-I grid (BENCHMARKS.md); with the bootstrap rules it cannot
    see a loss the sample did not show.
    """
    from scipy import stats
    if rule != "bootstrap" and scale is None:
        raise ValueError(f"rule {rule!r} needs the rubric's scale")
    ed = differences(exact_scores(a, "a"), exact_scores(b, "b"))
    n = len(ed)
    mean = sum(ed) / n
    m = decimal(margin)
    target = {"non_inferiority": -m, "superiority": Fraction(0)}.get(kind, -m if mean <= 0 else m)
    shift = target - mean
    if rule == "score":
        return _calibrate_score([x + shift for x in ed], kind, m, target, alpha, scale, clusters, sims, seed, ceiling)
    labels = list(range(n)) if clusters is None else list(clusters)
    groups: dict[Any, list] = {}
    for x, c in zip(ed, labels, strict=False):
        g = groups.setdefault(c, [Fraction(0), 0, Fraction(0)])
        x = x + shift
        g[0] += x
        g[1] += 1
        g[2] += x * x
    tallied: dict[tuple, int] = {}
    for g in groups.values():
        tallied[tuple(g)] = tallied.get(tuple(g), 0) + 1
    kinds3 = sorted(tallied)
    kinds = [(s_, m_) for s_, m_, _ in kinds3]
    freq = np.array([tallied[k] for k in kinds3])
    n_units = int(freq.sum())
    sums = np.array([float(s_) for s_, _, _ in kinds3])
    sizes = np.array([m_ for _, m_, _ in kinds3], dtype=float)
    squares = np.array([float(q_) for _, _, q_ in kinds3])
    rng = np.random.default_rng(seed)
    outer = rng.multinomial(n_units, freq / n_units, size=sims)
    a_frac, conf = decimal(alpha), 1 - 2 * alpha
    hits = 0
    for data in outer:
        used = np.nonzero(data)[0]
        if n_units < 6 * used.size:  # few units of many kinds (clusters): draw units, cheaper than k binomials
            pool = np.repeat(np.arange(used.size), data[used])
            draws = pool[rng.integers(0, n_units, (resamples, n_units))] + (np.arange(resamples) * used.size)[:, None]
            inner = np.bincount(draws.ravel(), minlength=resamples * used.size).reshape(resamples, used.size)
        else:
            inner = rng.multinomial(n_units, data[used] / n_units, size=resamples)
        lo, hi = exact_interval([kinds[i] for i in used], data[used].tolist(), inner, a_frac, method)
        low, high = float(lo), float(hi)
        if rule == "bootstrap_and_t" and clusters is not None:  # the CR1 guard over the drawn units
            g_low, g_high = guarded_t_interval(None, conf, guard_step(scale),
                                               [kinds[i] for i in used for _ in range(int(data[i]))])
            low, high = min(low, g_low), max(high, g_high)
        elif rule == "bootstrap_and_t":
            step = guard_step(scale)
            nq = float(data @ sizes) + 2
            md = float(data @ sums) / nq
            var = (float(data @ squares) + 2 * step * step - nq * md * md) / (nq - 1)
            half = float(stats.t.ppf((1 + conf) / 2, nq - 1)) * math.sqrt(max(var, 0.0) / nq)
            low, high = min(low, md - half), max(high, md + half)
        hits += claims(kind, float(margin), low, high)
    return Calibration(boundary=float(target), sims=int(sims), claims=int(hits), rate=hits / sims,
                       ceiling=float(ceiling), seed=int(seed))


def _score_claims(kind: str, d: list, m: Fraction, alpha: float, scale: Scale, labels: list | None) -> bool:
    """Whether rule "score" makes the registered claim on differences shifted off the grid (the calibration):
    the same tests as ``decide`` (non-inferiority: the test at -M, or at 0 for "superior")."""
    kw = dict(scale=scale, clusters=labels, shifted=True)
    if kind == "non_inferiority":
        return (score_rule.claims("non_inferiority", d, m, alpha, **kw)
                or score_rule.claims("superiority", d, m, alpha, **kw))
    return score_rule.claims(kind, d, m, alpha, **kw)


def _calibrate_score(shifted: list[Fraction], kind: str, m: Fraction, target: Fraction, alpha: float, scale: Scale,
                     clusters: Sequence | None, sims: int, seed: int, ceiling: float) -> Calibration:
    """Rule "score": each simulated data set draws whole units (questions, or clusters with their questions'
    differences) with replacement from the shifted differences, and is decided by the score tests."""
    groups: dict[Any, list[Fraction]] = {}
    for i, x in enumerate(shifted):
        groups.setdefault(i if clusters is None else clusters[i], []).append(x)
    tallied: dict[tuple, int] = {}
    for values in groups.values():
        key = tuple(sorted(values))
        tallied[key] = tallied.get(key, 0) + 1
    kinds = sorted(tallied)
    freq = np.array([tallied[k] for k in kinds])
    n_units = int(freq.sum())
    hits = 0
    if n_units >= 2:  # one cluster: no test, no claim
        for data in np.random.default_rng(seed).multinomial(n_units, freq / n_units, size=sims):
            d, labels, unit = [], [], 0
            for i in np.nonzero(data)[0]:
                for _ in range(int(data[i])):
                    labels += [unit] * len(kinds[i])
                    d += kinds[i]
                    unit += 1
            hits += _score_claims(kind, d, m, alpha, scale, None if clusters is None else labels)
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
    target = {"non_inferiority": -margin, "superiority": 0.0}.get(kind, -margin if observed <= 0 else margin)
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
