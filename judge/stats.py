"""Paired statistics for comparing two systems scored on the same questions.

Conventions (read these before using any number this module returns)
--------------------------------------------------------------------
* Direction: every paired quantity is about ``d = b - a`` per question, i.e. "b vs a".
  A positive difference means system **b** scored higher than system **a**. Pass the
  baseline as ``a`` and the candidate as ``b``.
* ``alpha`` is ONE-SIDED. The registered decision (non-inferiority / superiority) uses the
  one-sided (1 - alpha) lower bound of the mean difference, ``Paired.bound``.
* The reported interval ``ci_low``/``ci_high`` (and ``t_low``/``t_high``) is the TWO-SIDED
  (1 - 2*alpha) interval, whose lower end is the one-sided (1 - alpha) bootstrap bound. So:
    - ``alpha=0.025`` -> two-sided 95% interval (regulatory convention: FDA 2016, CONSORT 2012);
    - ``alpha=0.05``  -> two-sided 90% interval, lower end = one-sided 95% lower bound.
  Equivalence is TOST with the same (1 - 2*alpha) interval. ``Paired.bound``/``Paired.upper`` are the
  interval the registered rule decides on (RULES): the bootstrap interval, or the wider of it and a
  small-sample t interval.
* Exact arithmetic: scores are small integers and a question's score is the mean of its K samples, so
  every difference and every resample mean is a rational with a known denominator. The bootstrap
  quantiles are computed exactly (integer numerators over a common denominator) and rounded once, so a
  bound exactly at the margin compares equal to it (and does not clear it) in both verification paths.
* Resampling: questions, or whole clusters of questions when a set declares clusters (cluster bootstrap).
* Power figures (``Paired.mde``, ``Paired.n_for_margin``) use the same one-sided alpha
  (= two-sided 2*alpha) and power 0.8, with the paired t-test's power (noncentral t) and the observed SD
  of the differences.
* Bootstrap intervals follow ``scipy.stats.bootstrap`` (percentile and BCa, "linear" quantile,
  i.e. np.percentile's default) so they can be checked against scipy on the same bootstrap
  distribution. Two deliberate, documented departures:
    - when all differences are equal (identical arms, zero variance) every interval is the
      point ``(d[0], d[0])`` instead of scipy's NaN;
    - in BCa's bias correction a bootstrap mean equal to the observed mean counts as a tie (exactly in
      paired(); within ``_TIE_TOL``, relative 1e-12, in the float helpers ``bca_interval``).
* The bootstrap uses ``resample_counts`` so the independent check (``check_paired``, at the
  end of this module) can be run on exactly the same resamples; it recomputes them with exact Fractions.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from . import rule as score_rule
from .rule import Scale

# scipy (~0.6 s to import) is imported inside the functions that use it: a run refused at its start, or
# killed during collection, never needs it.

__all__ = [
    "RULES",
    "exact",
    "decimal",
    "differences",
    "units",
    "tally",
    "exact_interval",
    "guarded_t_interval",
    "t_power",
    "resample_indices",
    "resample_counts",
    "draw_counts",
    "counts_means",
    "bootstrap_means",
    "percentile_interval",
    "bca_interval",
    "lower_bound",
    "sign_test",
    "t_interval",
    "t_test_p",
    "mde",
    "n_for_effect",
    "clustered_se",
    "Paired",
    "paired",
    "Decision",
    "decide",
    "claims",
    "CLAIMS",
    "Calibration",
    "calibrate",
    "cohen_kappa",
    "kappa_from_tables",
    "kappa_bootstrap",
    "krippendorff_alpha",
    "check_paired",
    "exact_scores",
    "score_tests",
    "Decided",
    "decision",
]

_METHODS = ("percentile", "bca")
RULES = ("score", "bootstrap", "bootstrap_and_t")
"""The registered decision rule. "score" (the registration's default): the scale-anchored score test of
``judge.rule``, whose boundary distribution may put weight on a loss of the rubric's full range, so a sample of
ties is not proof; it holds the false-claim rate at the boundary at 1.2 alpha over the type-I grid of BENCHMARKS.md
(ties, scales 0-1, 0-2 and 0-10, K, clusters). "bootstrap": the bootstrap interval alone. "bootstrap_and_t": the
wider of the bootstrap interval and ``guarded_t_interval`` (pseudo-observations of half the rubric's range; with
clusters a CR1 t bound over the units), so a claim needs both. The bootstrap bound can never fall below the
smallest observed difference, and both bootstrap rules exceed 1.2 alpha where most differences are ties
(BENCHMARKS.md): they stay registrable for folders and experiments that registered them."""
_TIE_TOL = 1e-12  # relative tolerance for "bootstrap mean equals observed mean" in BCa
_CHUNK = 1024  # resample rows per batch in bootstrap_means (bounds memory)


# ----------------------------------------------------------------------------------------
# Bootstrap building blocks (main, vectorised path). paired() uses the exact ones (units, resample_counts,
# exact_interval); the float helpers (resample_indices, bootstrap_means, percentile_interval, bca_interval)
# are scipy's arithmetic, kept so the tests can show both equal scipy on scipy's own resamples.
# ----------------------------------------------------------------------------------------


def resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap row indices, shape (resamples, n), for the float helpers (paired() and the independent
    check share resample_counts instead)."""
    if n < 1 or resamples < 1:
        raise ValueError("need n >= 1 and resamples >= 1")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def exact(x) -> Fraction:
    """A score, mean or difference as an exact rational: a Fraction as is, an int exactly, a float at its exact
    binary value. Per-question means should arrive as Fractions (sum of scores over number of samples)."""
    if isinstance(x, Fraction):
        return x
    if isinstance(x, (int, np.integer)):
        return Fraction(int(x))
    return Fraction(float(x))


def decimal(x: float) -> Fraction:
    """A registered number (margin, alpha) as the decimal it was written as: 0.1 -> 1/10."""
    return Fraction(repr(float(x)))


def _coded(xs) -> tuple[list[Fraction], np.ndarray]:
    """Distinct values (exact) and each item's index into them: scores repeat (1,000 questions, 3 values), so
    the exact arithmetic is done once per distinct value."""
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(x, len(index)) for x in xs), dtype=np.int64)
    return [exact(x) for x in index], codes


