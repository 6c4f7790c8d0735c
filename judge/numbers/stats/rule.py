"""The scale-anchored score rule: how a registered hypothesis is decided on paired judge-score differences.

Why not a bootstrap or a t interval: judge differences are mostly ties, and a sample that happens to show no
large loss looks certain to both (a percentile bootstrap can never go below the smallest observed difference;
a t interval's spread shrinks with the losses it did not see). The rule asks instead how likely the data are
under the most likely distribution *at the boundary* that is allowed to put weight on the worst difference the
rubric permits (the full range R = hi - lo of the scale, a loss of every point), observed or not. For paired
binary scores this is Tango's score test (Tango 1998); on any scale it is the same test in units of R, so the
verdict does not change when a rubric's scale and the margin are multiplied together.

Formulas (d_i the per-question differences b - a, n questions, mu0 the boundary: -M for non-inferiority, 0 for
superiority; the upper side of equivalence is the same test on -d):

    psi_i = d_i - mu0;  worst = -R - mu0 (< 0)
    lambda in [0, 1/(R + mu0)] solves sum_i psi_i / (1 + lambda psi_i) = 0, or is 1/(R + mu0) when the left side
      is still >= 0 there (the data cannot reach mu0 without weight on the worst value)
    p_i = 1 / (n (1 + lambda psi_i)),  p_worst = 1 - sum_i p_i        (the boundary distribution: mean mu0)
    V0 = sum_i p_i psi_i^2 + p_worst worst^2,  g = (sum_i p_i psi_i^3 + p_worst worst^3) / V0^1.5
    independent questions (N = n):
      T = sum_i psi_i / sqrt(n V0 n / (n - 1)),  df = n - 1
    clustered questions (N = G clusters; e_g = sum_{i in g} (d_i - mean d), CR1 = sum_g e_g^2):
      T = sum_i psi_i / sqrt(max(n V0, CR1) G / (G - 1))
      df = G - 1, or min(G - 1, 2 CR1^2 / sum_g e_g^4) (at least 1) when CR1 > n V0: a few clusters that carry
        all the spread leave their variance with few degrees of freedom (Satterthwaite)
    c = t_{df, 1 - alpha} + max(0, g (t^2 - 1) / (6 sqrt N))   (Cornish-Fisher, raised only: rare large wins
                                                                 skew the sum to the right)
    claim (the one-sided bound clears mu0) iff T > c

With every question tied, T = sqrt((n - 1) M / (R - M)): a claim needs n > 1 + t^2 (R - M) / M questions, 77 for
a margin of 5 % of the scale. No rule can do much better: the boundary distribution with weight M/R on -R and the
rest tied gives n ties with probability (1 - M/R)^n, so a rule that claims on n ties has at least that false-claim
rate there (above 1.2 alpha = 0.03 for n < 69 at 5 %).
Inputs are exact (int or Fraction); floats are refused, so an exact tie is never decided by float rounding. The
arithmetic after the exact sums is float, and deterministic. BENCHMARKS.md (type-I grid) measures the rule.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, Sequence

from registration.vocabulary import KINDS

__all__ = ["Scale", "Score", "exact_differences", "cluster_units", "score", "claims", "lower_bound", "upper_bound",
           "is_exact"]

_ITERATIONS = 200  # bisection steps: far past float resolution, and a fixed count keeps the result deterministic


@dataclass(frozen=True)
class Scale:
    """A rubric's scale (lowest and highest score) and K, the samples averaged per question."""

    lo: int
    hi: int
    samples: int = 1

    def __post_init__(self) -> None:
        for name in ("lo", "hi", "samples"):
            if type(getattr(self, name)) is not int:
                raise TypeError(f"Scale.{name} must be an int, got {getattr(self, name)!r}")
        if self.hi <= self.lo:
            raise ValueError(f"Scale: hi ({self.hi}) must be above lo ({self.lo})")
        if self.samples < 1:
            raise ValueError(f"Scale: samples must be >= 1, got {self.samples}")

    @property
    def range(self) -> int:
        """R: the largest possible difference, in score points."""
        return self.hi - self.lo


@dataclass(frozen=True)
class Score:
    """The score statistic at one boundary, and what its critical value depends on."""

    boundary: Fraction  # mu0
    statistic: float  # T
    df: float  # degrees of freedom of the t critical value
    variance: float  # V0, one difference's variance at the boundary (worst value included)
    skewness: float  # g, one difference's skewness at the boundary
    worst_weight: float  # p_worst: the weight the boundary distribution puts on a loss of the full range
    units: int  # N: questions, or clusters
    clusters: int | None  # G, or None for independent questions

    def critical(self, alpha: float) -> float:
        """t_{df, 1 - alpha}, raised by the Cornish-Fisher term when the boundary distribution is skewed right."""
        t = _t_quantile(1 - alpha, self.df)
        return t + max(0.0, self.skewness * (t * t - 1) / (6 * math.sqrt(self.units)))

    def rejects(self, alpha: float) -> bool:
        """Whether the data clear the boundary: the claim this test stands for."""
        return self.statistic > self.critical(alpha)


