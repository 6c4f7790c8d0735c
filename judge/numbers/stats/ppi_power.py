"""Power of the gold-corrected (PPI++) decision before its labels are paid for.

Under ``judge_error = "decide"`` the corrected interval (judge.numbers.stats.ppi, rule "guarded") decides, and its width
is set by the n questions with gold far more than by the N the judge scored. These functions say, from the judge's
scores alone, what n buys: the smallest difference the corrected decision detects, its power at the margin, and the
n a target power needs.

The variance of PPI++ with the power-tuned lam, for a random sample of n of N questions (m = N - n without gold;
judge.numbers.stats.ppi's module doc), in population terms::

    lam    = rho * (sd_gold / sd_judge) * m / N                  (the tuned lam's limit, clipped to [0, 1])
    s2_r   = sd_gold^2 - 2 lam rho sd_gold sd_judge + lam^2 sd_judge^2       (the rectifier d - lam f)
    var    = lam^2 sd_judge^2 / m  +  s2_r / n  =  sd_gold^2 / n * (1 - (1 - n/N) rho^2)   (unclipped lam)

where rho is the correlation, over questions, of the gold difference d with the judge's difference f: two-phase
sampling's variance, which ppi_py's power analysis uses too. With n of 20 to 80 the decision departs from it in
three ways, each taken into account here:

* lam is estimated on the n labelled questions: its expectation carries the factor (n - 1)/n of the covariance
  divided by n, and its noise moves the estimate by (lam_hat - lam)(mean_U(f) - mean_L(f)), adding
  ``(m/N)^2 sd_gold^2 (1 + rho^2) / n * (1/m + 1/n)`` to the estimate's variance (a covariance over n questions
  divided by a variance over all N); ``sd`` is the root of the two;
* rule "guarded" bounds it with a wider SE: the rectifier's spread with ddof 1 and two pseudo-residuals of
  ``step``, ``((n - k) s2_r + 2 step^2) / ((n + 1) n)`` in expectation (k = 2 with lam fitted, 1 without), and
  Student t at the Welch-Satterthwaite degrees of freedom of the parts as it counts them (n + 1 and N - 1);
* that SE varies, as a scaled chi on the degrees of freedom of its random parts (n - k and N - 1; the
  pseudo-residuals are fixed).

The bound clears a boundary the true mean difference lies ``distance`` beyond when ``estimate - t se_hat >
boundary``, whose chance is the noncentral t's, ``P(T_{df'}(distance / sd) > t_{1 - alpha, df} se / sd)``
(judge.numbers.stats.t_bounds.t_power's form for the paired t-test, where sd = se). Equivalence (both bounds inside
+/- margin at a true difference of 0) has power ``2 p - 1``, p the one-sided power at the margin.

Before any gold exists sd_gold and rho are unknown: the caller states them (judge.numbers.validity: the gold differences
assumed to spread as the judge's do, sd_gold = sd_judge, and rho the registered ``assumed_gold_correlation``); once
gold exists they are measured. rho = 0 is the gold-only floor: what the labels give when the judge's scores carry
nothing. BENCHMARKS.md checks the stated power against the simulated power of the decision itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

__all__ = ["Design", "Spread", "spread", "power", "mde", "labels_for_power"]


@dataclass(frozen=True)
class Design:
    """What the corrected bound's spread depends on: ``labelled`` of ``questions`` paired questions with gold, drawn
    at random; ``alpha`` one-sided; ``step`` rule "guarded"'s pseudo-residual (judge.numbers.stats.ppi)."""

    questions: int  # N
    labelled: int  # n, 2 <= n <= N
    sd_judge: float  # SD of the judge's paired differences over the N questions
    sd_gold: float  # SD of the gold differences
    correlation: float  # rho: correlation of the gold and the judge's differences over questions
    alpha: float
    step: float

    def __post_init__(self) -> None:
        if not 2 <= self.labelled <= self.questions:
            raise ValueError(f"need 2 <= labelled <= questions, got {self.labelled} of {self.questions}")
        if not (self.sd_judge >= 0 and self.sd_gold >= 0 and self.step >= 0):
            raise ValueError("sd_judge, sd_gold and step must be >= 0")
        if not -1 <= self.correlation <= 1:
            raise ValueError("correlation must be in [-1, 1]")
        if not 0 < self.alpha < 0.5:
            raise ValueError("alpha (one-sided) must be in (0, 0.5)")


class Spread(NamedTuple):
    """How the corrected estimate and its bound vary (rule "guarded"; module doc)."""

    sd: float  # the estimate's own standard deviation: lam^2 s2_judge / m + s2_r / n, no pseudo-residual
    se: float  # the standard error its bound uses (root of its expectation): the pseudo-residuals included
    df: float  # the decision's t degrees of freedom: Welch-Satterthwaite of its parts as it counts them (n + 1, N - 1)
    se_df: float  # the degrees of freedom of the SE's own variation: its random parts' (n - 1 or n - 2, N - 1)


