"""False-claim rate and power of candidate decision rules over a grid of tie rates, scales, K and clusters.

A non-inferiority claim ("b is not worse than a by more than M") is made when a one-sided (1 - alpha) lower
bound of the mean paired difference d = b - a exceeds -M. Every rule here is computed independently in this
file (vectorised numpy, many data sets at once); judge/numbers/stats/ is only called by ``--validate``, to show
that this file's copy of the current rule and its data generator reproduce the false-claim rates reported
against the current rule.

The generator (``difference_pmf``, ``draw``)
--------------------------------------------
A rubric scores on lo..hi (range R = hi - lo points); a question's score is the mean of its K samples, so
a paired difference is a multiple of 1/K in [-R, R]. A cell fixes n, the tie rate t = P(d = 0), the scale,
K, the shape of the non-zero differences, the true mean and the cluster structure:

* shape "step": every non-zero difference is one grid step (1/K point) up or down, losses and wins in the
  proportions that give the mean; "flat": non-zero magnitudes uniform over 1/K .. R, the same for losses
  and wins, again in proportions that give the mean. When the mean cannot be reached that way (few
  non-ties, mean far below zero), every non-tie is a loss and the loss magnitudes are raised just enough
  ("step": the two grid magnitudes around the needed mean; "flat": an exponential tilt of the uniform).
  At t = 0.95 and M = 0.05 R this is the extreme case: 5 % of questions lose the full range.
* boundary: mean = -M, M = ``margin_frac`` x R (0.05: 0.05 binary, 0.1 on 0-2, 0.5 on 0-10), so every
  claim is false; power: mean 0 (losses and wins symmetric), so the claim is true.
* clusters: "none" (independent questions); "10x" (10 registered clusters of n/10 questions, sizes as
  equal as n allows); "3x+7" (3 registered clusters sharing n - 7 questions, plus 7 questions without a
  cluster). Within a cluster the differences are drawn from a cluster distribution ~ Dirichlet(kappa p)
  around the cell's distribution p, kappa = 1/ICC - 1: the marginal distribution (and mean) is exactly p,
  and two questions of one cluster correlate with ICC exactly (Dirichlet-multinomial), on any scale.

Rules (``RULES``; all in points, claim iff the lower bound > -M, strictly)
------------------------------------------------------------------------
  wald_t        mean - t(n-1) sd/sqrt(n): the interval peers report (inspect_ai stderr(), lm-eval mean_stderr)
  bootstrap     percentile bootstrap over questions, or clusters (arena-hard-auto, the harness's "bootstrap")
  current       min(bootstrap, t with one pseudo-loss and one pseudo-win of ONE point): the harness's default
  pseudo_half   min(bootstrap, t with pseudo-observations of -R/2 and +R/2)
  pseudo_range  min(bootstrap, t with pseudo-observations of -R and +R)
  t_floor       t with the variance floored at M (R - M) (a null with mass M/R at -R, the rest tied)
  studentized   bootstrap-t (resampled t statistics; a resample without spread has t = +-inf or 0)
  signflip      randomisation test of H0 mean = -M flipping the signs of d + M (assumes a symmetric null)
  hoeffding     mean - 2R sqrt(log(1/alpha) / 2n)
  bernstein     empirical Bernstein (Maurer & Pontil 2009) for a range of 2R
  betting       hedged-capital test (Waudby-Smith & Ramdas 2024), data order, predictable plug-in bets
  newcombe      Newcombe (1998) hybrid score interval for paired binary scores (binary, K = 1 only)
  score_z       scale-anchored score test: the variance is that of the most likely distribution with mean
                -M on the observed values plus the scale's worst value -R (for paired binary scores it is
                exactly Tango's score test); normal critical value
  score_t       the same with the factor n/(n-1) and a t(n-1) critical value
  score_skew    score_t with its critical value raised (never lowered) by the Cornish-Fisher term of the
                boundary distribution's skewness g: t + max(0, g (t^2 - 1) / (6 sqrt n))  [recommended]
  cr1_t         clusters: cluster-robust (CR1) t bound, G - 1 degrees of freedom (G = units resampled)
  cr1_range     cr1_t with a pseudo-cluster of -R and one of +R (each of the mean cluster size)
  score_cl      clusters: the score test on cluster totals; the worst value a cluster of the largest size that
                lost the full range; G/(G-1) and t(G-1)
  score_cr...   clusters: score_t on questions with the CR1 variance when that is larger (see ``score_cr``);
                score_cr_eff (Satterthwaite degrees of freedom and the skew guard) is recommended
In clustered cells the rules that assume independent questions are computed on the cluster units where
that has a meaning (wald_t, current's guard: on questions, as the harness does) and left out otherwise.
``min_clusters`` (10) counts units as the harness does today (a question without a cluster is a unit);
counting registered clusters only, the "3x+7" sets never claim (3 < 10).

Calibration (``--calibration``): for score_skew, the calibration line as the harness computes it (data sets
drawn from the observed differences shifted to mean -M) and the proposed one (data sets drawn from the rule's
own boundary distribution: the observed values plus the worst value, tilted to mean -M), each averaged over
a cell's data sets and over its claims, against the cell's true rate.

    python benchmarks/type1_grid.py                  # the full grid (BENCHMARKS.md)
    python benchmarks/type1_grid.py --quick          # a few cells, small samples (CI: proves it runs)
    python benchmarks/type1_grid.py --validate       # the current rule through judge/numbers/stats/ vs this file
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from scipy import special
from scipy import stats as sps

ALPHA = 0.025
CEIL = 1.2 * ALPHA  # the goal for n >= 12
MIN_CLUSTERS = 10
SCALES = {"binary": 1, "0-2": 2, "0-10": 10}  # range R in points
TOL = 1e-9  # a bound must clear -M by more than float noise (an exact tie does not clear it)


# ----------------------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------------------


def _tilted(j: np.ndarray, target: float, k: int) -> np.ndarray:
    """Magnitudes j/k (uniform base) exponentially tilted to mean ``target`` points."""
    if target >= j[-1] / k - 1e-12:
        f = np.zeros(j.size)
        f[-1] = 1.0
        return f
    lo, hi = 0.0, 50.0
    for _ in range(200):
        th = (lo + hi) / 2
        w = np.exp(th * (j - j[-1]))
        lo, hi = (th, hi) if (w * j).sum() / w.sum() / k < target else (lo, th)
    w = np.exp(lo * (j - j[-1]))
    return w / w.sum()


def _bigwin_pmf(R: int, K: int, tie: float, mean: float, margin: float) -> np.ndarray:
    """Wins of the full range R, losses of one size s (the smallest grid magnitude >= 2M / (1 - tie), at most R),
    in proportions that give ``mean``: a few large wins against many small losses (the sum is skewed right)."""
    L = R * K
    non = 1.0 - tie
    s_units = min(L, max(1, math.ceil(2 * margin / non * K - 1e-9)))
    s = s_units / K
    w = (non * s + mean) / (R + s)
    w = min(max(w, 0.0), non)
    p = np.zeros(2 * L + 1)
    p[L] = tie
    p[2 * L] += w
    p[L - s_units] += non - w
    if abs(float((p * np.arange(-L, L + 1)).sum()) / K - mean) > 1e-9:  # infeasible (every non-tie a full loss)
        return difference_pmf(R, K, tie, mean, "step")
    return p


def difference_pmf(R: int, K: int, tie: float, mean: float, shape: str, margin: float = 0.0) -> np.ndarray:
    """P(d = u/K) for u = -RK..RK: tie rate ``tie``, mean ``mean`` points (<= 0), non-ties shaped by ``shape``
    (``margin``: the cell's M, which fixes the loss size of "bigwin" at the boundary and at 0 alike)."""
    L = R * K
    j = np.arange(1, L + 1)
    if shape == "bigwin":
        return _bigwin_pmf(R, K, tie, mean, margin)
    g = np.zeros(L)
    if shape == "step":
        g[0] = 1.0
    elif shape == "flat":
        g[:] = 1.0 / L
    else:
        raise ValueError(shape)
    e_mag = float((g * j).sum()) / K
    non = 1.0 - tie
    need = mean / e_mag  # wins - losses
    p = np.zeros(2 * L + 1)
    p[L] = tie
    if abs(need) <= non + 1e-12:
        w, loss = (non + need) / 2, (non - need) / 2
        p[L - j] += loss * g
        p[L + j] += w * g
    else:  # every non-tie a loss, magnitudes raised to reach the mean
        target = -mean / non
        if shape == "step":
            x = target * K
            lo_j = min(int(math.floor(x)), L - 1)
            frac = x - lo_j
            f = np.zeros(L)
            f[lo_j - 1] += 1 - frac
            f[lo_j] += frac
        else:
            f = _tilted(j, target, K)
        p[L - j] += non * f
    p = np.clip(p, 0, None)
    p /= p.sum()
    got = float((p * np.arange(-L, L + 1)).sum()) / K
    assert abs(got - mean) < 1e-9, (R, K, tie, mean, shape, got)
    return p


def cluster_labels(n: int, structure: str) -> tuple[np.ndarray | None, int]:
    """Each question's unit (cluster, or itself when it has no cluster) and how many registered clusters."""
    if structure == "none":
        return None, 0
    if structure == "10x":
        return np.concatenate([np.full(len(c), i) for i, c in enumerate(np.array_split(np.arange(n), 10))]), 10
    if structure == "3x+7":
        parts = np.array_split(np.arange(n - 7), 3)
        lab = np.concatenate([np.full(len(c), i) for i, c in enumerate(parts)] + [np.arange(3, 10)])
        return lab, 3
    raise ValueError(structure)


def draw(rng, S: int, n: int, p: np.ndarray, labels: np.ndarray | None, registered: int, icc: float) -> np.ndarray:
    """S data sets of n differences in grid units (int), independent or clustered (Dirichlet, ICC ``icc``)."""
    cdf = np.cumsum(p)
    cdf[-1] = 1.0
    u = rng.random((S, n))
    if labels is None:
        return np.searchsorted(cdf, u, side="right").astype(np.int64) - (p.size // 2)
    kappa = 1.0 / icc - 1.0
    g = rng.gamma(np.broadcast_to(kappa * p, (S, registered, p.size)))
    pc = g / g.sum(-1, keepdims=True)
    cdfs = np.cumsum(pc, -1)
    cdfs[..., -1] = 1.0
    out = np.empty((S, n), dtype=np.int64)
    for i in range(n):
        c = labels[i]
        row = cdfs[:, c, :] if c < registered else np.broadcast_to(cdf, (S, p.size))
        out[:, i] = (row < u[:, i:i + 1]).sum(1)
    return out - (p.size // 2)


# ----------------------------------------------------------------------------------------------------------
# Rules (vectorised over data sets; d in points, shape (S, n))
# ----------------------------------------------------------------------------------------------------------


def tcrit(df) -> np.ndarray:
    return sps.t.ppf(1 - ALPHA, df)


ZCRIT = float(sps.norm.ppf(1 - ALPHA))


def t_bound(d: np.ndarray, pseudo: float | None = None) -> np.ndarray:
    if pseudo is not None:
        d = np.concatenate([d, np.full((d.shape[0], 1), -pseudo), np.full((d.shape[0], 1), pseudo)], 1)
    n = d.shape[1]
    return d.mean(1) - tcrit(n - 1) * d.std(1, ddof=1) / math.sqrt(n)


def unit_sums(units_int: np.ndarray, labels: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-unit sums (S, G) in grid units and sizes (G,)."""
    if labels is None:
        return units_int, np.ones(units_int.shape[1], dtype=np.int64)
    G = int(labels.max()) + 1
    onehot = np.zeros((labels.size, G), dtype=np.int64)
    onehot[np.arange(labels.size), labels] = 1
    return units_int @ onehot, onehot.sum(0)


def boot_bound(sums: np.ndarray, sizes: np.ndarray, K: int, counts: np.ndarray) -> np.ndarray:
    """Percentile bootstrap lower bound (type-7 alpha quantile) over units, with shared resample counts."""
    num = sums @ counts.T  # (S, B) grid units
    den = sizes @ counts.T  # (B,)
    means = num / den[None, :] / K
    return np.quantile(means, ALPHA, axis=1)


def studentized_bound(d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    n = d.shape[1]
    m, s = d.mean(1), d.std(1, ddof=1)
    bm = d @ counts.T / n
    bq = (d * d) @ counts.T / n
    bs = np.sqrt(np.clip(bq - bm * bm, 0, None) * n / (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (bm - m[:, None]) / (bs / math.sqrt(n))
    t = np.where(bs > 0, t, np.sign(bm - m[:, None]) * np.inf)
    t = np.where(np.isnan(t), 0.0, t)
    q = np.quantile(t, 1 - ALPHA, axis=1)
    return m - q * s / math.sqrt(n)


def signflip_claims(d: np.ndarray, mu0: float, signs: np.ndarray) -> np.ndarray:
    c = d - mu0
    obs = c.sum(1)
    null = c @ signs.T
    p = ((null >= obs[:, None] - 1e-9).sum(1) + 1) / (signs.shape[0] + 1)
    return p <= ALPHA


def hoeffding_bound(d: np.ndarray, R: int) -> np.ndarray:
    n = d.shape[1]
    return d.mean(1) - 2 * R * math.sqrt(math.log(1 / ALPHA) / (2 * n))


def bernstein_bound(d: np.ndarray, R: int) -> np.ndarray:
    n = d.shape[1]
    x = (d + R) / (2 * R)  # in [0, 1]
    v = x.var(1, ddof=1)
    lb = x.mean(1) - np.sqrt(2 * v * math.log(2 / ALPHA) / n) - 7 * math.log(2 / ALPHA) / (3 * (n - 1))
    return lb * 2 * R - R


def betting_claims(d: np.ndarray, R: int, mu0: float) -> np.ndarray:
    """One-sided hedged-capital test of H0 mean <= mu0 (x in [0, 1]); claim when the capital reaches 1/alpha."""
    S, n = d.shape
    x = (d + R) / (2 * R)
    m = (mu0 + R) / (2 * R)
    log_k = np.zeros(S)
    mu_hat = np.full(S, 0.5)
    var_hat = np.full(S, 0.25)
    ssum, sq = np.zeros(S), np.full(S, 0.25)
    for i in range(n):
        lam = np.minimum(np.sqrt(2 * math.log(1 / ALPHA) / (n * var_hat)), 0.5 / m)
        log_k += np.log1p(lam * (x[:, i] - m))
        ssum += x[:, i]
        sq += (x[:, i] - mu_hat) ** 2
        mu_hat = (0.5 + ssum) / (i + 2)
        var_hat = sq / (i + 2)
    return log_k >= math.log(1 / ALPHA)


def wilson(x: np.ndarray, n: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    p = x / n
    c = p + z * z / (2 * n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (c - h) / (1 + z * z / n), (c + h) / (1 + z * z / n)


def newcombe_bound(wins: np.ndarray, losses: np.ndarray, both1: np.ndarray, n: int) -> np.ndarray:
    """Lower bound of P(b=1) - P(a=1), Newcombe 1998 method 10 (continuity-adjusted phi), one-sided alpha."""
    both0 = n - wins - losses - both1
    pa, pb = (both1 + losses) / n, (both1 + wins) / n
    la, ua = wilson(both1 + losses, n, ZCRIT)
    lb, ub = wilson(both1 + wins, n, ZCRIT)
    a_ = (both1 + losses) * (both0 + wins) * (both1 + wins) * (both0 + losses)
    b_ = both1 * both0 - losses * wins
    c_ = np.where(b_ > n / 2, b_ - n / 2, np.where(b_ < 0, b_, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(a_ > 0, c_ / np.sqrt(np.maximum(a_, 1)), 0.0)
    dl = np.sqrt(np.clip((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2, 0, None))
    return pb - pa - dl


def score_stat(psi: np.ndarray, w: np.ndarray, psi_star, parts: bool = False):
    """Score statistic sum(w psi) / sqrt(W V): V is the variance of psi under the most likely distribution on
    the observed values (weights w) plus the worst value psi_star (< 0) whose mean of psi is 0."""
    psi_star = np.broadcast_to(np.asarray(psi_star, dtype=float), psi.shape[:1])
    W = w.sum(1)
    num = (w * psi).sum(1)
    lam_max = -1.0 / psi_star
    on = w > 0

    def h(lam):
        den = 1.0 + lam[:, None] * psi
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(on, w * psi / den, 0.0)
        t = np.where(on & (den <= 0), -np.inf, t)
        return t.sum(1)

    at_cap = h(lam_max * (1 - 1e-12)) >= 0
    lo, hi = np.zeros(psi.shape[0]), lam_max.copy()
    for _ in range(64):
        mid = (lo + hi) / 2
        pos = h(mid) > 0
        lo, hi = np.where(pos, mid, lo), np.where(pos, hi, mid)
    lam = np.where(at_cap, lam_max, (lo + hi) / 2)
    lam = np.where(num > 0, lam, 0.0)
    den = 1.0 + lam[:, None] * psi
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(on, w / (W[:, None] * den), 0.0)
    p_star = np.clip(1.0 - p.sum(1), 0, None)
    v = (p * psi * psi).sum(1) + p_star * psi_star ** 2
    if parts:
        m3 = (p * psi ** 3).sum(1) + p_star * psi_star ** 3
        return num, W * v, m3 / np.where(v > 0, v, 1.0) ** 1.5
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(v > 0, num / np.sqrt(W * v), np.where(num > 0, np.inf, 0.0))


def grid_counts(units_int: np.ndarray, L: int) -> np.ndarray:
    S = units_int.shape[0]
    idx = units_int + L + (np.arange(S) * (2 * L + 1))[:, None]
    return np.bincount(idx.ravel(), minlength=S * (2 * L + 1)).reshape(S, 2 * L + 1)


def score_iid(units_int: np.ndarray, R: int, K: int, mu0: float, parts: bool = False):
    L = R * K
    w = grid_counts(units_int, L).astype(float)
    psi = np.broadcast_to(np.arange(-L, L + 1) / K - mu0, w.shape)
    return score_stat(psi, w, -R - mu0, parts)


def score_skew(units_int: np.ndarray, R: int, K: int, mu0: float) -> np.ndarray:
    """score_t whose critical value is raised (never lowered) by the Cornish-Fisher term for the skewness g of
    one difference at the boundary: t + max(0, g (t^2 - 1) / (6 sqrt n)); rare large wins make the sum skewed
    to the right, where the normal critical value is too low."""
    num, wv, g = score_iid(units_int, R, K, mu0, parts=True)
    n = units_int.shape[1]
    c = tcrit(n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(wv > 0, num / np.sqrt(wv * n / (n - 1)), np.where(num > 0, np.inf, 0.0))
    return z > c + np.maximum(0.0, g * (c * c - 1) / (6 * math.sqrt(n)))


def score_cr(units_int: np.ndarray, sums: np.ndarray, sizes: np.ndarray, R: int, K: int,
             mu0: float) -> dict[str, np.ndarray]:
    """Clustered variants of score_t (claims per data set). The statistic is sum(psi) / sqrt(V G / (G - 1)):
      score_cr       V = max(n V0, CR1), CR1 = sum_g e_g^2 (e_g: cluster residual around the mean); t(G - 1)
      score_cr_skew  score_cr with score_skew's guard (sqrt G in place of sqrt n)
      score_cr_df    score_cr_skew with t(floor(2 (G - 1) / 3)) degrees of freedom
      score_cr_eff   score_cr_skew with t(df), df = min(G - 1, 2 CR1^2 / sum_g e_g^4) when CR1 decides: few
                     clusters carrying the spread leave the CR1 variance with few effective degrees of freedom
      score_cr0      V = max(n V0, sum_g (S_g - m_g mu0)^2): cluster residuals at the boundary (score-type CR1)
      score_deff     V = max(n V0, SS) x max(1, CR1 / SS): the null variance times the observed design effect"""
    num, wv, g = score_iid(units_int, R, K, mu0, parts=True)
    G = sizes.size
    s = sums / K
    mu = s.sum(1) / sizes.sum()
    e = s - sizes[None, :] * mu[:, None]
    cr1 = (e * e).sum(1)
    ss = ((units_int / K - units_int.mean(1, keepdims=True) / K) ** 2).sum(1)
    e0 = s - sizes[None, :] * mu0
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(ss > 0, cr1 / ss, 1.0)
        eff = np.where((cr1 > wv) & ((e ** 4).sum(1) > 0), np.clip(2 * cr1 ** 2 / (e ** 4).sum(1), 1, G - 1), G - 1)

    def z_of(v):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v > 0, num / np.sqrt(v * G / (G - 1)), np.where(num > 0, np.inf, 0.0))

    def guard(c):
        return c + np.maximum(0.0, g * (c * c - 1) / (6 * math.sqrt(G)))

    z = z_of(np.maximum(wv, cr1))
    c = tcrit(G - 1)
    return {"score_cr": z > c, "score_cr_skew": z > guard(c),
            "score_cr_df": z > guard(tcrit(max(1, (2 * (G - 1)) // 3))),
            "score_cr_eff": z > guard(tcrit(eff)),
            "score_cr0": z_of(np.maximum(wv, (e0 * e0).sum(1))) > guard(c),
            "score_deff": z_of(np.maximum(wv, ss) * np.maximum(1.0, deff)) > guard(c)}


def score_clustered(sums: np.ndarray, sizes: np.ndarray, R: int, K: int, mu0: float) -> np.ndarray:
    """score_cl: the score statistic on cluster totals, the worst value a cluster of the largest size that lost R."""
    G = sizes.size
    psi = sums / K - mu0 * sizes[None, :]
    z = score_stat(psi, np.ones_like(psi), sizes.max() * (-R - mu0))
    return z * math.sqrt((G - 1) / G)


def cr1_bound(sums: np.ndarray, sizes: np.ndarray, K: int, pseudo: float | None = None) -> np.ndarray:
    s = sums / K
    m = np.broadcast_to(sizes.astype(float), s.shape)
    if pseudo is not None:
        mbar = sizes.mean()
        s = np.concatenate([s, np.full((s.shape[0], 1), -pseudo * mbar), np.full((s.shape[0], 1), pseudo * mbar)], 1)
        m = np.concatenate([m, np.full((s.shape[0], 2), mbar)], 1)
    G = s.shape[1]
    mu = s.sum(1) / m.sum(1)
    e = s - m * mu[:, None]
    se = np.sqrt(G / (G - 1) * (e * e).sum(1)) / m.sum(1)
    return mu - tcrit(G - 1) * se


def evaluate(units_int: np.ndarray, R: int, K: int, M: float, labels, counts, signs, both1=None,
             quick: bool = False) -> dict[str, np.ndarray]:
    """Claims (bool per data set) of every applicable rule at the non-inferiority boundary -M."""
    S, n = units_int.shape
    d = units_int / K
    mu0 = -M
    sums, sizes = unit_sums(units_int, labels)
    G = sizes.size
    enough = G >= MIN_CLUSTERS if labels is not None else True
    boot = boot_bound(sums, sizes, K, counts)
    out: dict[str, np.ndarray] = {}

    def claim(bound):
        return (bound > mu0 + TOL) & enough

    out["wald_t"] = claim(t_bound(d))
    out["bootstrap"] = claim(boot)
    out["current"] = claim(np.minimum(boot, t_bound(d, 1.0)))
    out["pseudo_half"] = claim(np.minimum(boot, t_bound(d, R / 2)))
    out["pseudo_range"] = claim(np.minimum(boot, t_bound(d, float(R))))
    if labels is None:
        v = np.maximum(d.var(1, ddof=1), M * (R - M))
        out["t_floor"] = claim(d.mean(1) - tcrit(n - 1) * np.sqrt(v / n))
        if not quick:
            out["studentized"] = claim(studentized_bound(d, counts))
            out["signflip"] = signflip_claims(d, mu0, signs)
        out["hoeffding"] = claim(hoeffding_bound(d, R))
        out["bernstein"] = claim(bernstein_bound(d, R))
        out["betting"] = betting_claims(d, R, mu0)
        if both1 is not None:
            out["newcombe"] = claim(newcombe_bound((units_int > 0).sum(1), (units_int < 0).sum(1), both1, n))
        z = score_iid(units_int, R, K, mu0)
        out["score_z"] = z > ZCRIT
        out["score_t"] = z * math.sqrt((n - 1) / n) > tcrit(n - 1)
        out["score_skew"] = score_skew(units_int, R, K, mu0)
    else:
        out["cr1_t"] = claim(cr1_bound(sums, sizes, K))
        out["cr1_range"] = claim(cr1_bound(sums, sizes, K, float(R)))
        out["score_cl"] = (score_clustered(sums, sizes, R, K, mu0) > tcrit(G - 1)) & enough
        for k, v in score_cr(units_int, sums, sizes, R, K, mu0).items():
            out[k] = v & enough
    return out


# ----------------------------------------------------------------------------------------------------------
# Calibration lines for score_t (--calibration)
# ----------------------------------------------------------------------------------------------------------


def tilted_null(units_int: np.ndarray, R: int, K: int, mu0: float) -> np.ndarray:
    """The rule's boundary distribution for each data set: probabilities over the grid -RK..RK (the worst value
    -R included)."""
    L = R * K
    w = grid_counts(units_int, L).astype(float)
    psi = np.broadcast_to(np.arange(-L, L + 1) / K - mu0, w.shape)
    W = w.sum(1)
    lam_max = 1.0 / (R + mu0)
    on = w > 0

    def h(lam):
        den = 1.0 + lam[:, None] * psi
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(on, w * psi / den, 0.0)
        return np.where(on & (den <= 0), -np.inf, t).sum(1)

    num = (w * psi).sum(1)
    at_cap = h(np.full(w.shape[0], lam_max * (1 - 1e-12))) >= 0
    lo, hi = np.zeros(w.shape[0]), np.full(w.shape[0], lam_max)
    for _ in range(64):
        mid = (lo + hi) / 2
        pos = h(mid) > 0
        lo, hi = np.where(pos, mid, lo), np.where(pos, hi, mid)
    lam = np.where(at_cap, lam_max, (lo + hi) / 2)
    lam = np.where(num > 0, lam, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(on, w / (W[:, None] * (1.0 + lam[:, None] * psi)), 0.0)
    if (num <= 0).any():  # already at or below the boundary: shift the observed values (rarely claims anyway)
        pass
    p[:, 0] += np.clip(1.0 - p.sum(1), 0, None)
    return p / p.sum(1, keepdims=True)


def skew_claims(psi: np.ndarray, w: np.ndarray, worst: float, n: int) -> np.ndarray:
    """score_skew's decisions from psi (values minus the boundary) with weights w (question counts)."""
    num, wv, g = score_stat(psi, w, worst, parts=True)
    c = tcrit(n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(wv > 0, num / np.sqrt(wv * n / (n - 1)), np.where(num > 0, np.inf, 0.0))
    return z > c + np.maximum(0.0, g * (c * c - 1) / (6 * math.sqrt(n)))


def calibration(units_int: np.ndarray, R: int, K: int, M: float, sims: int, rng) -> dict[str, np.ndarray]:
    """Per data set: score_skew's claim rate on ``sims`` data sets drawn (a) from the observed differences shifted
    to mean -M (the harness's calibration today) and (b) from the rule's own boundary distribution."""
    S, n = units_int.shape
    mu0 = -M
    out = {}
    # (a) shifted: inner data sets resample the observed differences shifted to mean -M (any values: psi per question)
    idx = rng.integers(0, n, (sims, n))
    d = units_int / K
    shifted = d - d.mean(1, keepdims=True) + mu0
    psi = (shifted[:, idx] - mu0).reshape(S * sims, n)
    out["shifted"] = skew_claims(psi, np.ones_like(psi), -R - mu0, n).reshape(S, sims).mean(1)
    # (b) the rule's boundary distribution on the grid (the worst value included)
    p = tilted_null(units_int, R, K, mu0)
    L = R * K
    c = rng.multinomial(n, p, size=(sims, S)).reshape(sims * S, 2 * L + 1).astype(float)
    psi = np.broadcast_to(np.arange(-L, L + 1) / K - mu0, c.shape)
    out["tilted"] = skew_claims(psi, c, -R - mu0, n).reshape(sims, S).mean(0)
    return out


# ----------------------------------------------------------------------------------------------------------
# Grid
# ----------------------------------------------------------------------------------------------------------


def cells(quick: bool):
    ns = (12, 40) if quick else (12, 20, 40, 100)
    ties = (0.86,) if quick else (0.5, 0.7, 0.86, 0.95)
    ks = (1,) if quick else (1, 3)
    structures = ("none", "10x") if quick else ("none", "10x", "3x+7")
    for structure in structures:
        for scale, R in SCALES.items():
            for K in ks:
                for shape in ("step", "flat", "bigwin"):
                    if R * K == 1 and shape != "step":
                        continue  # binary K = 1: one shape only
                    for tie in ties:
                        for n in ns:
                            yield {"structure": structure, "scale": scale, "K": K, "shape": shape, "tie": tie, "n": n}


def run_cell(cell: dict, sims: int, power_sims: int, margin_frac: float, icc: float, seed: int, B: int,
             quick: bool) -> dict:
    R, K, n = SCALES[cell["scale"]], cell["K"], cell["n"]
    M = margin_frac * R
    rng = np.random.default_rng([seed, n, int(cell["tie"] * 100), R, K, ("step", "flat", "bigwin").index(cell["shape"]),
                                 ("none", "10x", "3x+7").index(cell["structure"])])
    labels, registered = cluster_labels(n, cell["structure"])
    G = n if labels is None else int(labels.max()) + 1
    counts = rng.multinomial(G, np.full(G, 1.0 / G), size=B)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(B, n))
    row = dict(cell)
    for label, mean, S in (("boundary", -M, sims), ("power", 0.0, power_sims)):
        p = difference_pmf(R, K, cell["tie"], mean, cell["shape"], M)
        u = draw(rng, S, n, p, labels, registered, icc)
        both1 = rng.binomial((u == 0).sum(1), 0.5) if (R * K == 1 and labels is None) else None
        claims = evaluate(u, R, K, M, labels, counts, signs, both1, quick)
        row[label] = {k: round(float(v.mean()), 4) for k, v in claims.items()}
        row[f"{label}_sims"] = S
    return row


def explicit_pmf(R: int, K: int, probs: dict[float, float]) -> np.ndarray:
    """A distribution of differences given as {difference in points: probability}, on the grid of ``difference_pmf``."""
    p = np.zeros(2 * R * K + 1)
    for x, q in probs.items():
        p[int(round(x * K)) + R * K] += q
    p[R * K] = 0.0
    p[R * K] = 1.0 - p.sum()
    return p


VALIDATION = [  # name, R, K, margin, n, structure, icc, distribution of d (the rest ties), the reported rate
    ("A: 0-2, 86% ties, losses -2, wins +1", 2, 1, 0.1, 40, "none", 0.0, {-2: 0.08, 1: 0.06}, 0.0475),
    ("A: 0-2, 86% ties, losses -2, wins +1", 2, 1, 0.1, 20, "none", 0.0, {-2: 0.08, 1: 0.06}, 0.025),
    ("A: 0-2, 86% ties, +-1 only", 2, 1, 0.1, 40, "none", 0.0, {-1: 0.12, 1: 0.02}, 0.0475),
    ("A: 0-2, 86% ties, +-1 only", 2, 1, 0.1, 20, "none", 0.0, {-1: 0.12, 1: 0.02}, 0.025),
    ("A: binary, 15% discordant", 1, 1, 0.1, 40, "none", 0.0, {-1: 0.125, 1: 0.025}, 0.034),
    ("B: 0-10, 86% ties, +-5", 10, 1, 0.5, 8, "none", 0.0, {-5: 0.12, 5: 0.02}, 0.314),
    ("B: 0-10, 86% ties, +-5", 10, 1, 0.5, 12, "none", 0.0, {-5: 0.12, 5: 0.02}, 0.240),
    ("B: 0-10, 86% ties, +-5", 10, 1, 0.5, 20, "none", 0.0, {-5: 0.12, 5: 0.02}, 0.116),
    ("C: 0-2, 3 clusters x 15 + 7 unclustered, ICC 0.41, 70% ties", 2, 1, 0.1, 52, "3x+7", 0.41,
     {-1: 0.2, 1: 0.1}, 0.085),
]


def validate(seed: int, sims: int, with_calibration: bool = True) -> dict:
    """The harness's bootstrap_and_t through judge/numbers/stats/ on this file's data sets (its pseudo-observations are
    half the rubric's range now: this file's pseudo_half; the rates reported against it were measured with one
    point, this file's "current"); the recommended rule (score_skew; clustered: score_cr_eff, a question without a
    cluster counted as a unit as the harness counts today) on the same data sets; and the harness's calibration
    line (judge.numbers.stats.calibration.calibrate, 200 data sets, 2,000 resamples) averaged over the current rule's
    claims (at most 40 per scenario)."""
    from judge.numbers.stats.calibration import calibrate
    from judge.numbers.stats.decision_rules.interval import claims
    from judge.numbers.stats.paired import paired
    from judge.numbers.stats.rule import Scale
    rows = []
    for name, R, K, M, n, structure, icc, probs, reported in VALIDATION:
        rng = np.random.default_rng([seed, n, R, int(M * 100)])
        p = explicit_pmf(R, K, probs)
        labels, registered = cluster_labels(n, structure)
        u = draw(rng, sims, n, p, labels, registered, icc or 0.4)
        G = n if labels is None else int(labels.max()) + 1
        counts = rng.multinomial(G, np.full(G, 1.0 / G), size=2000)
        mine = evaluate(u, R, K, M, labels, counts, None, quick=True)
        names = None if labels is None else [f"c{c}" if c < registered else f"q{i}" for i, c in enumerate(labels)]
        theirs = np.zeros(sims, dtype=bool)
        for s in range(sims):  # the harness's bootstrap_and_t: pseudo-observations of half the range (R / 2)
            r = paired([0] * n, [int(x) for x in u[s]], resamples=10_000, seed=seed + s, alpha=ALPHA,
                             margin=M, clusters=names, rule="bootstrap_and_t", scale=Scale(0, R, K))
            theirs[s] = claims("non_inferiority", M, r.bound, r.upper) and (
                labels is None or r.units >= MIN_CLUSTERS)
        rate = float(theirs.mean())
        cal = [calibrate([0] * n, [int(x) for x in u[s]], "non_inferiority", M, alpha=ALPHA, method="percentile",
                               resamples=2000, rule="bootstrap_and_t", sims=200, seed=seed, ceiling=2 * ALPHA,
                               clusters=names, scale=Scale(0, R, K)).rate
               for s in np.nonzero(theirs)[0][:40]] if with_calibration else []
        copy = mine["pseudo_half"]  # this file's copy of it (with clusters its guard is not the harness's CR1 one)
        rows.append({"scenario": name, "n": n, "reported": reported,
                     "judge.numbers.stats bootstrap_and_t": round(rate, 4),
                     "mc_se": round(math.sqrt(max(rate * (1 - rate), 1e-9) / sims), 4),
                     "this file pseudo_half": round(float(copy.mean()), 4),
                     "same decision": round(float(np.mean(theirs == copy)), 4) if labels is None else None,
                     "recommended rule": round(float(mine["score_skew" if labels is None else
                                                          "score_cr_eff"].mean()), 4),
                     "calibration over claims": round(float(np.mean(cal)), 4) if cal else None})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return {"sims": sims, "validate": rows}


def validate_score(seed: int, sims: int) -> dict:
    """The wired rule against this file's copy: data sets from grid cells (boundary), each decided by
    judge.numbers.stats.paired's ``paired(rule="score")`` (the test at -M that numbers.json records) and by score_skew
    (independent questions) or score_cr_eff (clusters; questions without one as units of their own). Also the wired
    decision's false-claim rate, which counts only registered clusters against ``min_clusters`` (3x+7: never claims)."""
    from fractions import Fraction

    from judge.numbers.stats.decide import decide
    from judge.numbers.stats.decision_rules.score import score_test_at
    from judge.numbers.stats.paired import paired
    from judge.numbers.stats.rule import Scale, cluster_units
    from registration.vocabulary import CLAIMS
    rows = []
    for structure in ("none", "10x", "3x+7"):
        for scale, R in SCALES.items():
            for K in (1, 3):
                for shape, tie, n in (("step", 0.86, 40), ("flat", 0.7, 20), ("bigwin", 0.5, 100), ("flat", 0.95, 100)):
                    if R * K == 1 and shape != "step":
                        continue
                    M = 0.05 * R
                    rng = np.random.default_rng([seed, n, R, K, ("step", "flat", "bigwin").index(shape)])
                    labels, registered = cluster_labels(n, structure)
                    u = draw(rng, sims, n, difference_pmf(R, K, tie, -M, shape, M), labels, registered, 0.4)
                    if labels is None:
                        mine = score_skew(u, R, K, -M)
                    else:
                        mine = score_cr(u, *unit_sums(u, labels), R, K, -M)["score_cr_eff"]
                    of = None if labels is None else [f"c{c}" if c < registered else None for c in labels]
                    units = None if of is None else cluster_units(of)[0]
                    theirs, decided = np.zeros(sims, dtype=bool), np.zeros(sims, dtype=bool)
                    for k in range(sims):
                        d = [Fraction(int(x), K) for x in u[k]]
                        p = paired([0] * n, d, resamples=100, alpha=ALPHA, margin=M, clusters=units,
                                         rule="score", scale=Scale(0, R, K))
                        theirs[k] = score_test_at(p, "lower", -float(Fraction(repr(M))))["claims"]
                        decided[k] = (decide(p, "non_inferiority", M).verdict in CLAIMS["non_inferiority"]
                                      and (of is None or len({c for c in of if c}) >= MIN_CLUSTERS))
                    rows.append({"structure": structure, "scale": scale, "K": K, "shape": shape, "tie": tie, "n": n,
                                 "same decision": round(float(np.mean(theirs == mine)), 4),
                                 "this file": round(float(mine.mean()), 4),
                                 "judge.numbers.stats score": round(float(theirs.mean()), 4),
                                 "wired decision": round(float(decided.mean()), 4)})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return {"sims": sims, "validate_score": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--validate", action="store_true", help="bootstrap_and_t through judge/numbers/stats/")
    ap.add_argument("--validate-score", action="store_true",
                    help="the wired score rule through judge/numbers/stats/ against this file's copy")
    ap.add_argument("--calibration", action="store_true",
                    help="the recommended rule's calibration lines against the truth")
    ap.add_argument("--sims", type=int, default=None, help="data sets per boundary cell (default 2000)")
    ap.add_argument("--power-sims", type=int, default=None, help="data sets per power cell (default 1000)")
    ap.add_argument("--margin-frac", type=float, default=0.05)
    ap.add_argument("--icc", type=float, default=0.4)
    ap.add_argument("--resamples", type=int, default=None, help="bootstrap resamples per data set (default 1000)")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--exact-binary", action="store_true", help="the score rules' exact rates on paired binary scores")
    ap.add_argument("--table", metavar="JSON", help="print the markdown tables of a saved full run's output")
    ap.add_argument("--only", nargs="*", default=[], metavar="KEY=VALUE",
                    help="restrict the grid, e.g. --only structure=10x scale=binary K=3 shape=flat tie=0.86 n=100")
    args = ap.parse_args()
    only = dict(x.split("=", 1) for x in args.only)
    t0 = time.perf_counter()
    if args.exact_binary:
        print(json.dumps({"exact_binary": exact_binary(args.margin_frac)}, indent=1))
        return
    if args.table:
        with open(args.table) as f:
            print(markdown(json.load(f)))
        return
    if args.validate:
        out = validate(args.seed, args.sims or (40 if args.quick else 1000), with_calibration=not args.quick)
        out["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(out, indent=1))
        return
    if args.validate_score:
        out = validate_score(args.seed, args.sims or (20 if args.quick else 300))
        out["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(out, indent=1))
        return
    if args.calibration:
        out = calibration_table(args)
        out["seconds"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(out, indent=1))
        return
    sims = args.sims or (300 if args.quick else 2000)
    power_sims = args.power_sims or (200 if args.quick else 1000)
    B = args.resamples or (300 if args.quick else 1000)
    rows = []
    for cell in cells(args.quick):
        if any(str(cell[k]) != v for k, v in only.items()):
            continue
        t1 = time.perf_counter()
        row = run_cell(cell, sims, power_sims, args.margin_frac, args.icc, args.seed, B, args.quick)
        row["seconds"] = round(time.perf_counter() - t1, 2)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps({"alpha": ALPHA, "goal": CEIL, "margin_frac": args.margin_frac, "icc": args.icc,
                      "sims": sims, "power_sims": power_sims, "resamples": B, "min_clusters": MIN_CLUSTERS,
                      "summary": summarise(rows, sims),
                      "rows": rows,
                      "seconds": round(time.perf_counter() - t0, 1)}, indent=1))


def summarise(rows: list[dict], sims: int) -> dict:
    """Per rule: worst boundary rate over cells with n >= 12, cells above the goal by more than 2 and 3 MC
    standard errors (SE at the goal: sqrt(0.03 x 0.97 / sims)), and mean power."""
    se = math.sqrt(CEIL * (1 - CEIL) / sims)
    out = {"mc_se_at_goal": round(se, 4), "flag_2se": round(CEIL + 2 * se, 4), "flag_3se": round(CEIL + 3 * se, 4)}
    rules = sorted({k for r in rows for k in r["boundary"]})
    for rule in rules:
        have = [r for r in rows if rule in r["boundary"]]
        worst = max(have, key=lambda r: r["boundary"][rule])
        out[rule] = {"cells": len(have), "worst": worst["boundary"][rule],
                     "worst_cell": {k: worst[k] for k in ("structure", "scale", "K", "shape", "tie", "n")},
                     "over_2se": sum(r["boundary"][rule] > CEIL + 2 * se for r in have),
                     "over_3se": sum(r["boundary"][rule] > CEIL + 3 * se for r in have),
                     "mean_power": round(float(np.mean([r["power"][rule] for r in have])), 4)}
    return out


def exact_binary(margin_frac: float) -> list[dict]:
    """score_z's, score_t's and score_skew's false-claim rates on paired binary scores (K = 1, independent
    questions) computed exactly: a data set's decision depends only on its counts of losses, ties and wins, so every
    composition with probability above 1e-12 is decided once and weighted by its multinomial probability."""
    out = []
    for tie in (0.5, 0.7, 0.86, 0.95):
        p = difference_pmf(1, 1, tie, -margin_frac, "step")
        for n in (12, 20, 40, 100):
            comp = np.array([(loss, n - loss - win, win) for loss in range(n + 1) for win in range(n + 1 - loss)])
            logp = (math.lgamma(n + 1) - special.gammaln(comp + 1).sum(1)
                    + (comp * np.log(np.where(p > 0, p, 1.0))).sum(1))
            keep = (np.exp(logp) > 1e-12) & ((p > 0) | (comp == 0)).all(1)
            comp, prob = comp[keep], np.exp(logp[keep])
            psi = np.broadcast_to(np.array([-1.0, 0.0, 1.0]) + margin_frac, comp.shape)
            z = score_stat(psi, comp.astype(float), -1.0 + margin_frac)
            t_rate = float(prob @ (z * math.sqrt((n - 1) / n) > tcrit(n - 1)))
            skew = float(prob @ skew_claims(psi, comp.astype(float), -1.0 + margin_frac, n))
            out.append({"tie": tie, "n": n, "score_z": round(float(prob @ (z > ZCRIT)), 4), "score_t": round(t_rate, 4),
                        "score_skew": round(skew, 4), "neglected": f"{max(0.0, 1 - prob.sum()):.1e}"})
    return out


SUMMARY_RULES = ("wald_t", "bootstrap", "current", "pseudo_half", "pseudo_range", "t_floor", "studentized",
                 "signflip", "hoeffding", "bernstein", "betting", "newcombe", "score_z", "score_t", "score_skew",
                 "cr1_t", "cr1_range", "score_cl", "score_cr", "score_cr_skew", "score_cr_df", "score_cr0",
                 "score_deff", "score_cr_eff")


def markdown(run: dict) -> str:
    """The tables of BENCHMARKS.md from a full run's JSON."""
    rows, sims = run["rows"], run["sims"]
    se = math.sqrt(CEIL * (1 - CEIL) / sims)
    flag = CEIL + 2 * se
    out = ["Per rule and cluster structure: the worst false-claim rate over the cells (n >= 12), how many cells exceed",
           f"{CEIL:.3f} by more than 2 Monte Carlo SE (> {flag:.4f}), and the mean power over the same cells.",
           "", "| rule | clusters | cells | worst rate | worst cell | cells > goal + 2 SE | mean power |",
           "|---|---|---|---|---|---|---|"]
    for rule in SUMMARY_RULES:
        for structure in ("none", "10x", "3x+7"):
            have = [r for r in rows if r["structure"] == structure and rule in r["boundary"]]
            if not have:
                continue
            w = max(have, key=lambda r: r["boundary"][rule])
            where = f"{w['scale']} K={w['K']} {w['shape']} ties {w['tie']:.0%} n={w['n']}"
            over = sum(r["boundary"][rule] > flag for r in have)
            power = float(np.mean([r["power"][rule] for r in have]))
            out.append(f"| {rule} | {structure} | {len(have)} | {w['boundary'][rule]:.3f} | {where} | {over} | "
                       f"{power:.3f} |")
    for structure, rule in (("none", "score_skew"), ("10x", "score_cr_eff")):
        ns = sorted({r["n"] for r in rows})
        out += ["", f"**{rule}**, clusters: {structure}. Each cell: false-claim rate at the boundary / power at a true "
                    "difference of", "0 (the current rule's in brackets).", "",
                "| scale | K | shape | ties | " + " | ".join(f"n = {n}" for n in ns) + " |",
                "|---|---|---|---|" + "---|" * len(ns)]
        keys = []
        for r in rows:
            k = (r["scale"], r["K"], r["shape"], r["tie"])
            if r["structure"] == structure and k not in keys:
                keys.append(k)
        for k in keys:
            cells_ = {r["n"]: r for r in rows if r["structure"] == structure and
                      (r["scale"], r["K"], r["shape"], r["tie"]) == k}
            out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]:.0%} | " + " | ".join(
                f"{c['boundary'][rule]:.3f} / {c['power'][rule]:.2f} ({c['boundary']['current']:.3f} / "
                f"{c['power']['current']:.2f})" for c in (cells_[n] for n in ns)) + " |")
    return "\n".join(out)


def calibration_table(args) -> dict:
    outer = args.sims or (100 if args.quick else 300)
    inner = 100
    rows = []
    for cell in cells(args.quick):
        if cell["structure"] != "none" or cell["K"] != 1:
            continue
        R, K, n = SCALES[cell["scale"]], cell["K"], cell["n"]
        M = args.margin_frac * R
        rng = np.random.default_rng([args.seed, n, int(cell["tie"] * 100), R, 7])
        p = difference_pmf(R, K, cell["tie"], -M, cell["shape"], M)
        truth_u = draw(rng, 4000, n, p, None, 0, args.icc)
        claims_all = score_skew(truth_u, R, K, -M)
        truth = float(np.mean(claims_all))
        u = truth_u[:outer]
        claimed = claims_all[:outer]
        cal = calibration(u, R, K, M, inner, rng)
        row = dict(cell, truth=round(truth, 4))
        for k, v in cal.items():
            row[f"{k}_mean"] = round(float(v.mean()), 4)
            row[f"{k}_over_claims"] = round(float(v[claimed].mean()), 4) if claimed.any() else None
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return {"outer": outer, "inner": inner, "rows": rows}


if __name__ == "__main__":
    main()
