"""Each judge against gold by this path's own loops: the contingency table, quadratic-weighted kappa, Krippendorff's
ordinal alpha, and their bootstrap intervals; the mean offset judge - gold with its paired bootstrap interval.

The intervals are computed on the resamples drawn again by their documented schemes, so the two paths agree to verify's
tolerance (the draws are the same; only the last places of float sums may differ):

* exact agreement, kappa and alpha: ``RESAMPLES`` resamples of whole questions (every answer to a question, both
  arms, every quant and sample, moves with it): the G distinct questions sorted as text, resample r being the r-th
  call of ``numpy.random.default_rng(seed).integers(0, G, G)``, each drawn question bringing all its answers; the
  three statistics on each resample; each interval BCa over questions (``interval = "bca"``): the type-7
  percentiles, at the levels below, of the B resamples where the statistic is defined; none when fewer than half
  are or the statistic itself is undefined. The levels: p = (below + at_or_below) / (2 B), below / at_or_below the
  defined resamples under / not over the observed value, a tie within 1e-12 * max(1, |observed|) of it;
  z0 = Phi^-1(p); the jackknife theta_(i) leaving out one question (all its answers) at a time, where defined, m
  their mean, d_i = m - theta_(i), a = sum(d_i^3) / (6 (sum(d_i^2))^1.5); the levels
  Phi(z0 + (z0 + z) / (1 - a (z0 + z))) at z = Phi^-1(alpha), Phi^-1(1 - alpha). The percentile levels
  (alpha, 1 - alpha) instead where p is 0 or 1, fewer than 2 jackknife values are defined, every
  |d_i| <= 1e-12 * max(1, |m|), or 1 - a (z0 + z) <= 0 at either end. A folder written before with question
  resampling records no ``interval``: percentile levels, as it was written. A folder written before that records no
  ``resampling``: its answers were the units (each alone, in answer order), percentile levels, and exact agreement
  had no interval;
* the offsets: the paired bootstrap of the decisions (``bootstrap.draw``, ``bootstrap.check_paired``: counts per
  distinct unit, numpy's multinomial from the seed, exact Fractions), gold as arm a and the judge as arm b; overall
  and per arm over whole questions (the answers of one question are one cluster), ``RESAMPLES`` resamples; per
  hypothesis pair over questions, the registered ``resamples``.
"""
from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from statistics import NormalDist
from typing import Any

import numpy as np

from . import agreement, bootstrap

RESAMPLES = 2000  # the agreement section's resamples (kappa, alpha and the offsets against gold)
ALPHA = 0.025  # the section's intervals are two-sided 95 %
TIE = 1e-12  # relative: a resample within this of the observed value ties with it (BCa; module doc)


def alpha_ordinal(a: list[int], b: list[int]) -> float | None:
    """Krippendorff's alpha (ordinal metric) of two raters rating every unit."""
    return agreement.alpha_ordinal([list(a), list(b)])


def _table(g: list[int], j: list[int], scale: list[int]) -> list[list[int]]:
    """Rows gold, columns judge: how many answers have each pair of scores."""
    pos = {v: i for i, v in enumerate(scale)}
    t = [[0] * len(scale) for _ in scale]
    for x, y in zip(g, j, strict=True):
        t[pos[x]][pos[y]] += 1
    return t


def kappa_of(t: list[list[int]]) -> float | None:
    """Quadratic-weighted kappa of a contingency table (None: chance agreement is perfect)."""
    k, n = len(t), sum(map(sum, t))
    rows = [sum(r) for r in t]
    cols = [sum(t[i][c] for i in range(k)) for c in range(k)]
    observed = math.fsum((i - c) ** 2 * t[i][c] for i in range(k) for c in range(k)) / n
    expected = math.fsum((i - c) ** 2 * rows[i] * cols[c] for i in range(k) for c in range(k)) / (n * n)
    return 1 - observed / expected if expected else None


def alpha_of(t: list[list[int]]) -> float | None:
    """Krippendorff's ordinal alpha of two raters who rated every unit, from their contingency table: each unit
    adds one coincidence (a, b) and one (b, a). A scale point nobody used adds nothing to the ordinal distances."""
    k = len(t)
    return agreement.alpha_from_coincidences([[t[c][e] + t[e][c] for e in range(k)] for c in range(k)])


def _levels(values: list[float], observed: float, jack: list[float], alpha: float) -> tuple[float, float]:
    """BCa's quantile levels (module doc), or the percentile levels where BCa is undefined."""
    tol = TIE * max(1.0, abs(observed))
    below = sum(1 for v in values if v < observed - tol)
    at_or_below = sum(1 for v in values if v <= observed + tol)
    p = (below + at_or_below) / (2 * len(values))
    if p <= 0 or p >= 1 or len(jack) < 2:
        return alpha, 1 - alpha
    m = math.fsum(jack) / len(jack)
    d = [m - x for x in jack]
    if all(abs(x) <= TIE * max(1.0, abs(m)) for x in d):
        return alpha, 1 - alpha
    nd = NormalDist()
    z0 = nd.inv_cdf(p)
    a = math.fsum(x ** 3 for x in d) / (6 * math.fsum(x * x for x in d) ** 1.5)
    out = []
    for z in (nd.inv_cdf(alpha), nd.inv_cdf(1 - alpha)):
        den = 1 - a * (z0 + z)
        if den <= 0:
            return alpha, 1 - alpha
        out.append(nd.cdf(z0 + (z0 + z) / den))
    return out[0], out[1]


