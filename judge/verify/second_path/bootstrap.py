"""The paired bootstrap, sign and t tests by this path's own code: the resamples drawn again by the documented scheme
(counts per distinct unit, numpy's multinomial from the registered seed; ``draw``), every resample mean an exact
Fraction, hand-sorted quantiles, BCa with ``statistics.NormalDist`` (``check_paired``); the sign test by math.comb;
the t interval and test by a closed-form Student t CDF for integer degrees of freedom.
"""
from __future__ import annotations

import math
import statistics
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

_ND = statistics.NormalDist()


def unit_labels(ids: list[str], clusters: dict[str, str | None]) -> list[tuple] | None:
    """Each question's resampling unit: its registered cluster, or itself when it has none; None when none has one."""
    if not any(clusters.get(q) for q in ids):
        return None
    return [("cluster", clusters[q]) if clusters.get(q) else ("question", q) for q in ids]


def mean_interval(values: list[Fraction], labels: list[tuple] | None, resamples: int, seed: int) -> dict[str, Any]:
    """The mean of per-question values and its 95% percentile interval on resamples drawn by the documented scheme
    (whole units when `labels` gives them), each resample's mean taken by check_paired's own loop."""
    groups: dict[Any, list] = {}
    for i, x in enumerate(values):
        g = groups.setdefault(i if labels is None else labels[i], [Fraction(0), 0])
        g[0] += x
        g[1] += 1
    drawn = draw([(s, m) for s, m in groups.values()], resamples, seed)
    return check_paired([0] * len(values), values, drawn, "percentile", 0.025, clusters=labels)


def draw(units: Sequence[tuple], resamples: int, seed: int) -> tuple[list[tuple[Fraction, int]], np.ndarray]:
    """The bootstrap's resamples by the documented scheme: the distinct units (sum of differences, questions),
    ordered by mean then size, and for each resample how often each is drawn, numpy's multinomial over all units
    from the registered seed. The main path draws by the same scheme: both then decide on the same resamples."""
    seen: dict[tuple[Fraction, int], int] = {}
    for s, m in units:
        key = (_exact(s), int(m))
        seen[key] = seen.get(key, 0) + 1
    kinds = sorted(seen, key=lambda k: (k[0] / k[1], k[1]))
    total = len(units)
    counts = np.random.default_rng(seed).multinomial(total, [seen[k] / total for k in kinds], size=resamples)
    return kinds, counts


def _t_abs_cdf(t: float, nu: int) -> float:
    """P(|T| <= t) for Student t with integer df (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(nu))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if nu % 2 == 1:
        total, term = 0.0, c
        for k in range(1, (nu - 1) // 2 + 1):  # terms c, (2/3)c^3, (2*4)/(3*5) c^5 ...
            if k > 1:
                term *= c2 * (2 * (k - 1)) / (2 * (k - 1) + 1)
            total += term
        return (2 / math.pi) * (theta + s * total) if nu > 1 else 2 * theta / math.pi
    total, term = 1.0, 1.0
    for k in range(1, nu // 2):  # 1 + (1/2)c^2 + (1*3)/(2*4) c^4 ...
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return s * total


def t_crit(q: float, nu: int) -> float:
    """t with P(T <= t) = q (q > 0.5) by bisection on the closed-form CDF."""
    target = 2 * q - 1  # P(|T| <= t)
    lo, hi = 0.0, 1.0
    while _t_abs_cdf(hi, nu) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_abs_cdf(mid, nu) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15 * max(1.0, hi):
            break
    return (lo + hi) / 2


def _sign_p(up: int, down: int) -> float:
    n = up + down
    if n == 0:
        return 1.0
    k = min(up, down)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


def _exact(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(int(x)) if float(x).is_integer() else Fraction(float(x))


def _sorted_means(rows: list[list[int]], nums: list[int], sizes: list[int], scale: int) -> list[Fraction]:
    """Each resample's mean difference, exact, in ascending order."""
    return sorted(Fraction(sum(c * x for c, x in zip(r, nums, strict=False)),
                           sum(c * m for c, m in zip(r, sizes, strict=False)) * scale)
                  for r in rows)


def _pick(means: list[Fraction], p: Fraction) -> Fraction:
    """Exact type-7 quantile of the sorted resample means at level p, textbook form h = (B - 1) p."""
    h = (len(means) - 1) * p
    lo = math.floor(h)
    if lo >= len(means) - 1:
        return means[-1]
    if lo < 0:
        return means[0]
    return means[lo] + (h - lo) * (means[lo + 1] - means[lo])


def t_interval(d: list[float], alpha: float) -> tuple[float, float]:
    if min(d) == max(d):
        return d[0], d[0]
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
    crit = t_crit(1 - alpha, len(d) - 1)
    return mean - crit * se, mean + crit * se



