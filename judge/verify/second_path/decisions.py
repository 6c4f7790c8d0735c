"""verify's second path, its first module: numbers.json's cells, comparisons, subsets and judges recomputed from the
raw files by its own code (the judge against gold in judge_error, the judge biases in biases).

Written from the definitions (docs/explanation; docs/statistics-reference.md; BENCHMARKS.md, type-I grid), never
from the main path: it imports nothing of judge/ (judge.numbers.stats, judge.numbers.analysis; tests/test_layers.py
follows its imports, lazy and indirect ones included), only lower layers: the decision vocabulary
(registration.vocabulary), the rubric's scale, core.jsonl's line reader. Plain Python, one question at a time (no tally
of distinct values), exact Fractions wherever a decision compares, and its own distributions:

* the raw files read by hand (``by_hand``): the retry rule of answers.jsonl and judgments.jsonl (a key's last
  record is its current one; every earlier record of the key is an `error` superseded by the next, whose
  `retry_of` is its line) walked record by record, not through core.jsonl.current, every breach a finding naming
  file, line and field; then every cell's counts and means, each comparison and subset decided again
  (``independent``), and each judge's means, agreement, length bias and pairwise counts (``independent_judges``);

* the bootstrap (``draw``, ``check_paired``): the resamples drawn again by the documented scheme (counts per
  distinct unit, numpy's multinomial from the registered seed), every resample mean an exact Fraction, hand-sorted
  quantiles, BCa with ``statistics.NormalDist``; the sign test by math.comb; the t interval and test by a
  closed-form Student t CDF for integer degrees of freedom; the guard of rule "bootstrap_and_t", CR1 over clusters
  by hand;
* the score rule (``one_sided``, ``lower_bound``, ``boundary_tests``): floats with bisection for the tilt lambda and
  its own Student t for any degrees of freedom (the regularized incomplete beta function by its continued
  fraction), Satterthwaite's included::

    psi_i = d_i - mu0, worst = -R - mu0, R = hi - lo of the rubric's scale
    lambda in [0, 1/(R + mu0)] with sum_i psi_i / (1 + lambda psi_i) = 0 (the cap when the sum stays >= 0)
    p_i = 1 / (n (1 + lambda psi_i)), p_worst = 1 - sum p_i; V0, skewness g of that boundary distribution
    T = sum psi_i / sqrt(S G / (G - 1)), S = n V0, or the CR1 sum of squared cluster residuals when larger
    claim iff T > t_{df, 1 - alpha} + max(0, g (t^2 - 1) / (6 sqrt G))

* one comparison decided by the rule the registration names (``comparison``, ``verdict``), and Miller's
  cluster-robust SE;
* the judges' agreement: quadratic kappa and its bootstrap, Krippendorff's ordinal alpha, Spearman's rho by ranks,
  the length regression's normal equations.

judge.verify.checks compares what this path gives with numbers.json. The calibration (thousands of simulated decisions)
is recomputed by the main path's function on this path's inputs (judge.verify.checks passes it in), and the power
figures by the main path only.
"""
from __future__ import annotations

import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from core import jsonl
from registration.rubric import load_rubric, rubric_dir
from registration.vocabulary import KINDS, METHODS, RULES

from . import contamination

# ---------------------------------------------------------------- the score rule

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


# ---------------------------------------------------------------- the bootstrap, sign and t tests

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


def _t_crit(q: float, nu: int) -> float:
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


def _t_interval(d: list[float], alpha: float) -> tuple[float, float]:
    if min(d) == max(d):
        return d[0], d[0]
    mean, se = statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))
    crit = _t_crit(1 - alpha, len(d) - 1)
    return mean - crit * se, mean + crit * se


def _cr1_interval(groups: list[list], alpha: float, step: float) -> tuple[float, float]:
    """The clustered guard by hand: CR1 t interval of the mean over the units plus a pseudo-unit of -step and one
    of +step, each of the mean unit size; G + 1 degrees of freedom (G units)."""
    size = sum(g[1] for g in groups) / len(groups)
    pairs = [(float(g[0]), float(g[1])) for g in groups] + [(-step * size, size), (step * size, size)]
    total = math.fsum(m for _, m in pairs)
    mean = math.fsum(s for s, _ in pairs) / total
    cr1 = math.fsum((s - m * mean) ** 2 for s, m in pairs)
    half = _t_crit(1 - alpha, len(pairs) - 1) * math.sqrt(len(pairs) / (len(pairs) - 1) * cr1) / total
    return mean - half, mean + half


