"""Classical bounds and power for paired differences: the sign test, the paired t interval and test, the guarded
t interval of rule "bootstrap_and_t", the t-based minimum detectable effect and questions needed, and the
cluster-robust SE of a mean.

Power figures use the one-sided alpha of the decision (= two-sided 2 alpha) and the paired t-test's power
(noncentral t), as statsmodels' TTestPower.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from .bootstrap import _is_constant
from .rule import Scale


def sign_test(up: int, down: int) -> float:
    """Exact two-sided binomial sign test p (ties dropped beforehand); 1.0 with no signs.

    Uses only the direction of each difference, so it is robust to the 0/1/2 scale.
    """
    from scipy import stats
    n = int(up) + int(down)
    if n == 0:
        return 1.0
    return float(stats.binomtest(int(up), n, 0.5).pvalue)


def _check_n(d: np.ndarray) -> None:
    if d.ndim != 1 or d.size < 2:
        raise ValueError("need a 1-D array with at least 2 paired differences")


def t_interval(d: np.ndarray, confidence: float) -> tuple[float, float]:
    """Two-sided paired-t interval for the mean difference (df = n - 1).

    Zero SD (all differences equal) gives the point interval at the mean.
    """
    from scipy import stats
    d = np.asarray(d, dtype=float)
    _check_n(d)
    if _is_constant(d):
        return float(d[0]), float(d[0])
    mean = float(np.mean(d))
    se = float(np.std(d, ddof=1)) / math.sqrt(d.size)
    crit = float(stats.t.ppf((1 + confidence) / 2, d.size - 1))
    return mean - crit * se, mean + crit * se


def guarded_t_interval(d: np.ndarray, confidence: float, step: float,
                       unit_list: Sequence[tuple[Fraction, int]] | None = None) -> tuple[float, float]:
    """Paired-t interval of ``d`` with one pseudo-loss and one pseudo-win of ``step`` added: half the rubric's
    range (``guard_step``), so the guard means the same on every scale (one point on 0-2).

    The pseudo-observations (in the spirit of Agresti-Caffo's added counts) leave the mean nearly unchanged
    but give a sample with no observed disagreement a non-zero spread, so twelve ties are not proof. With
    clusters (``unit_list`` from ``units``: each unit's sum and size) it is the cluster-robust (CR1) t interval
    over the G units plus a pseudo-unit of -step and one of +step (each of the mean unit size), with G + 1
    degrees of freedom; with units of one question each this is exactly the paired-t interval above.
    """
    if unit_list is None:
        d = np.asarray(d, dtype=float)
        return t_interval(np.concatenate([d, [-float(step), float(step)]]), confidence)
    from scipy import stats
    size = math.fsum(m for _, m in unit_list) / len(unit_list)
    sums = [float(s_) for s_, _ in unit_list] + [-float(step) * size, float(step) * size]
    sizes = [float(m) for _, m in unit_list] + [size, size]
    g = len(sums)
    mean = math.fsum(sums) / math.fsum(sizes)
    cr1 = math.fsum((x - m * mean) ** 2 for x, m in zip(sums, sizes, strict=True))
    half = float(stats.t.ppf((1 + confidence) / 2, g - 1)) * math.sqrt(g / (g - 1) * cr1) / math.fsum(sizes)
    return mean - half, mean + half


def guard_step(scale: Scale) -> float:
    """The guard's pseudo-loss and pseudo-win: half the rubric's range R = hi - lo (one point on 0-2, five on 0-10)."""
    return scale.range / 2


def t_test_p(d: np.ndarray) -> float:
    """Two-sided paired t-test p for mean difference 0.

    Zero SD: p = 1.0 if the (common) difference is 0, else 0.0 (no noise, any shift is real).
    """
    from scipy import stats
    d = np.asarray(d, dtype=float)
    _check_n(d)
    if _is_constant(d):
        return 1.0 if d[0] == 0 else 0.0
    mean = float(np.mean(d))
    se = float(np.std(d, ddof=1)) / math.sqrt(d.size)
    return float(2 * stats.t.sf(abs(mean / se), d.size - 1))


def _check_power_args(alpha: float, power: float, sided: int) -> None:
    if sided not in (1, 2):
        raise ValueError("sided must be 1 or 2")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must be in (0, 1)")


def t_power(effect_size: float, n: int, alpha: float = 0.05, sided: int = 2) -> float:
    """Power of the paired (one-sample) t-test for standardised effect ``effect_size`` with n questions.

    Noncentral t, as statsmodels' TTestPower: the normal approximation is optimistic at small n.
    """
    from scipy import stats
    df = n - 1
    nc = float(effect_size) * math.sqrt(n)
    crit = float(stats.t.ppf(1 - alpha / sided, df))
    out = float(stats.nct.sf(crit, df, nc))
    return out + float(stats.nct.cdf(-crit, df, nc)) if sided == 2 else out


def mde(sd: float, n: int, alpha: float = 0.05, power: float = 0.8, sided: int = 2) -> float:
    """Minimum detectable mean difference: the effect the paired t-test detects with this power at n.

    Says how small an effect this many questions can resolve. sd == 0 gives 0.0 (any
    shift is detectable when differences do not vary).
    """
    from scipy import optimize
    _check_power_args(alpha, power, sided)
    if n < 2:
        raise ValueError("n must be >= 2")
    if sd < 0:
        raise ValueError("sd must be >= 0")
    if sd == 0:
        return 0.0
    hi = 1.0
    while t_power(hi, n, alpha, sided) < power:
        hi *= 2
    return float(optimize.brentq(lambda e: t_power(e, n, alpha, sided) - power, 0.0, hi, xtol=1e-12)) * float(sd)


def n_for_effect(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8,
                 sided: int = 2) -> int:
    """Questions needed for the paired t-test to detect ``|effect|`` with this power (smallest such n).

    sd == 0 gives 1 (one question already shows a noise-free shift); effect == 0 is an error.
    """
    from scipy import stats
    _check_power_args(alpha, power, sided)
    if effect == 0:
        raise ValueError("effect must be non-zero")
    if sd < 0:
        raise ValueError("sd must be >= 0")
    if sd == 0:
        return 1
    es = abs(float(effect)) / float(sd)
    z = float(stats.norm.ppf(1 - alpha / sided) + stats.norm.ppf(power))
    n = max(2, math.ceil((z / es) ** 2))  # the normal approximation: a lower bound for the t-test's n
    while n > 2 and t_power(es, n - 1, alpha, sided) >= power:
        n -= 1
    while t_power(es, n, alpha, sided) < power:
        n += 1
    return n


def clustered_se(scores: np.ndarray, clusters: Sequence) -> float:
    """Cluster-robust SE of a mean (Miller 2024): sqrt(sum_c (sum_{i in c} (s_i - mean))^2) / n.

    Questions sharing a passage/template are correlated; treating them as independent
    understates the SE.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or s.size == 0:
        raise ValueError("scores must be a non-empty 1-D array")
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    if inverse.size != s.size:
        raise ValueError("scores and clusters must have the same length")
    sums = np.bincount(inverse.ravel(), weights=s - s.mean())
    return float(math.sqrt(float(np.sum(sums ** 2))) / s.size)