def differences(a, b) -> list[Fraction]:
    """Exact paired differences b - a, one per question."""
    cache: dict[tuple, Fraction] = {}
    out = []
    for x, y in zip(a, b, strict=False):
        key = (x, y)
        if key not in cache:
            cache[key] = exact(y) - exact(x)
        out.append(cache[key])
    return out


def units(d, clusters: Sequence | None = None) -> list[tuple[Fraction, int]]:
    """The resampling units of a paired comparison as (sum of differences, questions): one per question,
    or one per cluster when ``clusters`` labels each question (a cluster bootstrap resamples whole clusters)."""
    d = [exact(x) for x in d]
    if clusters is None:
        return [(x, 1) for x in d]
    clusters = list(clusters)
    if len(clusters) != len(d):
        raise ValueError("d and clusters must have the same length")
    sums: dict[Any, list] = {}
    for x, c in zip(d, clusters, strict=False):
        acc = sums.setdefault(c, [Fraction(0), 0])
        acc[0] += x
        acc[1] += 1
    return [(v[0], v[1]) for v in sums.values()]


def tally(unit_list) -> tuple[list[tuple[Fraction, int]], list[int]]:
    """Distinct units (sum, size), ordered by mean then size, and how often each occurs."""
    out: dict[tuple[Fraction, int], int] = {}
    for u in unit_list:
        key = (exact(u[0]), int(u[1]))
        out[key] = out.get(key, 0) + 1
    kinds = sorted(out, key=lambda k: (k[0] / k[1], k[1]))
    return kinds, [out[k] for k in kinds]


def resample_counts(unit_list, resamples: int, seed: int) -> tuple[list[tuple[Fraction, int]], np.ndarray]:
    """Bootstrap resamples as counts of each distinct unit: (kinds[k], counts[resamples, k]).

    ``unit_list`` is from ``units``. Units with the same (sum, size) are exchangeable, so a resample is the
    number of draws of each kind: resamples x k numbers instead of resamples x n (judge-score differences take
    a handful of values). The check path recomputes every resample from these counts with its own loop.
    """
    if not unit_list:
        raise ValueError("need at least one unit")
    kinds, freq = tally(unit_list)
    return kinds, draw_counts(freq, resamples, seed)


def draw_counts(freq: Sequence[int], resamples: int, seed: int) -> np.ndarray:
    """Resamples as counts per kind: each draws sum(freq) units, a kind with probability freq / sum(freq)."""
    if resamples < 1:
        raise ValueError("need resamples >= 1")
    f = np.asarray(freq, dtype=float)
    g = int(f.sum())
    return np.random.default_rng(seed).multinomial(g, f / g, size=resamples)


def counts_means(kinds, counts: np.ndarray) -> np.ndarray:
    """Mean difference per question of each resample (float), given as counts per kind."""
    sums = np.array([float(s) for s, _ in kinds])
    sizes = np.array([m for _, m in kinds], dtype=float)
    return (counts @ sums) / (counts @ sizes)


def _scaled(kinds) -> tuple[list[int], list[int], int]:
    """Integer numerators over a common denominator: sum_k = nums_k / scale."""
    scale = math.lcm(*(s.denominator for s, _ in kinds))
    return [int(s * scale) for s, _ in kinds], [int(m) for _, m in kinds], scale