def check_paired(a, b, resamples: tuple, method: str, alpha: float, margin: float | None = None,
                 clusters: Sequence | None = None, rule: str = "bootstrap", step: float = 1.0) -> dict:
    """Independent recomputation of paired() on the same resamples (plain Python, exact Fractions).

    `resamples` is (kinds, counts), as ``draw`` gives them. The check groups the differences into questions or
    clusters itself and refuses resamples that do not describe them. Returns the fields numbers.json records for a
    comparison except the power figures (mde, n_for_margin), which only the main path computes, and, for rule
    "score", the score test's bound, upper end and tests (``comparison`` adds those); ``step`` is the guard's
    pseudo-observation (half the rubric's range) for rule "bootstrap_and_t".
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
    bound, upper, g_low, g_high = ci_low, ci_high, None, None
    if rule == "bootstrap_and_t":
        g_low, g_high = (_t_interval(d + [-float(step), float(step)], alpha) if clusters is None else
                         _cr1_interval(list(groups.values()), alpha, float(step)))
        bound, upper = min(ci_low, g_low), max(ci_high, g_high)

    mean_d = float(sum(ed) / n)
    sd = 0.0 if constant else statistics.stdev(d)
    se = sd / math.sqrt(n)
    up = sum(1 for x in d if x > 0)
    down = sum(1 for x in d if x < 0)
    t_low, t_high = _t_interval(d, alpha)
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
        "bound": bound,
        "upper": upper,
        "guard_low": g_low,
        "guard_high": g_high,
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
        "rule": rule,
    }


# ---------------------------------------------------------------- one comparison decided


def comparison(a: Sequence, b: Sequence, *, alpha: float, margin: float, rule: str, method: str, resamples: int,
               seed: int, scale: tuple[int, int, int], labels: Sequence | None = None) -> dict[str, Any]:
    """One comparison (b vs a, per-question means as Fractions) as numbers.json records its result, recomputed:
    the bootstrap on resamples drawn again from the registered seed, and for rule "score" the score tests and the
    bounds they give. ``scale``: the rubric's lowest and highest score and the samples per question; ``labels``:
    each question's resampling unit, or None when no question has a cluster."""
    if rule not in RULES or method not in METHODS:
        raise ValueError(f"rule must be one of {RULES} and method one of {METHODS}, got {rule!r}, {method!r}")
    lo, hi, samples = scale
    d = [y - x for x, y in zip(a, b, strict=True)]
    units: list[tuple] = [(x, 1) for x in d]
    if labels is not None:
        grouped: dict[Any, list] = {}
        for x, c in zip(d, labels, strict=True):
            g = grouped.setdefault(c, [Fraction(0), 0])
            g[0] += x
            g[1] += 1
        units = [(s, m) for s, m in grouped.values()]
    out = check_paired(a, b, draw(units, resamples, seed), method, alpha, margin=margin, clusters=labels,
                       rule="bootstrap" if rule == "score" else rule, step=(hi - lo) / 2)
    out["rule"], out["scale"], out["tests"] = rule, [lo, hi, samples], None
    if rule == "score":
        m = Fraction(repr(float(margin))) if margin else Fraction(0)
        out["tests"] = boundary_tests(d, m, hi - lo, alpha, labels)
        if out["tests"]:
            out["bound"] = lower_bound(d, hi - lo, alpha, labels)
            out["upper"] = -lower_bound([-x for x in d], hi - lo, alpha, labels)
        else:
            out["bound"], out["upper"] = float(lo - hi), float(hi - lo)
    return out


def verdict(kind: str, margin: float, result: dict[str, Any]) -> str:
    """A comparison's verdict by its rule, before the registered guards: the score tests', or the interval's
    (``bound``, ``upper``) against the margin."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if result["rule"] == "score":
        return tests_verdict(kind, margin, result["tests"])
    bound, upper = result["bound"], result["upper"]
    if kind == "equivalence":
        return ("equivalent" if bound > -margin and upper < margin else
                "not equivalent" if bound >= margin or upper <= -margin else "inconclusive")
    if bound > 0:
        return "superior"
    return "non-inferior" if kind == "non_inferiority" and bound > -margin else "not shown"


def clustered_se(d: list[float], labels: list[str]) -> float | None:
    """Miller's cluster-robust SE of the mean difference; None with one cluster, where it is undefined."""
    if len(set(labels)) < 2:
        return None
    mean = math.fsum(d) / len(d)
    sums: dict[str, float] = defaultdict(float)
    for x, c in zip(d, labels, strict=False):
        sums[c] += x - mean
    return math.sqrt(math.fsum(v * v for v in sums.values())) / len(d)