@lru_cache(maxsize=4096)
def _t_quantile(q: float, df: float) -> float:
    from scipy import stats
    return float(stats.t.ppf(q, df))


def is_exact(x: Any) -> bool:
    """int, Fraction or numpy integer; never a float (of any kind) or a bool."""
    return isinstance(x, numbers.Rational) and not isinstance(x, bool)


def exact_differences(d: Sequence, scale: Scale, shifted: bool = False) -> list[Fraction]:
    """The differences as Fractions, refused unless each is exact, within [-R, R] and a difference of two means of
    at most K integer scores (its denominator divides lcm(1..K)). ``shifted``: differences moved off the scale's
    grid on purpose (the calibration's data sets, shifted to the boundary): only exactness is checked."""
    grid = math.lcm(*range(1, scale.samples + 1))
    out = []
    for i, x in enumerate(d):
        if not is_exact(x):
            raise TypeError(f"difference {i} is {x!r} ({type(x).__name__}): the rule takes exact values (int or "
                            f"Fraction), never floats")
        x = Fraction(int(x)) if isinstance(x, numbers.Integral) else Fraction(x)
        if shifted:
            out.append(x)
            continue
        if abs(x) > scale.range:
            raise ValueError(f"difference {i} = {x} is outside [-{scale.range}, {scale.range}] for scale "
                             f"{scale.lo}..{scale.hi}")
        if grid % x.denominator:
            raise ValueError(f"difference {i} = {x} is not a difference of two means of at most {scale.samples} "
                             f"integer score(s)")
        out.append(x)
    if len(out) < 2:
        raise ValueError("need at least 2 paired differences")
    return out


def cluster_units(cluster_of: Sequence) -> tuple[list, int]:
    """The documented rule for a set where some questions have no cluster (None or ""): each such question is a
    unit of its own in the cluster-robust variance, but only registered clusters count towards ``min_clusters``
    (counting them too, 3 clusters of 15 and 7 loose questions passed a minimum of 10 and claimed 8 % of the time
    at the boundary). Returns one label per question and the number of registered clusters."""
    labels = [("cluster", c) if c not in (None, "") else ("question", i) for i, c in enumerate(cluster_of)]
    return labels, len({c for c in cluster_of if c not in (None, "")})


def _tally(values: Sequence[Fraction]) -> dict[Fraction, int]:
    out: dict[Fraction, int] = {}
    for x in values:
        out[x] = out.get(x, 0) + 1
    return out


def _fit(psi: list[tuple[float, int]], worst: float) -> tuple[list[float], float]:
    """Each distinct value's weight and the worst value's weight in the boundary distribution (psi: value minus
    the boundary, and its count)."""
    n = sum(c for _, c in psi)
    cap = -1.0 / worst

    def h(lam: float) -> float:
        total = 0.0
        for x, c in psi:
            den = 1.0 + lam * x
            if den <= 0.0:
                return -math.inf
            total += c * x / den
        return total

    if h(cap) >= 0.0:
        lam = cap
    else:
        lo, hi = 0.0, cap
        for _ in range(_ITERATIONS):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if h(mid) > 0.0 else (lo, mid)
        lam = (lo + hi) / 2
    weights = [c / (n * (1.0 + lam * x)) for x, c in psi]
    return weights, max(0.0, 1.0 - math.fsum(weights))


@dataclass(frozen=True)
class _Sample:
    """What the statistic needs, computed once from the exact differences (a bound evaluates it many times)."""

    n: int
    total: Fraction  # sum of the differences
    tally: tuple[tuple[Fraction, int], ...]  # distinct values and their counts
    cr1: float | None  # sum over clusters of (cluster sum - size x mean)^2; None: independent questions
    e4: float | None  # sum over clusters of (cluster sum - size x mean)^4
    units: int  # G, or n


def _sample(d: Sequence, scale: Scale, clusters: Sequence | None, shifted: bool = False) -> _Sample:
    values = exact_differences(d, scale, shifted)
    n = len(values)
    total = sum(values, Fraction(0))
    if clusters is None:
        return _Sample(n, total, tuple(_tally(values).items()), None, None, n)
    labels = list(clusters)
    if len(labels) != n:
        raise ValueError(f"{len(labels)} cluster labels for {n} differences")
    sums: dict[Any, Fraction] = {}
    sizes: dict[Any, int] = {}
    for x, c in zip(values, labels, strict=True):
        sums[c] = sums.get(c, Fraction(0)) + x
        sizes[c] = sizes.get(c, 0) + 1
    if len(sums) < 2:
        raise ValueError("need at least 2 clusters")
    mean = total / n
    residuals = [float(sums[c] - sizes[c] * mean) for c in sums]
    return _Sample(n, total, tuple(_tally(values).items()), math.fsum(e * e for e in residuals),
                   math.fsum(e ** 4 for e in residuals), len(sums))


