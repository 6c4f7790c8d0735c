"""The gold-corrected interval by this path's own loops: stratified PPI++ (or the gold alone) with the guarded
interval (ddof-1 spreads, a pseudo-residual of half the rubric's range either side of the rectifier's mean, t with
Welch-Satterthwaite degrees of freedom).
"""
from __future__ import annotations

import math
from typing import Any

from scipy import stats as sps

EARLIER_STEP = 1.0  # the guarded rule's pseudo-residual in folders written before it was half the rubric's range


def _mean(xs) -> float:
    return math.fsum(xs) / len(xs)


def _ss(xs: list[float]) -> float:
    m = _mean(xs)
    return math.fsum((x - m) ** 2 for x in xs)


def _lam(d: list[float], fl: list[float], fu: list[float]) -> float:
    n, m = len(d), len(fu)
    md, mf = _mean(d), _mean(fl)
    cov = math.fsum((x - md) * (y - mf) for x, y in zip(d, fl, strict=True)) / n
    both = fl + fu
    var = _ss(both) / (len(both) - 1)
    return 0.0 if var == 0 else min(1.0, max(0.0, cov / ((1 + n / m) * var)))


def step_of(scale: list[int], earlier: bool = False) -> float:
    """The guarded rule's pseudo-residual: half the rubric's range (hi - lo) / 2; one point in a folder written
    ``earlier``."""
    return EARLIER_STEP if earlier else (max(scale) - min(scale)) / 2


def guarded(strata: dict[Any, tuple[list[float], list[float], list[float]]], alpha: float,
            gold_only: bool, step: float) -> dict[str, Any]:
    """Stratified PPI++ (or the gold alone) with the guarded interval: ddof-1 spreads, two pseudo-residuals ``step``
    (half the rubric's range) either side of the rectifier's mean, t with Welch-Satterthwaite degrees of freedom."""
    total = sum(len(d) + len(fu) for d, _, fu in strata.values())
    theta, pieces, out = 0.0, [], []
    for name, (d, fl, fu) in strata.items():
        n, m = len(d), len(fu)
        w = (n + m) / total
        lam = None if m == 0 else 0.0 if gold_only else _lam(d, fl, fu)
        r = d if not lam else [x - lam * y for x, y in zip(d, fl, strict=True)]
        est = _mean(r) + (lam * _mean(fu) if lam else 0.0)
        v_rect = (_ss(r) + 2 * step * step) / (n + 1)
        pieces.append((w * w * v_rect / n, n + 1.0))
        if lam:
            pieces.append((w * w * lam * lam * _ss(fl + fu) / (n + m - 1) / m, n + m - 1.0))
        theta += w * est
        out.append({"id": "(rest)" if name is None else name, "questions": n + m, "labelled": n, "estimate": est,
                    "lam": lam})
    var = math.fsum(v for v, _ in pieces if v > 0)
    df = var * var / math.fsum(v * v / k for v, k in pieces if v > 0)
    se = math.sqrt(var)
    crit = float(sps.t.ppf(1 - alpha, df))
    return {"estimate": theta, "se": se, "df": df, "step": step, "low": theta - crit * se, "high": theta + crit * se,
            "questions": total, "labelled": sum(len(d) for d, _, _ in strata.values()), "strata": out}