# ---------------------------------------------------------------- the raw files read by hand, numbers.json again


@dataclass(frozen=True)
class Final:
    """A raw file read by hand under the retry rule: each key's last record, how many records each key
    has, and every breach of the rule (file, line, field)."""

    last: dict[tuple, dict]
    records: dict[tuple, int]
    problems: list[str]


BULK = ("attempts", "calls", "raw_output", "trace", "effective", "settings")  # kept on disk, never recomputed from
# the answer fields verify reads (the main path's records are not imported here)
VERIFY_ANSWER_FIELDS = ("row", "arm", "quant", "question_id", "sample", "status", "text", "truncated")


def _error_kind(rec: dict) -> str:
    """An error record's cause: an answer's `error.kind`, a verdict's last attempt's `error.kind`; else `other`."""
    err = rec.get("error")
    if "attempts" in rec:
        last = (rec["attempts"] or [None])[-1]
        err = last.get("error") if isinstance(last, dict) else None
    return (err.get("kind") if isinstance(err, dict) else None) or "other"


def _kind(j: dict) -> str:
    """What a verdict judged, read by hand: its `kind`, or in a folder written before verdicts carried one, a pair
    label's P (single answers' labels start with L). Never the rubric's name: any name must verify."""
    return j.get("kind") or ("pairwise" if str(j.get("label", "")).startswith("P") else "single")


def by_hand(path: Path, key: tuple[str, ...], fields: tuple[str, ...] | None = None) -> Final:
    """Walk the raw records in file order, keep each key's last one (only `fields` if given, and never the
    BULK fields: 100,000 records' raw outputs need not be held in memory; an error record keeps its cause
    as `error_kind` instead), and check every later record of a key against the one before it: that one
    must be an `error`, and `retry_of` must be its line."""
    last: dict[tuple, tuple[int, dict]] = {}
    records: dict[tuple, int] = defaultdict(int)
    problems: list[str] = []
    for no, rec in jsonl.read(path):
        k = tuple(rec.get(f) for f in key)
        what = " ".join(f"{f}={v}" for f, v in zip(key, k, strict=False))
        retry_of = rec.get("retry_of")
        if k in last:
            line, prev = last[k]
            if prev.get("status") != "error":
                problems.append(f"{path}:{no}: field {key[-1]!r}: a duplicate record of {what}: line {line} already "
                                f"holds its {prev.get('status')!r} record, and only an error record may be "
                                "superseded by a retry")
            if not (type(retry_of) is int and retry_of == line):
                problems.append(f"{path}:{no}: field 'retry_of': reads {retry_of!r}, but the record of {what} it "
                                f"supersedes is at line {line}")
        elif retry_of is not None:
            problems.append(f"{path}:{no}: field 'retry_of': reads {retry_of!r}, but no earlier record of {what} "
                            "exists for it to retry")
        # keys from `fields` or interned: 100,000 records then share one copy of each field name
        kept = {f: rec[f] for f in fields if f in rec} if fields else {sys.intern(f): v for f, v in rec.items()
                                                                     if f not in BULK}
        if rec.get("status") == "error":
            kept["error_kind"] = sys.intern(_error_kind(rec))
        last[k] = (no, kept)
        records[k] += 1
    return Final({k: rec for k, (_, rec) in last.items()}, dict(records), problems)


def rubric_scale(exp) -> tuple[int, ...]:
    """The registered rubric's scale points: the scores a verdict can take, from the registration, never from the
    numbers being checked."""
    return tuple(load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)).scale)


def independent(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                clusters: dict[str, str | None], answer_rows: Final, verdicts: Final, calibration: Callable) -> dict:
    """Recompute the numeric heart of numbers.json with plain loops (no judge.numbers.analysis code). ``calibration`` is
    the one recomputation this path does not do by its own code (thousands of simulated decisions): judge.verify.checks
    passes the main path's judge.numbers.stats.calibration.calibrate, called here on this path's own inputs. The
    calibration is a diagnostic: it withdraws no claim."""
    keys = {r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
    judge = run["judge"]["primary"]
    per: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    status: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    kinds: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # (cell, "answer"/"judge") -> kind -> n
    for j in verdicts.last.values():
        if j["judge"] != judge or _kind(j) != "single" or j["label"] not in keys:
            continue  # a label blinding.jsonl does not hold: the main path refuses the raw files, a finding
        k = keys[j["label"]]
        cell = (k["arm"], k["quant"])
        status[cell][j["status"]] += 1
        if j["status"] == "error":
            kinds[(cell, "judge")][j["error_kind"]] += 1
        if j["status"] == "scored":
            per[cell][k["question_id"]].append(j["score"])
            counts[cell][str(j["score"])] += 1
            status[cell]["harmful"] += (j.get("fields") or {}).get("harmful") is True
    answers = defaultdict(lambda: defaultdict(int))
    for k, a in answer_rows.last.items():
        if a["arm"] in run["arms"] and a["question_id"] in questions:
            cell = answers[(a["arm"], a["quant"])]
            cell["n"] += 1
            cell["error"] += a["status"] == "error"
            if a["status"] == "error":
                kinds[((a["arm"], a["quant"]), "answer")][a["error_kind"]] += 1
            cell["retried"] += answer_rows.records[k] > 1
            cell["truncated"] += bool(a.get("truncated"))
            if a["status"] == "ok":
                cell["ok"] += 1
                cell["words"] += len((a.get("text") or "").split())
    marks = defaultdict(lambda: defaultdict(int))
    for k in keys.values():
        marks[(k["arm"], k["quant"])]["scrubbed"] += k["scrubbed"]
        marks[(k["arm"], k["quant"])]["injection"] += k.get("injection", 0) > 0
    qmeans = {cell: {q: Fraction(sum(v), len(v)) for q, v in qs.items()} for cell, qs in per.items()}
    out: dict[str, Any] = {"cells": [], "comparisons": []}
    points = rubric_scale(exp)
    # the cells and hypotheses are the bound scope's and the registration's, never numbers.json's: an edited name
    # there is a cell or comparison this path does not produce (a finding), never one it looks up
    for cell in [(arm, quant) for arm in run["arms"] for quant in exp.arm(arm).quants]:
        m = qmeans.get(cell, {})
        out["cells"].append({"arm": cell[0], "quant": cell[1], "answers": answers[cell]["n"],
                             "answer_errors": answers[cell]["error"], "answer_retries": answers[cell]["retried"],
                             "answer_error_kinds": dict(kinds[(cell, "answer")]),
                             "scored": status[cell]["scored"],
                             "unscored": status[cell]["unscored"], "judge_errors": status[cell]["error"],
                             "judge_error_kinds": dict(kinds[(cell, "judge")]),
                             "harmful": status[cell]["harmful"], "questions_scored": len(m),
                             "score_counts": {str(v): counts[cell][str(v)] for v in points},
                             "truncated": answers[cell]["truncated"], "scrubbed": marks[cell]["scrubbed"],
                             "injection_flagged": marks[cell]["injection"],
                             "mean_words": (answers[cell]["words"] / answers[cell]["ok"]
                                            if answers[cell]["ok"] else None),
                             "mean": (math.fsum(m.values()) / len(m)) if m else None})
    an, rule = run["analysis"], exp.analysis.rule
    lo, hi = min(points), max(points)

    def labels(ids: list[str]) -> list[tuple] | None:
        """Each question's unit: its registered cluster, or itself when it has none; None when none has one."""
        if not any(clusters[q] for q in ids):
            return None
        return [("cluster", clusters[q]) if clusters[q] else ("question", q) for q in ids]

    def registered(ids: list[str]) -> int | None:
        return len({clusters[q] for q in ids if clusters[q]}) if labels(ids) else None

    def check(a_m: dict, b_m: dict, ids: list[str], alpha: float, margin: float, h) -> dict | None:
        if len(ids) < 2:
            return None
        return comparison([a_m[q] for q in ids], [b_m[q] for q in ids], alpha=alpha, margin=margin,
                                      rule=rule, method=an["method"], resamples=an["resamples"], seed=an["seed"],
                                      scale=(lo, hi, max(exp.arm(h.a).samples, exp.arm(h.b).samples)),
                                      labels=labels(ids))

    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    stored_subsets = {s["id"]: s for s in numbers["subsets"]}
    stored = {c["id"]: c for c in numbers["comparisons"]}
    by_cell = {(x["arm"], x["quant"]): x for x in out["cells"]}
    for h in hyps:
        a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
        out_ = contamination.left_out(exp, h)
        tags = sorted({t for q, ts in questions.items() if all(x in ts for x in h.subset) and q not in out_
                       for t in ts} - set(h.subset))
        for tag in tags:
            ids = [q for q, ts in questions.items() if all(x in ts for x in h.subset) and tag in ts
                   and q in a_m and q in b_m and q not in out_]
            chk = check(a_m, b_m, ids, h.alpha / len(tags), h.margin, h)
            shown = (stored_subsets.get(f"{h.id} [{tag}]") or {}).get("result") or chk
            out.setdefault("subsets", []).append({"id": f"{h.id} [{tag}]", "tests": len(tags), "paired_questions": ids,
                                                  "result": chk and {k: v for k, v in chk.items() if k in shown}})
    for h in hyps:
        c = stored.get(h.id) or {}
        a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
        ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a_m and q in b_m
               and q not in contamination.left_out(exp, h)]
        entry: dict[str, Any] = {"id": h.id, "paired_questions": ids}
        if len(ids) >= 2:
            chk = check(a_m, b_m, ids, h.alpha, h.margin, h)
            entry["result"] = {k: v for k, v in chk.items() if k in (c.get("result") or {})}
            lab = labels(ids)
            entry["clusters"] = registered(ids)
            entry["clustered_se"] = (clustered_se([float(b_m[q] - a_m[q]) for q in ids], lab)
                                     if lab and len(set(lab)) > 1 else None)
            cap = exp.analysis.calibration_ceiling
            cal = calibration([a_m[q] for q in ids], [b_m[q] for q in ids], h.kind, h.margin, alpha=h.alpha,
                              method=an["method"], resamples=an["resamples"], rule=rule,
                              sims=exp.analysis.calibration_sims, seed=an["seed"],
                              ceiling=float(cap) if cap is not None else 2 * h.alpha, clusters=lab,
                              scale=chk["scale"])
            entry["calibration"] = cal.to_dict()
            rates = []
            for arm in (h.a, h.b):
                cc = by_cell[(arm, h.quant)]
                miss = cc["answer_errors"] + cc["unscored"] + cc["judge_errors"]
                rates.append(miss / cc["answers"] if cc["answers"] else 1.0)
            said = verdict(h.kind, h.margin, chk)
            too_few = lab is not None and entry["clusters"] < exp.analysis.min_clusters
            entry["verdict"] = "inconclusive" if max(rates) > an["max_unscored"] or too_few else said
        else:
            entry["verdict"] = "inconclusive"
        out["comparisons"].append(entry)
    if exp.contamination is not None:  # each hypothesis about a trained arm decided again on its clean questions
        bad, files = contamination.contaminated_once(exp)
        clean = []
        again = exp.contamination.decide == "both"  # under "clean_only" the comparisons above are the clean ones
        for h in (h for h in hyps if again and {h.a, h.b} & set(exp.contamination.arms)):
            a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
            qs = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q not in bad]
            ids = [q for q in qs if q in a_m and q in b_m]
            chk = check(a_m, b_m, ids, h.alpha, h.margin, h)
            said = verdict(h.kind, h.margin, chk) if chk else "inconclusive"
            shown = next((x for x in (numbers.get("contamination") or {}).get("comparisons", []) if x["id"] == h.id),
                         {}).get("result") or chk
            clean.append({"id": h.id, "questions": len(qs), "paired_questions": ids,
                          "result": chk and {k: v for k, v in chk.items() if k in shown}, "verdict": said,
                          "all_questions_verdict": stored.get(h.id, {}).get("verdict"),
                          "differs": said != stored.get(h.id, {}).get("verdict")})
        out["contamination"] = contamination.section(exp, bad, files, clean)
    return out