def spread(d: Design) -> Spread:
    """The corrected estimate's ``Spread`` for a design (module doc)."""
    n, big = d.labelled, d.questions
    m = big - n
    lam = 0.0
    if m > 0 and d.sd_judge > 0:  # the tuned lam's expectation: its covariance divides by n (ddof 0)
        lam = min(1.0, max(0.0, d.correlation * d.sd_gold / d.sd_judge * m / big * (n - 1) / n))
    s2_r = max(0.0, d.sd_gold ** 2 - 2 * lam * d.correlation * d.sd_gold * d.sd_judge + (lam * d.sd_judge) ** 2)
    fitted = 2 if lam > 0 else 1  # lam is fitted on the labelled questions: one more degree of freedom spent
    rect = (n - fitted) * s2_r / ((n + 1) * n)
    guard = 2 * d.step ** 2 / ((n + 1) * n)
    imputed = lam * lam * d.sd_judge ** 2 / m if lam > 0 else 0.0
    # lam's own noise moves the estimate by (lam_hat - lam) (mean_U(f) - mean_L(f)): var(lam_hat) is that of a
    # covariance over n questions divided by a variance over all N, (m / N)^2 sd_gold^2 (1 + rho^2) / (n sd_judge^2)
    noise = ((m / big) ** 2 * d.sd_gold ** 2 * (1 + d.correlation ** 2) / n * (1 / m + 1 / n)) if lam > 0 else 0.0
    sd = math.sqrt(imputed + s2_r / n + noise)
    var = rect + guard + imputed
    if var == 0:
        return Spread(sd, 0.0, math.inf, math.inf)
    counted = math.fsum(v * v / k for v, k in ((rect + guard, n + 1), (imputed, big - 1)) if v > 0)
    varying = math.fsum(v * v / k for v, k in ((rect, n - fitted), (imputed, big - 1)) if v > 0)
    return Spread(sd, math.sqrt(var), var * var / counted, var * var / varying if varying > 0 else math.inf)


def _one_sided(distance: float, d: Design) -> float:
    """P(estimate - t_{1-alpha, df} * SE > boundary) when the truth lies ``distance`` beyond the boundary: with the
    estimate normal (sd) and the SE varying as a scaled chi (se_df), ``P(T_{se_df}(distance / sd) > t * se / sd)``."""
    from scipy import special, stats

    s = spread(d)
    crit = float(stats.t.ppf(1 - d.alpha, s.df)) if s.se > 0 else 0.0
    if s.sd == 0:  # the estimate is exact: the bound clears the boundary or it does not
        return 1.0 if distance > crit * s.se else 0.0
    if math.isinf(s.se_df):  # the SE does not vary
        return float(special.ndtr((distance - crit * s.se) / s.sd))
    return float(stats.nct.sf(crit * s.se / s.sd, s.se_df, distance / s.sd))


def power(d: Design, distance: float, kind: str) -> float:
    """Power of the corrected decision: for "non_inferiority"/"superiority" the chance its one-sided bound clears a
    boundary the true mean difference lies ``distance`` beyond; for "equivalence" the chance both bounds fall
    inside +/- ``distance`` (the margin) at a true difference of 0."""
    p = _one_sided(distance, d)
    return max(0.0, 2 * p - 1) if kind == "equivalence" else p


def mde(d: Design, target: float, kind: str) -> float:
    """The smallest distance beyond the boundary the corrected decision detects with power ``target`` (equivalence:
    the smallest margin it shows equivalence within at a true difference of 0); 0 when the estimate has no spread."""
    from scipy import optimize, stats

    if not 0 < target < 1:
        raise ValueError("target power must be in (0, 1)")
    s = spread(d)
    scale = max(s.sd, s.se)
    if scale == 0:
        return 0.0
    want = (1 + target) / 2 if kind == "equivalence" else target
    if s.sd == 0:  # an exact estimate: detected once the distance passes the bound's reach
        return float(stats.t.ppf(1 - d.alpha, s.df)) * s.se
    hi = scale
    while _one_sided(hi, d) < want:
        hi *= 2
    return float(optimize.brentq(lambda x: _one_sided(x, d) - want, 0.0, hi, xtol=1e-12 * scale))


def labels_for_power(d: Design, distance: float, target: float, kind: str) -> int | None:
    """The fewest questions with gold (2 to N) at which the corrected decision has power ``target`` at ``distance``
    (``d.labelled`` is ignored); None when even gold on all N questions falls short, or ``distance`` is not > 0."""
    if not 0 < target < 1:
        raise ValueError("target power must be in (0, 1)")
    if not distance > 0:
        return None

    def enough(n: int) -> bool:
        return power(replace(d, labelled=n), distance, kind) >= target

    lo, hi = 2, d.questions
    if not enough(hi):
        return None
    while lo < hi:  # power grows with n: the variance's parts and the t quantile all fall as labels are added
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo
