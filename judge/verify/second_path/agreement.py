"""The judges' agreement by this path's own loops: quadratic kappa and its bootstrap, Krippendorff's ordinal alpha,
Spearman's rho by ranks, the length regression's normal equations, type-7 percentiles.
"""
from __future__ import annotations

import math

import numpy as np


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