def _interval(values: list[float | None], observed: float | None, jack: list[float | None], alpha: float,
              bca: bool) -> tuple[float | None, float | None]:
    """Type-7 percentiles of the defined values at the BCa (or percentile) levels; none when fewer than half are
    defined or ``observed`` is not."""
    ok = [v for v in values if v is not None and math.isfinite(v)]
    if not ok or 2 * len(ok) < len(values) or observed is None:
        return None, None
    lo, hi = _levels(ok, observed, [x for x in jack if x is not None], alpha) if bca else (alpha, 1 - alpha)
    return agreement.percentile(ok, 100 * lo), agreement.percentile(ok, 100 * hi)


def agreement_intervals(g: list[int], j: list[int], scale: list[int], seed: int, resamples: int = RESAMPLES,
                        alpha: float = ALPHA, questions: list[str] | None = None,
                        bca: bool = True) -> dict[str, Any]:
    """Bootstrap intervals of exact agreement, kappa and alpha over whole ``questions`` (each answer's question):
    resample r draws the r-th ``default_rng(seed).integers(0, G, G)`` of the G questions sorted as text, each
    bringing all its answers; the three statistics on every resample, BCa with the jackknife leaving out one
    question at a time (module doc). ``bca`` False: percentile levels, as a folder with no ``interval`` was written.
    ``questions`` None: the answers resampled one by one, as a folder written before was (percentile, no
    exact-agreement interval then)."""
    if questions is None:
        units = [[i] for i in range(len(g))]
    else:
        members: dict[str, list[int]] = defaultdict(list)
        for i, q in enumerate(questions):
            members[str(q)].append(i)
        units = [members[q] for q in sorted(members)]
    rng = np.random.default_rng(seed)
    kappas, alphas, exacts = [], [], []
    for _ in range(resamples):
        idx = [i for u in rng.integers(0, len(units), len(units)).tolist() for i in units[u]]
        t = _table([g[i] for i in idx], [j[i] for i in idx], scale)
        kappas.append(kappa_of(t))
        alphas.append(alpha_of(t))
        exacts.append(sum(t[c][c] for c in range(len(scale))) / len(idx))
    whole = _table(g, j, scale)
    bca = bca and questions is not None
    jack_k, jack_a, jack_e = [], [], []
    if bca:
        k = len(scale)
        for left in units:  # the whole table less the left-out question's answers
            mine = _table([g[i] for i in left], [j[i] for i in left], scale)
            t = [[whole[r][c] - mine[r][c] for c in range(k)] for r in range(k)]
            rest = len(g) - len(left)
            jack_k.append(kappa_of(t) if rest else None)
            jack_a.append(alpha_of(t) if rest else None)
            jack_e.append(sum(t[c][c] for c in range(k)) / rest if rest else None)
    k_lo, k_hi = _interval(kappas, kappa_of(whole), jack_k, alpha, bca)
    a_lo, a_hi = _interval(alphas, alpha_of(whole), jack_a, alpha, bca)
    out: dict[str, Any] = {"kappa_low": k_lo, "kappa_high": k_hi, "krippendorff_low": a_lo, "krippendorff_high": a_hi}
    if questions is not None:
        exact = sum(whole[c][c] for c in range(len(scale))) / len(g)
        e_lo, e_hi = _interval(exacts, exact, jack_e, alpha, bca)
        out |= {"exact_low": e_lo, "exact_high": e_hi, "resampling": "question"}
        if bca:
            out["interval"] = "bca"
    return out


def offset(judge: list, gold: list, *, resamples: int, seed: int, clusters: list | None = None,
           unit: str = "answers", alpha: float = ALPHA) -> dict[str, Any] | None:
    """Mean judge - gold with its paired bootstrap interval (gold as arm a, the judge as arm b), drawn and computed
    by this path's decision code (bootstrap.draw, bootstrap.check_paired); None with fewer than 2 pairs."""
    if len(judge) < 2:
        return None
    d = [Fraction(y) - Fraction(x) for x, y in zip(gold, judge, strict=True)]
    groups: dict[Any, list] = {}
    for i, x in enumerate(d):
        acc = groups.setdefault(i if clusters is None else clusters[i], [Fraction(0), 0])
        acc[0] += x
        acc[1] += 1
    r = bootstrap.check_paired(gold, judge, bootstrap.draw([tuple(v) for v in groups.values()], resamples, seed),
                               "percentile", alpha, clusters=clusters)
    return {"n": r["n"], "mean": r["diff"], "low": r["ci_low"], "high": r["ci_high"],
            "resampling": unit if clusters is None else "clusters", "units": r["units"]}