def _score(x: _Sample, mu0: Fraction, R: int) -> Score:
    if not -R < mu0 < R:
        raise ValueError(f"the boundary {mu0} must lie strictly inside (-{R}, {R})")
    n, g = x.n, x.units
    total = x.total - n * mu0  # exact: an estimate exactly at the boundary gives T = 0
    psi = [(float(v - mu0), c) for v, c in x.tally]
    worst = float(-R - mu0)
    if total > 0:
        weights, p_worst = _fit(psi, worst)
    else:  # at or below the boundary: nothing to tilt, T <= 0
        weights, p_worst = [c / n for _, c in psi], 0.0
    v0 = math.fsum(w * p * p for (p, _), w in zip(psi, weights, strict=True)) + p_worst * worst * worst
    m3 = math.fsum(w * p ** 3 for (p, _), w in zip(psi, weights, strict=True)) + p_worst * worst ** 3
    skew = m3 / v0 ** 1.5 if v0 > 0 else 0.0
    spread, df = n * v0, float(g - 1)
    if x.cr1 is not None and x.cr1 > spread:
        spread = x.cr1
        df = min(df, max(1.0, 2 * x.cr1 * x.cr1 / x.e4))
    if spread > 0:
        t = float(total) / math.sqrt(spread * g / (g - 1))
    else:  # no spread at all: every difference equal and at or below the boundary
        t = 0.0 if total == 0 else math.copysign(math.inf, float(total))
    return Score(boundary=mu0, statistic=t, df=df, variance=v0, skewness=skew, worst_weight=p_worst, units=g,
                 clusters=None if x.cr1 is None else g)


def score(d: Sequence, mu0, scale: Scale, clusters: Sequence | None = None) -> Score:
    """The score statistic T of the lower-side test H0: mean <= mu0 (see the module doc). ``clusters``: one label
    per question (questions without a registered cluster carry their own label), or None."""
    if not is_exact(mu0):
        raise TypeError(f"the boundary must be exact, got {mu0!r}")
    return _score(_sample(d, scale, clusters), Fraction(mu0), scale.range)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha (one-sided) must be in (0, 0.5), got {alpha}")


def _margin(margin) -> Fraction:
    """The registered margin as the decimal it was written as (0.1 -> 1/10), or exact."""
    if is_exact(margin):
        m = Fraction(margin)
    elif isinstance(margin, float):
        m = Fraction(repr(margin))
    else:
        raise TypeError(f"margin must be a number, got {margin!r}")
    if m < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    return m


def _mirror(d: Sequence) -> list:
    return [-x if is_exact(x) else x for x in d]


def claims(kind: str, d: Sequence, margin, alpha: float, scale: Scale, clusters: Sequence | None = None,
           shifted: bool = False) -> bool:
    """Whether the registered claim is made: "non_inferiority" (mean > -M), "superiority" (mean > 0) or
    "equivalence" (-M < mean < M, both one-sided tests at alpha). ``shifted``: see ``exact_differences``."""
    _check_alpha(alpha)
    m = _margin(margin)
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "equivalence" and m == 0:
        raise ValueError("equivalence needs a margin > 0")
    x = _sample(d, scale, clusters, shifted)
    R = scale.range
    if kind == "non_inferiority":
        return _score(x, -m, R).rejects(alpha)
    if kind == "superiority":
        return _score(x, Fraction(0), R).rejects(alpha)
    upper = _sample(_mirror(d), scale, clusters, shifted)
    return _score(x, -m, R).rejects(alpha) and _score(upper, -m, R).rejects(alpha)


def lower_bound(d: Sequence, alpha: float, scale: Scale, clusters: Sequence | None = None) -> float:
    """The one-sided (1 - alpha) lower bound: the smallest boundary the test does not reject (for display; a
    decision is the test at the registered boundary, ``claims``). -R when nothing above -R is rejected."""
    _check_alpha(alpha)
    x = _sample(d, scale, clusters)
    R = scale.range
    mean = x.total / x.n
    if mean <= -R:
        return float(-R)
    lo, hi = float(-R), float(mean)
    while hi - lo > 1e-12 * R:  # the test rejects below the bound and not above it
        mid = (lo + hi) / 2
        if _score(x, Fraction(mid), R).rejects(alpha):
            lo = mid
        else:
            hi = mid
    return lo


def upper_bound(d: Sequence, alpha: float, scale: Scale, clusters: Sequence | None = None) -> float:
    """The one-sided (1 - alpha) upper bound: the lower bound of the mirrored differences, negated."""
    exact_differences(d, scale)
    return -lower_bound(_mirror(d), alpha, scale, clusters)