def _sums(kinds, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Each resample's mean as num / (den * scale), in exact integers (Python ints when int64 could overflow)."""
    nums, sizes, scale = _scaled(kinds)
    total = int(counts[0].sum()) if counts.size else 0
    if max(abs(x) for x in nums) * max(total, 1) < 2 ** 62:
        num = counts.astype(np.int64) @ np.array(nums, dtype=np.int64)
    else:
        num = counts.astype(object) @ np.array(nums, dtype=object)
    return num, counts @ np.array(sizes, dtype=np.int64), scale


def _order_stats(num: np.ndarray, den: np.ndarray, scale: int, positions: Sequence[int]) -> dict[int, Fraction]:
    """The exact values at sorted ``positions`` of the resample means num / (den * scale).

    Equal denominators (every question resampled, or clusters of one size): integers are sorted. Otherwise a
    float sort orders them exactly when distinct means are further apart than float rounding can blur
    (checked); if not, Fractions are sorted.
    """
    pos = sorted(set(positions))
    if den.min() == den.max():
        part = np.partition(num, pos) if num.dtype != object else np.array(sorted(num), dtype=object)
        d = int(den[0]) * scale
        return {k: Fraction(int(part[k]), d) for k in pos}
    q = int(den.max()) * scale
    top = max(abs(float(x)) for x in num) / (float(den.min()) * scale)
    if q * q * max(top, 1.0) < 2.0 ** 50:
        order = np.argsort(num.astype(float) / den.astype(float), kind="stable")
    else:
        order = sorted(range(num.size), key=lambda r: Fraction(int(num[r]), int(den[r])))
    return {k: Fraction(int(num[order[k]]), int(den[order[k]]) * scale) for k in pos}


def _where(resamples: int, p: Fraction) -> tuple[int, int, Fraction]:
    """Positions and weight of the type-7 quantile at level p (scipy.stats.quantile's arithmetic, exact)."""
    jg = p * resamples + (1 - p)
    jp1 = math.floor(jg)
    j = jp1 - 1
    g = Fraction(0) if j < 0 else jg - jp1
    return min(max(j, 0), resamples - 1), min(max(jp1, 0), resamples - 1), g


def _exact_quantiles(num, den, scale, levels: Sequence[Fraction]) -> list[Fraction]:
    where = [_where(num.size, p) for p in levels]
    vals = _order_stats(num, den, scale, [k for j, jp1, _ in where for k in (j, jp1)])
    return [(1 - g) * vals[j] + g * vals[jp1] for j, jp1, g in where]


def _exact_levels(kinds, freq: Sequence[int], num, den, scale, alpha: Fraction, method: str) -> tuple:
    """Quantile levels (alpha, 1 - alpha), BCa-adjusted if asked (Efron & Tibshirani 14.3, 15.4; scipy's formula).

    z0 counts resamples below the observed mean exactly; the acceleration uses the jackknife over units
    (leave one question, or one cluster, out). Falls back to the percentile levels when BCa is undefined.
    """
    from scipy import special
    if method != "bca":
        return alpha, 1 - alpha
    nums, sizes, _ = _scaled(kinds)
    t_num = sum(f * x for f, x in zip(freq, nums, strict=False))
    t_den = sum(f * m for f, m in zip(freq, sizes, strict=False))
    below = int(np.count_nonzero(num.astype(object) * t_den < den.astype(object) * t_num)) \
        if num.dtype == object or den.min() != den.max() else int(np.count_nonzero(num < t_num))
    at_or_below = int(np.count_nonzero(num.astype(object) * t_den <= den.astype(object) * t_num)) \
        if num.dtype == object or den.min() != den.max() else int(np.count_nonzero(num <= t_num))
    pct = (below + at_or_below) / (2 * num.size)
    z0 = float(special.ndtri(pct))
    theta = np.array([(t_num - x) / (t_den - m) / scale for f, x, m in zip(freq, nums, sizes, strict=False)
                      for _ in range(f) if t_den - m > 0], dtype=float)
    if theta.size < 2:
        return alpha, 1 - alpha
    u = (theta.size - 1) * (np.mean(theta) - theta)
    den2 = float(np.sum(u ** 2))
    if not (math.isfinite(z0) and den2 > 0):
        return alpha, 1 - alpha
    a_hat = float(np.sum(u ** 3)) / den2 ** 1.5 / 6
    z_alpha = float(special.ndtri(float(alpha)))
    out = []
    for z in (z_alpha, -z_alpha):
        lev = float(special.ndtr(z0 + (z0 + z) / (1 - a_hat * (z0 + z))))
        if not math.isfinite(lev):
            return alpha, 1 - alpha
        out.append(Fraction(lev))
    return tuple(out)


def exact_interval(kinds, freq: Sequence[int], counts: np.ndarray, alpha: Fraction,
                   method: str) -> tuple[Fraction, Fraction]:
    """Two-sided bootstrap interval with ``alpha`` in each tail, as exact rationals.

    Every resample mean is a rational with a known denominator, so the quantiles are computed exactly and
    rounded once: a bound that equals the margin exactly compares equal to it, never one unit in the last
    place above (a tie never favours the claim). One kind only (all differences equal): the point interval.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if len({s / m for s, m in kinds}) == 1:
        v = kinds[0][0] / kinds[0][1]
        return v, v
    num, den, scale = _sums(kinds, counts)
    levels = _exact_levels(kinds, freq, num, den, scale, alpha, method)
    lo, hi = _exact_quantiles(num, den, scale, levels)
    return lo, hi


def bootstrap_means(d: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Mean of ``d`` over each resample row of ``idx`` (batched to bound memory)."""
    d = np.asarray(d, dtype=float)
    idx = np.asarray(idx)
    out = np.empty(idx.shape[0], dtype=float)
    for start in range(0, idx.shape[0], _CHUNK):
        out[start:start + _CHUNK] = d[idx[start:start + _CHUNK]].mean(axis=1)
    return out


def _quantile(boot: np.ndarray, p) -> np.ndarray:
    """Linear-interpolation quantile (Hyndman-Fan type 7, np.percentile's default).

    Written with scipy.stats.quantile's arithmetic so results match scipy bit for bit.
    """
    y = np.sort(np.asarray(boot, dtype=float))
    n = y.size
    p = np.asarray(p, dtype=float)
    jg = p * n + (1 - p)
    jp1 = jg // 1
    j = jp1 - 1
    g = np.where(j < 0, 0.0, jg % 1)
    j = np.clip(j, 0, n - 1).astype(np.int64)
    jp1 = np.clip(jp1, 0, n - 1).astype(np.int64)
    return (1 - g) * y[j] + g * y[jp1]


def _is_constant(x: np.ndarray) -> bool:
    return bool(x.size > 0 and x.min() == x.max())


def _bca_levels(d: np.ndarray, boot: np.ndarray, alpha: float) -> tuple[float, float]:
    """BCa-adjusted quantile levels for nominal tail ``alpha`` (Efron & Tibshirani 14.3, 15.4).

    Same formula as scipy's ``_bca_interval``; falls back to (alpha, 1 - alpha) when the
    correction is undefined (observed mean outside the bootstrap distribution, or no
    jackknife spread) rather than returning NaN.
    """
    from scipy import special
    n = d.size
    theta_hat = float(np.mean(d))
    tol = _TIE_TOL * max(1.0, abs(theta_hat))
    below = np.count_nonzero(boot < theta_hat - tol)
    at_or_below = np.count_nonzero(boot <= theta_hat + tol)
    pct = (below + at_or_below) / (2 * boot.size)
    z0 = float(special.ndtri(pct))

    theta_i = (np.sum(d) - d) / (n - 1)  # jackknife (leave-one-out) means
    u = (n - 1) * (np.mean(theta_i) - theta_i)
    den = float(np.sum(u ** 2))
    if not (math.isfinite(z0) and den > 0):
        return alpha, 1 - alpha
    a_hat = float(np.sum(u ** 3)) / den ** 1.5 / 6

    z_alpha = float(special.ndtri(alpha))
    num1 = z0 + z_alpha
    num2 = z0 - z_alpha
    lo = float(special.ndtr(z0 + num1 / (1 - a_hat * num1)))
    hi = float(special.ndtr(z0 + num2 / (1 - a_hat * num2)))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return alpha, 1 - alpha
    return lo, hi


def _interval_at(d: np.ndarray, boot: np.ndarray, alpha: float, method: str) -> tuple[float, float]:
    """Two-sided interval with nominal ``alpha`` in each tail, by ``method``."""
    d = np.asarray(d, dtype=float)
    boot = np.asarray(boot, dtype=float)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if _is_constant(d):
        return float(d[0]), float(d[0])
    if _is_constant(boot):
        return float(boot[0]), float(boot[0])
    if method == "bca":
        levels = _bca_levels(d, boot, alpha)
    else:
        levels = (alpha, 1 - alpha)
    lo, hi = _quantile(boot, levels)
    return float(lo), float(hi)


def percentile_interval(boot: np.ndarray, confidence: float) -> tuple[float, float]:
    """Two-sided percentile interval (scipy.stats.bootstrap method='percentile').

    A constant bootstrap distribution gives the point interval (never NaN).
    """
    boot = np.asarray(boot, dtype=float)
    if _is_constant(boot):
        return float(boot[0]), float(boot[0])
    alpha = (1 - confidence) / 2
    lo, hi = _quantile(boot, (alpha, 1 - alpha))
    return float(lo), float(hi)


def bca_interval(d: np.ndarray, boot: np.ndarray, confidence: float) -> tuple[float, float]:
    """Two-sided BCa interval for the mean (scipy.stats.bootstrap method='BCa').

    Corrects the percentile interval for bias and skew; identical arms give (d[0], d[0]).
    """
    return _interval_at(d, boot, (1 - confidence) / 2, "bca")


def lower_bound(d: np.ndarray, boot: np.ndarray, alpha: float, method: str) -> float:
    """One-sided (1 - alpha) lower bound: the alpha quantile (percentile) or BCa endpoint."""
    return _interval_at(d, boot, alpha, method)[0]


# ----------------------------------------------------------------------------------------
# Classical tests and power
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# Paired comparison and registered decision
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paired:
    """Everything reported for "b vs a" on the same questions (d = b - a; see module doc)."""

    n: int
    mean_a: float
    mean_b: float
    diff: float  # mean of d = b - a; positive = b better
    sd_diff: float  # SD of d, ddof 1
    se: float  # sd_diff / sqrt(n)
    ci_low: float  # two-sided (1 - 2*alpha) bootstrap interval
    ci_high: float
    bound: float  # one-sided (1 - alpha) lower bound the registered rule decides on (see RULES)
    up: int  # questions where b > a
    down: int  # questions where b < a
    ties: int
    sign_p: float
    t_low: float  # two-sided (1 - 2*alpha) paired-t interval
    t_high: float
    t_p: float  # two-sided paired t-test p
    mde: float  # paired-t MDE at one-sided alpha, power 0.8, observed sd_diff
    n_for_margin: int | None  # questions needed to detect the margin (None: no margin, or a margin of 0)
    corr: float | None  # Pearson r of a and b (None when either arm is constant)
    method: str
    confidence: float  # 1 - 2*alpha
    resamples: int
    seed: int
    resampling: str = "questions"  # what the bootstrap resamples: "questions", or "clusters" of questions
    units: int = 0  # how many questions, or clusters, it resamples
    rule: str = "bootstrap"  # see RULES
    guard_low: float | None = None  # small-sample t interval (rule "bootstrap_and_t"; see guarded_t_interval)
    guard_high: float | None = None
    upper: float | None = None  # upper end of the interval the rule decides on (equivalence)
    scale: list[int] | None = None  # [lo, hi, K]: the rubric's scale and the samples per question
    tests: list[dict[str, Any]] | None = None  # rule "score": the one-sided tests at the boundaries (score_tests)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    if _is_constant(a) or _is_constant(b):
        return None
    r = float(np.corrcoef(a, b)[0, 1])
    return r if math.isfinite(r) else None


def exact_scores(xs, name: str) -> list:
    """The scores of one arm, refused unless each is exact: an int (a score) or a Fraction (a question's mean over
    its samples). A float is refused, never rounded: 1/3 as a float is not 1/3, and a bound exactly at the margin
    would be decided by the rounding."""
    out = list(xs)
    for i, x in enumerate(out):
        if not score_rule.is_exact(x):
            raise TypeError(f"{name}[{i}] is {x!r} ({type(x).__name__}): paired() takes exact scores (int, or "
                            "Fraction for a mean over K samples), never floats, so an exact tie at the margin is "
                            "decided exactly")
    return out


def score_tests(d: Sequence, margin, alpha: float, scale: Scale, labels: Sequence | None) -> list[dict[str, Any]]:
    """Rule "score": the one-sided score tests (judge.rule) a decision needs, at the registered decimal margin M.

    "lower" at mu0 rejects "mean <= mu0" (-M: non-inferior, 0: superior, +M: not equivalent); "upper" at mu0 rejects
    "mean >= mu0" (+M: the upper side of equivalence, -M: not equivalent). Each records its statistic, degrees of
    freedom, critical value and whether it rejects (the claim). Empty when the units cannot carry a test (fewer
    than two clusters).
    """
    m = decimal(margin) if margin else Fraction(0)
    if m >= scale.range:
        raise ValueError(f"the margin {margin} must be below the rubric's range {scale.range}")
    if labels is not None and len(set(labels)) < 2:
        return []
    mirrored = [-x for x in d]
    out = []
    for side, mu0 in (("lower", -m), ("lower", Fraction(0)), ("lower", m), ("upper", m), ("upper", -m)):
        if any(t["side"] == side and t["boundary"] == float(mu0) for t in out):
            continue  # a margin of 0: one test per side
        s = score_rule.score(d if side == "lower" else mirrored, mu0 if side == "lower" else -mu0, scale, labels)
        c = s.critical(alpha)
        out.append({"id": f"{side} {float(mu0):+g}", "side": side, "boundary": float(mu0), "statistic": s.statistic,
                    "df": s.df, "critical": c, "claims": bool(s.statistic > c)})
    return out


def paired(a, b, *, resamples: int = 10000, seed: int = 0, method: str = "percentile",
           alpha: float = 0.05, margin: float | None = None, clusters: Sequence | None = None,
           rule: str = "bootstrap", scale: Scale | None = None) -> Paired:
    """Compare system b against system a on the same questions (d = b - a, positive = b better).

    ``alpha`` is one-sided: ``bound`` is the one-sided (1 - alpha) lower bound and
    ``ci_low``/``ci_high`` the two-sided (1 - 2*alpha) interval (alpha=0.025 -> 95%). Scores are exact: ints, or
    Fractions for a question's mean over K samples (``exact_scores``; floats are refused). ``clusters`` (one label
    per question; a question without a registered cluster carries a label of its own) makes it a cluster
    bootstrap: whole clusters are resampled. ``rule`` (see RULES) says what ``bound``/``upper`` are; "score" and
    "bootstrap_and_t" need ``scale``, the rubric's scale and K (the differences are checked against it).
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if rule != "bootstrap" and scale is None:
        raise ValueError(f"rule {rule!r} needs the rubric's scale (scale=judge.rule.Scale(lo, hi, samples))")
    if np.ndim(a) != 1 or np.ndim(b) != 1 or len(a) != len(b):
        raise ValueError("a and b must be 1-D arrays of the same length (one score per question)")
    va, ia = _coded(exact_scores(a, "a"))
    vb, ib = _coded(exact_scores(b, "b"))
    a = np.array([float(x) for x in va])[ia]
    b = np.array([float(x) for x in vb])[ib]
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha (one-sided) must be in (0, 0.5)")
    pairs, which = np.unique(ia * len(vb) + ib, return_inverse=True)
    dv = [vb[p % len(vb)] - va[p // len(vb)] for p in pairs.tolist()]  # each distinct (a, b) pair's difference
    ed = [dv[k] for k in which.tolist()]
    d = np.array([float(x) for x in dv])[which]
    _check_n(d)
    if scale is not None:
        score_rule.exact_differences(ed, scale)  # each a difference the rubric's scale and K can produce
    n = d.size
    constant = len(set(dv)) == 1

    if clusters is None:  # one unit per question: tally the few distinct differences, not every question
        merged: dict[Fraction, int] = {}
        for x, c in zip(dv, np.bincount(which).tolist(), strict=False):
            merged[x] = merged.get(x, 0) + c
        kinds, freq = tally([(x, 1) for x in merged])
        freq = [merged[x] for x, _ in kinds]
        n_units = n
        unit_list = None
    else:
        unit_list = units(ed, clusters)
        kinds, freq = tally(unit_list)
        n_units = len(unit_list)
    counts = draw_counts(freq, resamples, seed)
    lo, hi = exact_interval(kinds, freq, counts, decimal(alpha), method)
    ci_low, ci_high = float(lo), float(hi)
    confidence = 1 - 2 * alpha
    t_low, t_high = t_interval(d, confidence)
    sd = 0.0 if constant else float(np.std(d, ddof=1))
    g_low = g_high = None
    tests = None
    bound, upper = ci_low, ci_high
    if rule == "bootstrap_and_t":
        g_low, g_high = guarded_t_interval(d, confidence, guard_step(scale), unit_list)
        bound, upper = min(ci_low, g_low), max(ci_high, g_high)
    elif rule == "score":
        labels = None if clusters is None else list(clusters)
        tests = score_tests(ed, margin, alpha, scale, labels)
        if n_units < 2:  # one cluster: no test, nothing excluded
            bound, upper = float(-scale.range), float(scale.range)
        else:
            bound = score_rule.lower_bound(ed, alpha, scale, labels)
            upper = score_rule.upper_bound(ed, alpha, scale, labels)
    return Paired(
        n=n,
        mean_a=float(sum(x * int(c) for x, c in zip(va, np.bincount(ia), strict=False)) / n),
        mean_b=float(sum(x * int(c) for x, c in zip(vb, np.bincount(ib), strict=False)) / n),
        diff=float(sum(x * int(c) for x, c in zip(dv, np.bincount(which), strict=False)) / n),
        sd_diff=sd,
        se=sd / math.sqrt(n),
        ci_low=ci_low,
        ci_high=ci_high,
        bound=bound,
        up=int(np.count_nonzero(d > 0)),
        down=int(np.count_nonzero(d < 0)),
        ties=int(np.count_nonzero(d == 0)),
        sign_p=sign_test(int(np.count_nonzero(d > 0)), int(np.count_nonzero(d < 0))),
        t_low=t_low,
        t_high=t_high,
        t_p=t_test_p(d),
        mde=mde(sd, n, alpha=alpha, sided=1),
        n_for_margin=None if not margin else n_for_effect(margin, sd, alpha=alpha, sided=1),  # 0: nothing to detect
        corr=_pearson(a, b),
        method=method,
        confidence=confidence,
        resamples=int(resamples),
        seed=int(seed),
        resampling="questions" if clusters is None else "clusters",
        units=n_units,
        rule=rule,
        guard_low=g_low,
        guard_high=g_high,
        upper=upper,
        scale=None if scale is None else [scale.lo, scale.hi, scale.samples],
        tests=tests,
    )


@dataclass(frozen=True)
class Decision:
    """Outcome of the registered test; ``reason`` quotes the numbers it rests on."""

    kind: str
    margin: float
    verdict: str  # non-inferior | superior | not shown | equivalent | not equivalent | inconclusive
    reason: str


_KINDS = ("non_inferiority", "superiority", "equivalence")


def _pct(x: float) -> str:
    return f"{100 * x:.4g}%"


def claims(kind: str, margin: float, low: float, high: float) -> bool:
    """Whether the registered rule makes its claim (non-inferior or better / superior / equivalent) on the
    decision interval [low, high]. Strict: a bound exactly at the margin does not clear it."""
    if kind == "non_inferiority":
        return low > -margin
    if kind == "superiority":
        return low > 0
    return low > -margin and high < margin


def decide(p: Paired, kind: str, margin: float = 0.0) -> Decision:
    """Apply the registered rule to a Paired result.

    * non_inferiority: one-sided (1 - alpha) lower bound > -margin -> "non-inferior";
      if also > 0 -> "superior" (non-inferior and superior); else "not shown".
    * superiority: lower bound > 0 -> "superior", else "not shown" (margin is recorded but
      not used: superiority is against zero).
    * equivalence (TOST): (1 - 2*alpha) interval inside (-margin, +margin) -> "equivalent";
      interval entirely outside it -> "not equivalent"; straddling a margin -> "inconclusive".
    Rule "score" decides by its one-sided tests at the registered boundaries (``Paired.tests``), the bound being
    their inversion, shown; the other rules by the bound, exact rounded once against the registered decimal
    margin, so an exact tie compares equal and does not clear the margin. Non-finite bounds give "inconclusive".
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    margin = float(margin)
    if margin < 0 or (kind == "equivalence" and margin == 0):
        raise ValueError("margin must be >= 0 (and > 0 for equivalence)")
    if p.tests is not None:
        return _decide_by_tests(p, kind, margin)
    one_sided = _pct((1 + p.confidence) / 2)
    two_sided = _pct(p.confidence)
    lb, lo, hi = p.bound, p.bound, p.upper
    if not all(math.isfinite(x) for x in (lb, lo, hi)):
        return Decision(kind, margin, "inconclusive", "interval is not finite")
    which = "" if p.rule != "bootstrap_and_t" else (f" (the lower of the {p.resampling} bootstrap {p.ci_low:+.4f} "
                                                    f"and the small-sample t {p.guard_low:+.4f})")
    if kind == "non_inferiority":
        if claims("superiority", margin, lb, hi):
            verdict = "superior"
            reason = (f"one-sided {one_sided} lower bound {lb:+.4f}{which} > -{margin:.4g} and > 0: "
                      f"non-inferior and superior")
        elif claims(kind, margin, lb, hi):
            verdict = "non-inferior"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f}{which} > -{margin:.4g}: non-inferior"
        else:
            verdict = "not shown"
            reason = (f"one-sided {one_sided} lower bound {lb:+.4f}{which} <= -{margin:.4g}: "
                      f"non-inferiority not shown")
    elif kind == "superiority":
        if claims(kind, margin, lb, hi):
            verdict = "superior"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f}{which} > 0: superior"
        else:
            verdict = "not shown"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f}{which} <= 0: superiority not shown"
    else:
        span = f"{two_sided} interval [{lo:+.4f}, {hi:+.4f}]"
        if claims(kind, margin, lo, hi):
            verdict = "equivalent"
            reason = f"{span} inside (-{margin:.4g}, +{margin:.4g}): equivalent (TOST)"
        elif lo >= margin or hi <= -margin:
            verdict = "not equivalent"
            reason = f"{span} entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
        else:
            verdict = "inconclusive"
            reason = f"{span} crosses a margin of +/-{margin:.4g}: equivalence not shown"
    return Decision(kind, margin, verdict, reason)


def score_test_at(p: Paired, side: str, boundary: float) -> dict[str, Any]:
    """Rule "score": the recorded one-sided test on ``side`` ("lower"/"upper") at ``boundary``."""
    for t in p.tests or ():
        if t["side"] == side and t["boundary"] == boundary:
            return t
    raise ValueError(f"no {side} score test at {boundary:+g}: the comparison was computed with another margin")


def _decide_by_tests(p: Paired, kind: str, margin: float) -> Decision:
    if not p.tests:
        return Decision(kind, margin, "inconclusive", f"{p.units} unit(s) of questions: the score test needs at least "
                                                      "two")
    lo, hi, k = p.scale
    where = f"score test on the {lo}–{hi} scale" + (f", K = {k}" if k > 1 else "")
    one_sided = _pct((1 + p.confidence) / 2)

    def line(t: dict) -> str:
        return f"T = {t['statistic']:+.3f} {'>' if t['claims'] else '<='} {t['critical']:.3f}"

    if kind in ("non_inferiority", "superiority"):
        sup, ni = score_test_at(p, "lower", 0.0), score_test_at(p, "lower", -margin)
        bound = f"one-sided {one_sided} lower bound {p.bound:+.4f} ({where}"
        if sup["claims"]:
            verdict = "superior"
            reason = (f"{bound}; at 0: {line(sup)}): superior" if kind == "superiority" else
                      f"{bound}; at 0: {line(sup)}): non-inferior and superior")
        elif kind == "non_inferiority" and ni["claims"]:
            verdict, reason = "non-inferior", f"{bound}; at -{margin:.4g}: {line(ni)}): non-inferior"
        elif kind == "non_inferiority":
            verdict = "not shown"
            reason = f"{bound}; at -{margin:.4g}: {line(ni)}): non-inferiority not shown"
        else:
            verdict, reason = "not shown", f"{bound}; at 0: {line(sup)}): superiority not shown"
        return Decision(kind, margin, verdict, reason)
    low, high = score_test_at(p, "lower", -margin), score_test_at(p, "upper", margin)
    span = (f"{_pct(p.confidence)} interval [{p.bound:+.4f}, {p.upper:+.4f}] ({where}; above -{margin:.4g}: "
            f"{line(low)}, below +{margin:.4g}: {line(high)})")
    if low["claims"] and high["claims"]:
        verdict, reason = "equivalent", f"{span}: equivalent (two one-sided tests)"
    elif score_test_at(p, "lower", margin)["claims"] or score_test_at(p, "upper", -margin)["claims"]:
        verdict, reason = "not equivalent", f"{span}: entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
    else:
        verdict, reason = "inconclusive", f"{span}: equivalence not shown"
    return Decision(kind, margin, verdict, reason)