def independent_judges(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                       answer_rows: Final, verdicts: Final) -> dict:
    """Per-judge means, agreement (exact, quadratic kappa), length bias and pairwise counts, by plain loops."""
    keys, pairs = {}, {}
    for _, r in jsonl.read(run_dir / "blinding.jsonl"):
        (pairs if r.get("type") == "pair" else keys)[r["label"]] = r
    text = {a["row"]: a.get("text") or "" for a in answer_rows.last.values()}
    judgments = list(verdicts.last.values())
    panel = run["judge"]["panel"]
    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    out: dict[str, Any] = {"means": {}, "length_bias": {}, "pairwise": {}}
    scored: dict[str, dict[str, int]] = {}
    for name in panel:
        rows = [(keys[j["label"]], j["score"]) for j in judgments if j["judge"] == name
                and _kind(j) == "single" and j["status"] == "scored" and j["label"] in keys]
        scored[name] = {k["label"]: sc for k, sc in rows}
        by_cell: dict[str, list[int]] = defaultdict(list)
        for k, sc in rows:
            by_cell[f"{k['arm']}/{k['quant']}"].append(sc)
        out["means"][name] = {c: math.fsum(v) / len(v) for c, v in by_cell.items()}
        pts = [(k["arm"], k["quant"], len(text.get(k["row"], "").split()), sc) for k, sc in rows]
        lb: dict[str, Any] = {"answers": len(pts), "comparisons": []}
        if len(pts) >= 3 and len({p[2] for p in pts}) > 1 and len({p[3] for p in pts}) > 1:
            lb["length_spearman"] = pearson(ranks([p[2] for p in pts]),
                                                        ranks([p[3] for p in pts]))
        for h in hyps:
            sel = [(p[0] == h.b, math.log1p(p[2]), p[3]) for p in pts if p[1] == h.quant and p[0] in (h.a, h.b)]
            sa, sb = [s for isb, _, s in sel if not isb], [s for isb, _, s in sel if isb]
            entry: dict[str, Any] = {"id": h.id, "raw_difference": None, "length_adjusted_difference": None}
            if sa and sb:
                entry["raw_difference"] = math.fsum(sb) / len(sb) - math.fsum(sa) / len(sa)
                xs = [[1.0, float(isb), ll] for isb, ll, _ in sel]
                xtx = [[math.fsum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
                xty = [math.fsum(x[i] * s for x, (_, _, s) in zip(xs, sel, strict=False)) for i in range(3)]
                beta = solve3(xtx, xty)
                entry["length_adjusted_difference"] = beta[1] if beta else None
            lb["comparisons"].append(entry)
        out["length_bias"][name] = lb
        if pairs:
            rows_p = []
            verdicts = {j["label"]: j for j in judgments if j["judge"] == name and _kind(j) == "pairwise"}
            for h in hyps:
                per_q: dict[str, list] = defaultdict(list)
                for label, k in pairs.items():
                    if k["hypothesis"] == h.id and label in verdicts:
                        v = verdicts[label]
                        w = None if v["status"] != "scored" else {0: "tie", 1: k["first"], 2: k["second"]}[v["score"]]
                        per_q[k["question_id"]].append(w)
                both = {q: ws for q, ws in per_q.items() if len(ws) == 2 and None not in ws}
                final = [ws[0] if ws[0] == ws[1] else "tie" for ws in both.values()]
                rows_p.append({"hypothesis": h.id, "pairs": len(per_q), "both_orders_scored": len(both),
                               "consistent": sum(ws[0] == ws[1] for ws in both.values()),
                               "wins_b": final.count(h.b), "wins_a": final.count(h.a), "ties": final.count("tie")})
            out["pairwise"][name] = rows_p
    names = sorted(j for j in scored if scored[j])
    if len(names) >= 2:
        common = sorted(set.intersection(*(set(scored[j]) for j in names)))
        scale = list(rubric_scale(exp))
        agree = []
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                both = sorted(set(scored[x]) & set(scored[y]))
                a, b = [scored[x][lab] for lab in both], [scored[y][lab] for lab in both]
                if len(a) >= 2:
                    boots = [k for k in kappa_boots(a, b, scale, exp.analysis.seed) if math.isfinite(k)]
                    agree.append({"judges": [x, y], "answers": len(a),
                                  "exact_agreement": sum(p == q for p, q in zip(a, b, strict=False)) / len(a),
                                  "kappa_quadratic": kappa_quadratic(a, b, scale),
                                  "kappa_ci95": ([percentile(boots, q) for q in (2.5, 97.5)]
                                                 if len(boots) > 100 else None)})
        pairable = sorted(lab for lab in set().union(*(scored[j] for j in names))
                          if sum(lab in scored[j] for j in names) >= 2)
        out["agreement"] = {"answers": len(common), "pairs": agree, "pairable_answers": len(pairable),
                            "krippendorff_alpha_ordinal": alpha_ordinal(
                                [[scored[j].get(lab) for lab in pairable] for j in names]) if pairable else None}
    return out


# ---------------------------------------------------------------- the judges' agreement


def ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            out[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return out


def pearson(x: list[float], y: list[float]) -> float | None:
    mx, my = math.fsum(x) / len(x), math.fsum(y) / len(y)
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=False))
    sxx, syy = math.fsum((a - mx) ** 2 for a in x), math.fsum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def solve3(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting for the 3x3 normal equations."""
    m = [row[:] + [v] for row, v in zip(a, b, strict=False)]
    for c in range(3):
        p = max(range(c, 3), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-12:
            return None
        m[c], m[p] = m[p], m[c]
        for r in range(3):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=False)]
    return [m[i][3] / m[i][i] for i in range(3)]


def kappa_quadratic(a: list[int], b: list[int], scale: list[int]) -> float | None:
    n, k = len(a), len(scale)
    pos = {v: i for i, v in enumerate(scale)}
    obs = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b, strict=False):
        obs[pos[x]][pos[y]] += 1 / n
    ra = [sum(row) for row in obs]
    cb = [sum(obs[i][j] for i in range(k)) for j in range(k)]
    w = [[(i - j) ** 2 for j in range(k)] for i in range(k)]
    num = math.fsum(w[i][j] * obs[i][j] for i in range(k) for j in range(k))
    den = math.fsum(w[i][j] * ra[i] * cb[j] for i in range(k) for j in range(k))
    return 1 - num / den if den else None


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    pos = q / 100 * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def alpha_ordinal(matrix: list[list[int | None]]) -> float | None:
    """Krippendorff's alpha, ordinal metric, over every pairable rating (None: the rater did not rate the unit)."""
    values = sorted({v for row in matrix for v in row if v is not None})
    if len(values) < 2:
        return None
    idx = {v: i for i, v in enumerate(values)}
    k = len(values)
    o = [[0.0] * k for _ in range(k)]
    for u in range(len(matrix[0])):
        col = [row[u] for row in matrix if row[u] is not None]
        for i in range(len(col)):
            for j in range(len(col)):
                if i != j:
                    o[idx[col[i]]][idx[col[j]]] += 1 / (len(col) - 1)
    return alpha_from_coincidences(o)


def alpha_from_coincidences(o: list[list[float]]) -> float | None:
    """Ordinal alpha from a coincidence matrix over the scale's points in order: a point nobody used adds nothing to
    the ordinal distances. None where there is no expected disagreement."""
    k = len(o)
    n_c = [sum(row) for row in o]
    n = sum(n_c)

    def d2(c: int, e: int) -> float:
        lo, hi = min(c, e), max(c, e)
        return (sum(n_c[lo:hi + 1]) - (n_c[c] + n_c[e]) / 2) ** 2

    observed = math.fsum(o[c][e] * d2(c, e) for c in range(k) for e in range(k))
    expected = math.fsum(n_c[c] * n_c[e] * d2(c, e) for c in range(k) for e in range(k))
    return 1 - (n - 1) * observed / expected if expected else None


def kappa_boots(a: list[int], b: list[int], scale: list[int], seed: int) -> list[float]:
    """Quadratic kappa on the analysis's 1,000 resamples (the same indices, from its seed), tables by np.add.at."""
    pos = {v: i for i, v in enumerate(scale)}
    k, n = len(scale), len(a)
    ia, ib = np.array([pos[v] for v in a]), np.array([pos[v] for v in b])
    w = (np.arange(k)[:, None] - np.arange(k)[None, :]) ** 2
    rng, out = np.random.default_rng(seed), []
    for start in range(0, 1000, 50):
        draws = np.stack([rng.integers(0, n, n) for _ in range(min(50, 1000 - start))])
        tables = np.zeros((draws.shape[0], k, k))
        np.add.at(tables, (np.repeat(np.arange(draws.shape[0]), n), ia[draws].ravel(), ib[draws].ravel()), 1 / n)
        for t in tables:
            ra, cb = t.sum(1), t.sum(0)
            den = float((w * np.outer(ra, cb)).sum())
            out.append(1 - float((w * t).sum()) / den if den else float("nan"))
    return out
