"""Paired statistics for comparing two systems scored on the same questions.

Conventions (read these before using any number this module returns)
--------------------------------------------------------------------
* Direction: every paired quantity is about ``d = b - a`` per question, i.e. "b vs a".
  A positive difference means system **b** scored higher than system **a**. Pass the
  baseline as ``a`` and the candidate as ``b``.
* ``alpha`` is ONE-SIDED. The registered decision (non-inferiority / superiority) uses the
  one-sided (1 - alpha) lower bound of the mean difference, ``Paired.bound``.
* The reported interval ``ci_low``/``ci_high`` (and ``t_low``/``t_high``) is the TWO-SIDED
  (1 - 2*alpha) interval, whose lower end equals that bound exactly. So:
    - ``alpha=0.025`` -> two-sided 95% interval (regulatory convention: FDA 2016, CONSORT 2012);
    - ``alpha=0.05``  -> two-sided 90% interval, lower end = one-sided 95% lower bound.
  Equivalence is TOST with the same (1 - 2*alpha) interval.
* Power figures (``Paired.mde``, ``Paired.n_for_margin``) use the same one-sided alpha
  (= two-sided 2*alpha) and power 0.8, with the normal approximation and the observed SD of
  the differences.
* Bootstrap intervals follow ``scipy.stats.bootstrap`` (percentile and BCa, "linear" quantile,
  i.e. np.percentile's default) so they can be checked against scipy on the same bootstrap
  distribution. Two deliberate, documented departures:
    - when all differences are equal (identical arms, zero variance) every interval is the
      point ``(d[0], d[0])`` instead of scipy's NaN;
    - in BCa's bias correction a bootstrap mean within ``_TIE_TOL`` (relative 1e-12) of the
      observed mean counts as a tie, so float noise in summation order cannot move z0.
* The bootstrap uses ``resample_counts`` so the independent check (``check_paired``, at the
  end of this module) can be run on exactly the same resamples and compared to 1e-9.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
from scipy import special, stats

__all__ = [
    "resample_indices",
    "resample_counts",
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
    "cohen_kappa",
    "krippendorff_alpha",
    "check_paired",
]

_METHODS = ("percentile", "bca")
_TIE_TOL = 1e-12  # relative tolerance for "bootstrap mean equals observed mean" in BCa
_CHUNK = 1024  # resample rows per batch in bootstrap_means (bounds memory)


# ----------------------------------------------------------------------------------------
# Bootstrap building blocks (main, vectorised path)
# ----------------------------------------------------------------------------------------


def resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap row indices, shape (resamples, n).

    Materialised once so the main path and the independent check use identical resamples.
    """
    if n < 1 or resamples < 1:
        raise ValueError("need n >= 1 and resamples >= 1")
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def resample_counts(d, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap resamples as counts of each distinct value: (values[k], counts[resamples, k]).

    The same distribution as resampling question indices, but judge-score differences take a
    handful of distinct values, so this draws resamples x k numbers instead of resamples x n:
    the main reason paired() is several times faster than scipy.stats.bootstrap. The check
    path recomputes every resample mean from these counts with its own loop.
    """
    d = np.asarray(d, dtype=float)
    values, freq = np.unique(d, return_counts=True)
    counts = np.random.default_rng(seed).multinomial(d.size, freq / d.size, size=resamples)
    return values, counts


def counts_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mean of each resample given as counts per distinct value."""
    return counts @ values / counts[0].sum()


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
    d = np.asarray(d, dtype=float)
    _check_n(d)
    if _is_constant(d):
        return float(d[0]), float(d[0])
    mean = float(np.mean(d))
    se = float(np.std(d, ddof=1)) / math.sqrt(d.size)
    crit = float(stats.t.ppf((1 + confidence) / 2, d.size - 1))
    return mean - crit * se, mean + crit * se


def t_test_p(d: np.ndarray) -> float:
    """Two-sided paired t-test p for mean difference 0.

    Zero SD: p = 1.0 if the (common) difference is 0, else 0.0 (no noise, any shift is real).
    """
    d = np.asarray(d, dtype=float)
    _check_n(d)
    if _is_constant(d):
        return 1.0 if d[0] == 0 else 0.0
    mean = float(np.mean(d))
    se = float(np.std(d, ddof=1)) / math.sqrt(d.size)
    return float(2 * stats.t.sf(abs(mean / se), d.size - 1))


def _z_sum(alpha: float, power: float, sided: int) -> float:
    if sided not in (1, 2):
        raise ValueError("sided must be 1 or 2")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError("alpha and power must be in (0, 1)")
    return float(stats.norm.ppf(1 - alpha / sided) + stats.norm.ppf(power))


def mde(sd: float, n: int, alpha: float = 0.05, power: float = 0.8, sided: int = 2) -> float:
    """Minimum detectable mean difference, normal approximation: (z_{1-a/s} + z_pow) sd / sqrt(n).

    Says how small an effect this many questions can resolve. sd == 0 gives 0.0 (any
    shift is detectable when differences do not vary).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    if sd < 0:
        raise ValueError("sd must be >= 0")
    return _z_sum(alpha, power, sided) * float(sd) / math.sqrt(n)


def n_for_effect(effect: float, sd: float, alpha: float = 0.05, power: float = 0.8,
                 sided: int = 2) -> int:
    """Questions needed to detect ``|effect|`` (normal approximation, rounded up).

    sd == 0 gives 1 (one question already shows a noise-free shift); effect == 0 is an error.
    """
    if effect == 0:
        raise ValueError("effect must be non-zero")
    if sd < 0:
        raise ValueError("sd must be >= 0")
    if sd == 0:
        return 1
    n = (_z_sum(alpha, power, sided) * float(sd) / abs(float(effect))) ** 2
    # guard against 49.999999999 -> 50 style float noise before the ceiling
    return max(1, math.ceil(n - 1e-9))


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
    ci_low: float  # two-sided (1 - 2*alpha) bootstrap interval; ci_low == bound
    ci_high: float
    bound: float  # one-sided (1 - alpha) bootstrap lower bound (the registered decision)
    up: int  # questions where b > a
    down: int  # questions where b < a
    ties: int
    sign_p: float
    t_low: float  # two-sided (1 - 2*alpha) paired-t interval
    t_high: float
    t_p: float  # two-sided paired t-test p
    mde: float  # normal-approx MDE at one-sided alpha, power 0.8, observed sd_diff
    n_for_margin: int | None  # questions needed to detect the margin (None: no margin, or a margin of 0)
    corr: float | None  # Pearson r of a and b (None when either arm is constant)
    method: str
    confidence: float  # 1 - 2*alpha
    resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    if _is_constant(a) or _is_constant(b):
        return None
    r = float(np.corrcoef(a, b)[0, 1])
    return r if math.isfinite(r) else None


def paired(a, b, *, resamples: int = 10000, seed: int = 0, method: str = "percentile",
           alpha: float = 0.05, margin: float | None = None) -> Paired:
    """Compare system b against system a on the same questions (d = b - a, positive = b better).

    ``alpha`` is one-sided: ``bound`` is the one-sided (1 - alpha) lower bound and
    ``ci_low``/``ci_high`` the two-sided (1 - 2*alpha) interval (alpha=0.025 -> 95%).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("a and b must be 1-D arrays of the same length (one score per question)")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("scores must be finite (drop or impute missing questions first)")
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha (one-sided) must be in (0, 0.5)")
    d = b - a
    _check_n(d)
    n = d.size
    constant = _is_constant(d)

    boot = counts_means(*resample_counts(d, resamples, seed))
    ci_low, ci_high = _interval_at(d, boot, alpha, method)
    confidence = 1 - 2 * alpha
    t_low, t_high = t_interval(d, confidence)
    sd = 0.0 if constant else float(np.std(d, ddof=1))
    return Paired(
        n=n,
        mean_a=float(np.mean(a)),
        mean_b=float(np.mean(b)),
        diff=float(d[0]) if constant else float(np.mean(d)),
        sd_diff=sd,
        se=sd / math.sqrt(n),
        ci_low=ci_low,
        ci_high=ci_high,
        bound=ci_low,
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


def decide(p: Paired, kind: str, margin: float = 0.0) -> Decision:
    """Apply the registered rule to a Paired result.

    * non_inferiority: one-sided (1 - alpha) lower bound > -margin -> "non-inferior";
      if also > 0 -> "superior" (non-inferior and superior); else "not shown".
    * superiority: lower bound > 0 -> "superior", else "not shown" (margin is recorded but
      not used: superiority is against zero).
    * equivalence (TOST): (1 - 2*alpha) interval inside (-margin, +margin) -> "equivalent";
      interval entirely outside it -> "not equivalent"; straddling a margin -> "inconclusive".
    Non-finite bounds give "inconclusive".
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    margin = float(margin)
    if margin < 0 or (kind == "equivalence" and margin == 0):
        raise ValueError("margin must be >= 0 (and > 0 for equivalence)")
    one_sided = _pct((1 + p.confidence) / 2)
    two_sided = _pct(p.confidence)
    lb, lo, hi = p.bound, p.ci_low, p.ci_high
    if not all(math.isfinite(x) for x in (lb, lo, hi)):
        return Decision(kind, margin, "inconclusive", "interval is not finite")

    if kind == "non_inferiority":
        if lb > 0:
            verdict = "superior"
            reason = (f"one-sided {one_sided} lower bound {lb:+.4f} > -{margin:.4g} and > 0: "
                      f"non-inferior and superior")
        elif lb > -margin:
            verdict = "non-inferior"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f} > -{margin:.4g}: non-inferior"
        else:
            verdict = "not shown"
            reason = (f"one-sided {one_sided} lower bound {lb:+.4f} <= -{margin:.4g}: "
                      f"non-inferiority not shown")
    elif kind == "superiority":
        if lb > 0:
            verdict = "superior"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f} > 0: superior"
        else:
            verdict = "not shown"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f} <= 0: superiority not shown"
    else:
        span = f"{two_sided} interval [{lo:+.4f}, {hi:+.4f}]"
        if lo > -margin and hi < margin:
            verdict = "equivalent"
            reason = f"{span} inside (-{margin:.4g}, +{margin:.4g}): equivalent (TOST)"
        elif lo >= margin or hi <= -margin:
            verdict = "not equivalent"
            reason = f"{span} entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
        else:
            verdict = "inconclusive"
            reason = f"{span} crosses a margin of +/-{margin:.4g}: equivalence not shown"
    return Decision(kind, margin, verdict, reason)


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
    pos = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    table = np.zeros((k, k))
    np.add.at(table, (np.array([pos[x] for x in a_labels]), np.array([pos[x] for x in b_labels])), 1)
    table /= table.sum()
    expected = np.outer(table.sum(1), table.sum(0))
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    elif weights == "quadratic":
        w = ((i - j) ** 2).astype(float)
    else:
        raise ValueError("weights must be None, 'linear' or 'quadratic'")
    den = float(np.sum(w * expected))
    if den == 0:
        return float("nan")
    return float(1 - np.sum(w * table) / den)


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
# for z. It shares NO helper with the code above; only the resample indices are shared
# so the two paths can be compared to 1e-9.
# ========================================================================================

_ND = statistics.NormalDist()


def _chk_quantile(sorted_vals: list[float], p: float) -> float:
    """Type-7 linear interpolation quantile (np.percentile default) on a sorted list."""
    n = len(sorted_vals)
    h = (n - 1) * p
    lo = int(math.floor(h))
    if lo >= n - 1:
        return sorted_vals[-1]
    if lo < 0:
        return sorted_vals[0]
    frac = h - lo
    return sorted_vals[lo] + frac * (sorted_vals[lo + 1] - sorted_vals[lo])


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


def _chk_interval(d: list[float], boot: list[float], alpha: float, method: str) -> tuple[float, float]:
    if min(d) == max(d):
        return d[0], d[0]
    srt = sorted(boot)
    if srt[0] == srt[-1]:
        return srt[0], srt[0]
    lev_lo, lev_hi = alpha, 1 - alpha
    if method == "bca":
        n = len(d)
        theta = statistics.fmean(d)
        tol = 1e-12 * max(1.0, abs(theta))
        score = 0
        for v in boot:
            if v < theta - tol:
                score += 2
            elif v <= theta + tol:
                score += 1
        pct = score / (2 * len(boot))
        jack = [statistics.fmean(d[:i] + d[i + 1:]) for i in range(n)]
        jbar = statistics.fmean(jack)
        u = [(n - 1) * (jbar - x) for x in jack]
        s2 = math.fsum(x * x for x in u)
        if 0 < pct < 1 and s2 > 0:
            z0 = _ND.inv_cdf(pct)
            acc = math.fsum(x ** 3 for x in u) / (6 * s2 ** 1.5)
            za = _ND.inv_cdf(alpha)
            adj = []
            for z in (za, -za):
                num = z0 + z
                den = 1 - acc * num
                adj.append(_ND.cdf(z0 + num / den) if den != 0 else float("nan"))
            if all(math.isfinite(x) for x in adj):
                lev_lo, lev_hi = adj
    return _chk_quantile(srt, lev_lo), _chk_quantile(srt, lev_hi)


def check_paired(a, b, resamples: tuple, method: str, alpha: float, margin: float | None = None) -> dict:
    """Independent recomputation of paired() on the same resamples (plain Python).

    `resamples` is (values, counts) from resample_counts(b - a, ...). The check derives the
    distinct differences itself and refuses resamples that do not describe them.
    Returns the numeric fields of Paired.to_dict() (plus method/confidence/resamples).
    """
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    n = len(a)
    d = [y - x for x, y in zip(a, b)]
    constant = min(d) == max(d)
    values = [float(v) for v in resamples[0]]
    if values != sorted(set(d)):
        raise ValueError("resamples do not belong to these differences")
    rows = [list(map(int, r)) for r in resamples[1].tolist()]

    boot = []
    for r in rows:
        if sum(r) != n:
            raise ValueError("a resample does not have n draws")
        boot.append(math.fsum(c * v for c, v in zip(r, values)) / n)
    ci_low, ci_high = _chk_interval(d, boot, alpha, method)

    mean_d = d[0] if constant else statistics.fmean(d)
    sd = 0.0 if constant else statistics.stdev(d)
    se = sd / math.sqrt(n)
    up = sum(1 for x in d if x > 0)
    down = sum(1 for x in d if x < 0)
    if constant:
        t_low = t_high = d[0]
        t_p = 1.0 if d[0] == 0 else 0.0
    else:
        crit = _chk_t_crit(1 - alpha, n - 1)
        t_low, t_high = mean_d - crit * se, mean_d + crit * se
        t_p = 1.0 - _chk_t_abs_cdf(abs(mean_d / se), n - 1)
    zsum = _ND.inv_cdf(1 - alpha) + _ND.inv_cdf(0.8)
    n_margin = None
    if margin:  # None or 0: no margin to detect
        n_margin = 1 if sd == 0 else max(1, math.ceil((zsum * sd / abs(margin)) ** 2 - 1e-9))
    try:
        corr = statistics.correlation(a, b)
    except statistics.StatisticsError:
        corr = None
    return {
        "n": n,
        "mean_a": statistics.fmean(a),
        "mean_b": statistics.fmean(b),
        "diff": mean_d,
        "sd_diff": sd,
        "se": se,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "bound": ci_low,
        "up": up,
        "down": down,
        "ties": n - up - down,
        "sign_p": _chk_sign_p(up, down),
        "t_low": t_low,
        "t_high": t_high,
        "t_p": t_p,
        "mde": zsum * sd / math.sqrt(n),
        "n_for_margin": n_margin,
        "corr": corr,
        "method": method,
        "confidence": 1 - 2 * alpha,
        "resamples": len(rows),
    }