CLAIMS = {"non_inferiority": ("non-inferior", "superior"), "superiority": ("superior",),
          "equivalence": ("equivalent",)}  # the verdicts that are the claim a calibration measures


@dataclass(frozen=True)
class Calibration:
    """How often the registered rule makes its claim on data simulated at the boundary of its hypothesis."""

    boundary: float  # the true effect simulated: -margin (non-inferiority), 0 (superiority), -/+margin (equivalence)
    sims: int
    claims: int
    rate: float  # claims / sims: the rule's false-claim rate at the boundary, for data shaped like these
    ceiling: float  # registered: above it a claim is downgraded to inconclusive
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


@dataclass(frozen=True)
class Decided:
    """One registered hypothesis decided: what the rule says on these data, its calibration, and the verdict after
    the registered guards (too few registered clusters, a calibration above the ceiling)."""

    result: Paired
    calibration: Calibration
    clusters: int | None  # registered clusters among the paired questions; None: none of them has a cluster
    statistic: Decision  # what the rule alone says
    verdict: str
    reason: str


def decision(a, b, *, kind: str, margin: float, alpha: float, scale: Scale, cluster_of: Sequence | None,
             settings) -> Decided:
    """Decide one registered hypothesis on its paired scores (a: reference arm, b: arm under test, exact).

    ``scale``: the rubric's scale and K; ``cluster_of``: each question's registered cluster (None or "" for a
    question without one; None for the whole list when the set declares none); ``settings``: the registered
    [analysis] (resamples, method, seed, rule, min_clusters, calibration_sims, calibration_ceiling). A question
    without a cluster in a clustered set is a unit of its own for resampling and variance, but only registered
    clusters count towards ``min_clusters`` (``judge.rule.cluster_units``).
    """
    labels, registered = None, None
    if cluster_of is not None and any(c not in (None, "") for c in cluster_of):
        labels, registered = score_rule.cluster_units(cluster_of)
    p = paired(a, b, resamples=settings.resamples, seed=settings.seed, method=settings.method, alpha=alpha,
               margin=margin, clusters=labels, rule=settings.rule, scale=scale)
    ceiling = settings.calibration_ceiling if settings.calibration_ceiling is not None else 2 * alpha
    cal = calibrate(a, b, kind, margin, alpha=alpha, method=settings.method, resamples=settings.resamples,
                    rule=settings.rule, sims=settings.calibration_sims, seed=settings.seed, ceiling=ceiling,
                    clusters=labels, scale=scale)
    d = decide(p, kind, margin)
    verdict, reason = d.verdict, d.reason
    if labels is not None and registered < settings.min_clusters:
        loose = p.units - registered
        why = (f" ({loose} question(s) without a cluster are units of their own, not clusters)" if loose else "")
        verdict = "inconclusive"
        reason = (f"only {registered} cluster(s) of questions{why}, fewer than the registered minimum of "
                  f"{settings.min_clusters} for a clustered decision; the statistic alone would say: {d.verdict}")
    elif d.verdict in CLAIMS[kind] and cal.rate > cal.ceiling:
        verdict = "inconclusive"
        reason = (f"{d.reason}; but the rule's false-claim rate simulated at the boundary is {cal.rate:.3f} "
                  f"({cal.claims} of {cal.sims} simulated data sets), above the registered ceiling "
                  f"{cal.ceiling:.3f}: inconclusive")
    return Decided(result=p, calibration=cal, clusters=registered, statistic=d, verdict=verdict, reason=reason)


