"""The agreement intervals against gold (exact agreement, quadratic kappa, ordinal alpha) computed by the peer
libraries from the documented scheme, for the tests of both paths: sklearn's cohen_kappa_score, krippendorff's
alpha and the share of equal scores on each resample of whole questions, and the BCa interval written here from its
definition (Efron & Tibshirani 14.3, with scipy.stats.norm), sharing nothing with judge/."""
from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
from scipy.stats import norm
from sklearn.metrics import cohen_kappa_score

SCALE = (0, 1, 2)
TIE = 1e-12  # the documented tie: within 1e-12 * max(1, |observed|)


def statistics(gold, judge, idx) -> tuple[float, float, float]:
    """Kappa, alpha (NaN where undefined) and exact agreement of the answers ``idx``."""
    g, j = np.array([gold[i] for i in idx]), np.array([judge[i] for i in idx])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns where kappa is undefined (NaN): the caller drops those
        kappa = cohen_kappa_score(g, j, weights="quadratic", labels=list(SCALE))
    alpha = (krippendorff.alpha(reliability_data=[g, j], level_of_measurement="ordinal", value_domain=list(SCALE))
             if len(set(g) | set(j)) > 1 else math.nan)
    return float(kappa), float(alpha), float(np.mean(g == j))


def units_of(n: int, questions) -> list[list[int]]:
    """The distinct questions sorted as text, each with its answers; each answer alone when ``questions`` is None."""
    if questions is None:
        return [[i] for i in range(n)]
    return [[i for i, q in enumerate(questions) if str(q) == u] for u in sorted({str(q) for q in questions})]


def bca(values, observed: float, jackknife, alpha: float) -> tuple[float, float]:
    """The BCa levels from the definition; the percentile levels where it is undefined (the documented fallbacks)."""
    values = np.asarray(values)
    tol = TIE * max(1.0, abs(observed))
    p = (np.sum(values < observed - tol) + 0.5 * np.sum(np.abs(values - observed) <= tol)) / values.size
    jack = np.array([x for x in jackknife if math.isfinite(x)])
    if p in (0.0, 1.0) or jack.size < 2:
        return alpha, 1 - alpha
    dev = jack.mean() - jack
    if max(abs(dev)) <= TIE * max(1.0, abs(jack.mean())):
        return alpha, 1 - alpha
    z0 = norm.ppf(p)
    accel = np.sum(dev ** 3) / (6 * np.sum(dev ** 2) ** 1.5)
    ends = []
    for z in (norm.ppf(alpha), norm.ppf(1 - alpha)):
        if 1 - accel * (z0 + z) <= 0:
            return alpha, 1 - alpha
        ends.append(float(norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))))
    return ends[0], ends[1]


def intervals(gold, judge, seed: int, resamples: int, questions=None, alpha: float = 0.025,
              method: str = "bca") -> tuple[tuple, tuple, tuple]:
    """(kappa, alpha, exact) intervals: resample r the r-th default_rng(seed).integers(0, G, G) of the G units, each
    bringing its answers; the type-7 percentiles of the defined resamples at the percentile or BCa levels, the
    jackknife leaving out one unit at a time; (None, None) when fewer than half are defined or the whole data's
    statistic is not."""
    units = units_of(len(gold), questions)
    rng = np.random.default_rng(seed)
    boots = [statistics(gold, judge, [i for u in rng.integers(0, len(units), len(units)) for i in units[u]])
             for _ in range(resamples)]
    observed = statistics(gold, judge, range(len(gold)))
    jack = [statistics(gold, judge, [i for v, rows in enumerate(units) if v != u for i in rows])
            if len(units) > 1 else (math.nan,) * 3 for u in range(len(units))]
    out = []
    for s in range(3):
        ok = np.array([b[s] for b in boots if math.isfinite(b[s])])
        if not math.isfinite(observed[s]) or ok.size == 0 or 2 * ok.size < resamples:
            out.append((None, None))
            continue
        lo, hi = bca(ok, observed[s], [j[s] for j in jack], alpha) if method == "bca" else (alpha, 1 - alpha)
        out.append(tuple(float(x) for x in np.percentile(ok, [100 * lo, 100 * hi])))
    return out[0], out[1], out[2]