def check_paired(a, b, resamples: tuple, method: str, alpha: float, margin: float | None = None,
                 clusters: Sequence | None = None) -> dict:
    """Independent recomputation of paired() on the same resamples (plain Python, exact Fractions).

    `resamples` is (kinds, counts), as ``draw`` gives them. The check groups the differences into questions or
    clusters itself and refuses resamples that do not describe them. Returns the fields numbers.json records for a
    comparison decided by rule "bootstrap" except the power figures (mde, n_for_margin), which only the main path
    computes; another rule's bounds are its own (judge.verify.second_path.decision_rules, which ``comparison``
    applies).
    """
    ea = [_exact(x) for x in a]
    eb = [_exact(x) for x in b]
    n = len(ea)
    ed = [y - x for x, y in zip(ea, eb, strict=False)]
    d = [float(x) for x in ed]
    constant = len(set(ed)) == 1
    groups: dict[Any, list] = {}
    for i, x in enumerate(ed):
        g = groups.setdefault(i if clusters is None else clusters[i], [Fraction(0), 0])
        g[0] += x
        g[1] += 1
    seen: dict[tuple, int] = {}
    for g in groups.values():
        seen[(g[0], g[1])] = seen.get((g[0], g[1]), 0) + 1
    kinds = [(Fraction(s_), int(m_)) for s_, m_ in resamples[0]]
    if sorted(kinds) != sorted(seen):
        raise ValueError("resamples do not belong to these differences")
    rows = [list(map(int, r)) for r in resamples[1].tolist()]
    for r in rows:
        if sum(r) != len(groups):
            raise ValueError("a resample does not draw every unit once on average")
    scale = 1
    for s_, _ in kinds:
        scale = scale * s_.denominator // math.gcd(scale, s_.denominator)
    nums, sizes = [int(s_ * scale) for s_, _ in kinds], [m_ for _, m_ in kinds]
    a_frac = Fraction(repr(float(alpha)))
    levels = (a_frac, 1 - a_frac)
    if constant:
        lo = hi = ed[0]
    else:
        if method == "bca":
            t_num = sum(seen[k] * x for k, x in zip(kinds, nums, strict=False))
            t_den = sum(seen[k] * m_ for k, m_ in zip(kinds, sizes, strict=False))
            score = 0
            for r in rows:
                num, den = (sum(c * x for c, x in zip(r, nums, strict=False)),
                            sum(c * m_ for c, m_ in zip(r, sizes, strict=False)))
                score += 2 if num * t_den < t_num * den else 1 if num * t_den == t_num * den else 0
            pct = score / (2 * len(rows))
            jack = [float(Fraction(t_num - x, (t_den - m_) * scale))
                    for k, x, m_ in zip(kinds, nums, sizes, strict=False)
                    for _ in range(seen[k]) if t_den - m_ > 0]
            if 0 < pct < 1 and len(jack) >= 2:
                jbar = statistics.fmean(jack)
                u = [(len(jack) - 1) * (jbar - x) for x in jack]
                s2 = math.fsum(x * x for x in u)
                if s2 > 0:
                    z0 = _ND.inv_cdf(pct)
                    acc = math.fsum(x ** 3 for x in u) / (6 * s2 ** 1.5)
                    za = _ND.inv_cdf(float(alpha))
                    adj = []
                    for z in (za, -za):
                        den = 1 - acc * (z0 + z)
                        adj.append(_ND.cdf(z0 + (z0 + z) / den) if den != 0 else float("nan"))
                    if all(math.isfinite(x) for x in adj):
                        levels = (Fraction(adj[0]), Fraction(adj[1]))
        means = _sorted_means(rows, nums, sizes, scale)
        lo, hi = (_pick(means, p) for p in levels)
    ci_low, ci_high = float(lo), float(hi)

    mean_d = float(sum(ed) / n)
    sd = 0.0 if constant else statistics.stdev(d)
    se = sd / math.sqrt(n)
    up = sum(1 for x in d if x > 0)
    down = sum(1 for x in d if x < 0)
    t_low, t_high = t_interval(d, alpha)
    if constant:
        t_p = 1.0 if d[0] == 0 else 0.0
    else:
        t_p = 1.0 - _t_abs_cdf(abs(mean_d / se), n - 1)
    fa, fb = [float(x) for x in ea], [float(x) for x in eb]
    try:
        corr = statistics.correlation(fa, fb)
    except statistics.StatisticsError:
        corr = None
    return {
        "n": n,
        "mean_a": float(sum(ea) / n),
        "mean_b": float(sum(eb) / n),
        "diff": mean_d,
        "sd_diff": sd,
        "se": se,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "bound": ci_low,
        "upper": ci_high,
        "guard_low": None,
        "guard_high": None,
        "up": up,
        "down": down,
        "ties": n - up - down,
        "sign_p": _sign_p(up, down),
        "t_low": t_low,
        "t_high": t_high,
        "t_p": t_p,
        "corr": corr,
        "method": method,
        "confidence": 1 - 2 * alpha,
        "resamples": len(rows),
        "resampling": "questions" if clusters is None else "clusters",
        "units": len(groups),
        "rule": "bootstrap",
    }
