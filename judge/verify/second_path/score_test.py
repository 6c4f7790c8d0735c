"""The score rule's test by this path's own code: floats with bisection for the tilt lambda and its own Student t
for any degrees of freedom (the regularized incomplete beta function by its continued fraction), Satterthwaite's
included::

    psi_i = d_i - mu0, worst = -R - mu0, R = hi - lo of the rubric's scale
    lambda in [0, 1/(R + mu0)] with sum_i psi_i / (1 + lambda psi_i) = 0 (the cap when the sum stays >= 0)
    p_i = 1 / (n (1 + lambda psi_i)), p_worst = 1 - sum p_i; V0, skewness g of that boundary distribution
    T = sum psi_i / sqrt(S G / (G - 1)), S = n V0, or the CR1 sum of squared cluster residuals when larger
    claim iff T > t_{df, 1 - alpha} + max(0, g (t^2 - 1) / (6 sqrt G))

``one_sided`` is one test, ``lower_bound`` its inversion, ``boundary_tests`` the tests a decision reads and
``tests_verdict`` the verdict they give.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

_STEPS = 300  # bisection steps for lambda and for the t quantile (stopped early once the midpoint stops moving)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        even = m * (b - m) * x / ((a + m2 - 1) * (a + m2))
        odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))
        for num in (even, odd):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0, Student t with ``df`` (any real df > 0)."""
    return 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(q: float, df: float) -> float:
    """t with P(T <= t) = q, for q > 1/2, by bisection."""
    tail = 1.0 - q
    lo, hi = 0.0, 1.0
    while t_upper_tail(hi, df) > tail:
        hi *= 2.0
    for _ in range(_STEPS):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if t_upper_tail(mid, df) > tail:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _lambda(psi: list[float], cap: float) -> float:
    def slope(lam: float) -> float:
        acc = []
        for x in psi:
            den = 1.0 + lam * x
            if den <= 0.0:
                return -math.inf
            acc.append(x / den)
        return math.fsum(acc)

    if slope(cap) >= 0.0:
        return cap
    lo, hi = 0.0, cap
    for _ in range(_STEPS):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if slope(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def one_sided(d: Sequence[Fraction], mu0: Fraction, R: int, alpha: float,
              units: Sequence | None = None) -> dict[str, Any]:
    """The one-sided score test of "mean <= mu0" on exact differences ``d`` (``units``: each question's resampling
    unit, or None for independent questions)."""
    n = len(d)
    excess = sum(d, Fraction(0)) - n * mu0
    psi = [float(x - mu0) for x in d]
    worst = float(-R - mu0)
    if excess > 0:
        lam = _lambda(psi, -1.0 / worst)
        p = [1.0 / (n * (1.0 + lam * x)) for x in psi]
        p_worst = max(0.0, 1.0 - math.fsum(p))
    else:
        p, p_worst = [1.0 / n] * n, 0.0
    v0 = math.fsum([w * x * x for w, x in zip(p, psi, strict=True)] + [p_worst * worst * worst])
    m3 = math.fsum([w * x ** 3 for w, x in zip(p, psi, strict=True)] + [p_worst * worst ** 3])
    g = m3 / v0 ** 1.5 if v0 > 0 else 0.0
    spread = n * v0
    if units is None:
        count, df = n, float(n - 1)
    else:
        mean = sum(d, Fraction(0)) / n
        residual: dict[Any, Fraction] = {}
        for x, u in zip(d, units, strict=True):
            residual[u] = residual.get(u, Fraction(0)) + (x - mean)
        e = [float(r) for r in residual.values()]
        count, df = len(e), float(len(e) - 1)
        cr1 = math.fsum(x * x for x in e)
        if cr1 > spread:
            spread = cr1
            df = min(df, max(1.0, 2.0 * cr1 * cr1 / math.fsum(x ** 4 for x in e)))
    if spread > 0:
        stat = float(excess) / math.sqrt(spread * count / (count - 1))
    else:
        stat = 0.0 if excess == 0 else math.copysign(math.inf, float(excess))
    t = t_quantile(1.0 - alpha, df)
    critical = t + max(0.0, g * (t * t - 1.0) / (6.0 * math.sqrt(count)))
    return {"statistic": stat, "df": df, "critical": critical, "claims": stat > critical}


def lower_bound(d: Sequence[Fraction], R: int, alpha: float, units: Sequence | None = None) -> float:
    """The largest boundary the test still rejects, by bisection between -R and the mean (-R if none)."""
    mean = sum(d, Fraction(0)) / len(d)
    if mean <= -R:
        return float(-R)
    lo, hi = float(-R), float(mean)
    while hi - lo > 1e-12 * R:
        mid = (lo + hi) / 2.0
        if one_sided(d, Fraction(mid), R, alpha, units)["claims"]:
            lo = mid
        else:
            hi = mid
    return lo


def boundary_tests(d: Sequence[Fraction], margin: Fraction, R: int, alpha: float, units: Sequence | None) -> list[dict]:
    """The tests a decision reads, as numbers.json records them: lower side at -M, 0 and +M, upper side at +M
    and -M (one per side when M = 0); none when fewer than two units."""
    if units is not None and len(set(units)) < 2:
        return []
    out: list[dict] = []
    for side, mu0 in (("lower", -margin), ("lower", Fraction(0)), ("lower", margin), ("upper", margin),
                      ("upper", -margin)):
        if any(t["side"] == side and t["boundary"] == float(mu0) for t in out):
            continue
        r = one_sided(d, mu0, R, alpha, units) if side == "lower" else one_sided([-x for x in d], -mu0, R, alpha, units)
        out.append({"id": f"{side} {float(mu0):+g}", "side": side, "boundary": float(mu0), **r})
    return out


def tests_verdict(kind: str, margin: float, found: list[dict]) -> str:
    """The verdict the score tests give (the rule's definition, restated): "inconclusive" without tests."""
    if not found:
        return "inconclusive"
    at = {(t["side"], t["boundary"]): t["claims"] for t in found}
    if kind == "equivalence":
        if at[("lower", -margin)] and at[("upper", margin)]:
            return "equivalent"
        return "not equivalent" if at[("lower", margin)] or at[("upper", -margin)] else "inconclusive"
    if at[("lower", 0.0)]:
        return "superior"
    return "non-inferior" if kind == "non_inferiority" and at[("lower", -margin)] else "not shown"