# ----------------------------------------------------------------------------------------
# Agreement between readers/judges
# ----------------------------------------------------------------------------------------


def cohen_kappa(a_labels, b_labels, weights: str | None = None,
                labels: Sequence | None = None) -> float:
    """Cohen's kappa between two raters: agreement beyond chance.

    ``weights`` None (unweighted), "linear" or "quadratic" (disagreement |i-j| or (i-j)^2 by
    category position). ``labels`` fixes the category order (default: sorted union), which
    matters for weighted kappa when a category is unused. NaN when chance agreement is
    perfect (both raters used one and the same category): kappa is undefined there.
    """
    a_labels = list(a_labels)
    b_labels = list(b_labels)
    if len(a_labels) != len(b_labels) or not a_labels:
        raise ValueError("need two equally long, non-empty label sequences")
    cats = list(labels) if labels is not None else sorted(set(a_labels) | set(b_labels))
    w = _kappa_weights(len(cats), weights)
    pos = {c: i for i, c in enumerate(cats)}
    outside = [x for x in (*a_labels, *b_labels) if x not in pos]
    if outside:
        raise ValueError(f"cohen_kappa: rating {outside[0]!r} is not one of the labels {cats}")
    k = len(cats)
    codes = np.array([pos[x] for x in a_labels]) * k + np.array([pos[x] for x in b_labels])
    return float(kappa_from_tables(np.bincount(codes, minlength=k * k).reshape(1, k, k), w)[0])


def _kappa_weights(k: int, weights: str | None) -> np.ndarray:
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j).astype(float)
    if weights == "quadratic":
        return ((i - j) ** 2).astype(float)
    raise ValueError("weights must be None, 'linear' or 'quadratic'")


def kappa_from_tables(tables: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each k x k contingency table in ``tables`` (shape (m, k, k)); NaN where undefined."""
    t = tables / tables.sum(axis=(1, 2), keepdims=True)
    expected = t.sum(2)[:, :, None] * t.sum(1)[:, None, :]
    den = np.sum(w * expected, axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den == 0, np.nan, 1 - np.sum(w * t, axis=(1, 2)) / den)


def kappa_bootstrap(a_labels, b_labels, labels: Sequence, weights: str | None, resamples: int,
                    seed: int) -> np.ndarray:
    """Cohen's kappa on ``resamples`` bootstrap resamples of the rated items (vectorised; NaN where undefined).

    The resample indices are ``default_rng(seed).integers(0, n, n)`` drawn once per resample, in order.
    """
    pos = {c: i for i, c in enumerate(labels)}
    k, n = len(labels), len(a_labels)
    codes = np.array([pos[x] for x in a_labels]) * k + np.array([pos[x] for x in b_labels])
    rng = np.random.default_rng(seed)
    w = _kappa_weights(k, weights)
    out = np.empty(resamples)
    step = max(1, 2_000_000 // max(n, 1))  # resamples per batch: bounds memory at 20,000 items
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        idx = np.stack([rng.integers(0, n, n) for _ in range(rows)])
        block = codes[idx] + (np.arange(rows) * k * k)[:, None]
        tables = np.bincount(block.ravel(), minlength=rows * k * k).reshape(rows, k, k)
        out[start:start + rows] = kappa_from_tables(tables, w)
    return out


def krippendorff_alpha(matrix, level: str = "nominal") -> float:
    """Krippendorff's alpha via the coincidence matrix (Krippendorff 2011).

    ``matrix`` is raters x units; NaN/None marks a missing rating, units with fewer than two
    ratings are dropped. ``level`` "nominal", "ordinal" or "interval". Handles any number of
    raters and missing data, unlike kappa. NaN when only one value occurs (undefined).
    """
    m = np.asarray(np.array(matrix, dtype=object), dtype=float)
    if m.ndim != 2:
        raise ValueError("matrix must be 2-D: raters x units")
    values = np.unique(m[~np.isnan(m)])
    if values.size < 2:
        return float("nan")
    k = values.size
    counts = np.zeros((m.shape[1], k))  # units x values
    for row in m:
        ok = ~np.isnan(row)
        counts[np.nonzero(ok)[0], np.searchsorted(values, row[ok])] += 1
    m_u = counts.sum(1)
    counts, m_u = counts[m_u >= 2], m_u[m_u >= 2]
    if counts.size == 0:
        return float("nan")
    pairs = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(k)[None]
    o = np.sum(pairs / (m_u - 1)[:, None, None], axis=0)
    n_c = o.sum(1)
    n = n_c.sum()
    c, kk = np.indices((k, k))
    if level == "nominal":
        delta2 = (c != kk).astype(float)
    elif level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        lo, hi = np.minimum(c, kk), np.maximum(c, kk)
        between = cum[hi + 1] - cum[lo]  # sum of n_g for g = lo..hi
        delta2 = (between - (n_c[lo] + n_c[hi]) / 2) ** 2
    elif level == "interval":
        delta2 = (values[c] - values[kk]) ** 2
    else:
        raise ValueError("level must be 'nominal', 'ordinal' or 'interval'")
    d_e = float(np.sum(np.outer(n_c, n_c) * delta2))
    if d_e == 0:
        return float("nan")
    return float(1 - (n - 1) * float(np.sum(o * delta2)) / d_e)


# ========================================================================================
# INDEPENDENT CHECK PATH (adversarial recomputation)
#
# Recomputes paired() from scratch with plain Python: explicit loops, `statistics`, hand
# sorting/quantiles, math.comb for the sign test, a closed-form Student-t CDF, NormalDist
# for z, exact Fractions for every resample mean. It shares NO helper with the code above; only the
# resample counts are shared, so the two paths can be compared (bit for bit where exact, else to 1e-9).
# ========================================================================================

_ND = statistics.NormalDist()


def _chk_t_abs_cdf(t: float, nu: int) -> float:
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


def _chk_t_crit(q: float, nu: int) -> float:
    """t with P(T <= t) = q (q > 0.5) by bisection on the closed-form CDF."""
    target = 2 * q - 1  # P(|T| <= t)
    lo, hi = 0.0, 1.0
    while _chk_t_abs_cdf(hi, nu) < target:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _chk_t_abs_cdf(mid, nu) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15 * max(1.0, hi):
            break
    return (lo + hi) / 2


def _chk_sign_p(up: int, down: int) -> float:
    n = up + down
    if n == 0:
        return 1.0
    k = min(up, down)
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


def _chk_exact(x) -> Fraction:
    return x if isinstance(x, Fraction) else Fraction(int(x)) if float(x).is_integer() else Fraction(float(x))


def _chk_pick(rows: list[list[int]], nums: list[int], sizes: list[int], scale: int, p: Fraction) -> Fraction:
    """Exact type-7 quantile of the resample means at level p, textbook form h = (B - 1) p."""
    means = sorted(Fraction(sum(c * x for c, x in zip(r, nums, strict=False)),
                            sum(c * m for c, m in zip(r, sizes, strict=False)) * scale)
                   for r in rows)
    h = (len(means) - 1) * p
    lo = math.floor(h)
    if lo >= len(means) - 1:
        return means[-1]
    if lo < 0:
        return means[0]
    return means[lo] + (h - lo) * (means[lo + 1] - means[lo])


def _chk_t_interval(d: list[float], alpha: float) -> tuple[float, float]:
    if min(d) == max(d):
        return d[0], d[0]
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
    crit = _chk_t_crit(1 - alpha, len(d) - 1)
    return mean - crit * se, mean + crit * se


def _chk_cr1_interval(groups: list[list], alpha: float, step: float) -> tuple[float, float]:
    """The clustered guard by hand: CR1 t interval of the mean over the units plus a pseudo-unit of -step and one
    of +step, each of the mean unit size; G + 1 degrees of freedom (G units)."""
    size = sum(g[1] for g in groups) / len(groups)
    pairs = [(float(g[0]), float(g[1])) for g in groups] + [(-step * size, size), (step * size, size)]
    total = math.fsum(m for _, m in pairs)
    mean = math.fsum(s for s, _ in pairs) / total
    cr1 = math.fsum((s - m * mean) ** 2 for s, m in pairs)
    half = _chk_t_crit(1 - alpha, len(pairs) - 1) * math.sqrt(len(pairs) / (len(pairs) - 1) * cr1) / total
    return mean - half, mean + half


def check_paired(a, b, resamples: tuple, method: str, alpha: float, margin: float | None = None,
                 clusters: Sequence | None = None, rule: str = "bootstrap", step: float = 1.0) -> dict:
    """Independent recomputation of paired() on the same resamples (plain Python, exact Fractions).

    `resamples` is (kinds, counts) from resample_counts(...). The check groups the differences into
    questions or clusters itself and refuses resamples that do not describe them. Returns the fields of
    Paired.to_dict() except the power figures (mde, n_for_margin), which only the main path computes, and, for
    rule "score", the score test's bound, upper end and tests (judge.score_check recomputes those); ``step`` is
    the guard's pseudo-observation (half the rubric's range) for rule "bootstrap_and_t".
    """
    ea = [_chk_exact(x) for x in a]
    eb = [_chk_exact(x) for x in b]
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
        lo, hi = (_chk_pick(rows, nums, sizes, scale, p) for p in levels)
    ci_low, ci_high = float(lo), float(hi)
    bound, upper, g_low, g_high = ci_low, ci_high, None, None
    if rule == "bootstrap_and_t":
        g_low, g_high = (_chk_t_interval(d + [-float(step), float(step)], alpha) if clusters is None else
                         _chk_cr1_interval(list(groups.values()), alpha, float(step)))
        bound, upper = min(ci_low, g_low), max(ci_high, g_high)

    mean_d = float(sum(ed) / n)
    sd = 0.0 if constant else statistics.stdev(d)
    se = sd / math.sqrt(n)
    up = sum(1 for x in d if x > 0)
    down = sum(1 for x in d if x < 0)
    t_low, t_high = _chk_t_interval(d, alpha)
    if constant:
        t_p = 1.0 if d[0] == 0 else 0.0
    else:
        t_p = 1.0 - _chk_t_abs_cdf(abs(mean_d / se), n - 1)
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
        "bound": bound,
        "upper": upper,
        "guard_low": g_low,
        "guard_high": g_high,
        "up": up,
        "down": down,
        "ties": n - up - down,
        "sign_p": _chk_sign_p(up, down),
        "t_low": t_low,
        "t_high": t_high,
        "t_p": t_p,
        "corr": corr,
        "method": method,
        "confidence": 1 - 2 * alpha,
        "resamples": len(rows),
        "resampling": "questions" if clusters is None else "clusters",
        "units": len(groups),
        "rule": rule,
    }
