"""Agreement between raters (judges, readers, gold): Cohen's kappa, unweighted or weighted, its bootstrap, and
Krippendorff's alpha.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


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
    w = kappa_weights(len(cats), weights)
    pos = {c: i for i, c in enumerate(cats)}
    outside = [x for x in (*a_labels, *b_labels) if x not in pos]
    if outside:
        raise ValueError(f"cohen_kappa: rating {outside[0]!r} is not one of the labels {cats}")
    k = len(cats)
    codes = np.array([pos[x] for x in a_labels]) * k + np.array([pos[x] for x in b_labels])
    return float(kappa_from_tables(np.bincount(codes, minlength=k * k).reshape(1, k, k), w)[0])


def kappa_weights(k: int, weights: str | None) -> np.ndarray:
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
    w = kappa_weights(k, weights)
    out = np.empty(resamples)
    step = max(1, 2_000_000 // max(n, 1))  # resamples per batch: bounds memory at 20,000 items
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        idx = np.stack([rng.integers(0, n, n) for _ in range(rows)])
        block = codes[idx] + (np.arange(rows) * k * k)[:, None]
        tables = np.bincount(block.ravel(), minlength=rows * k * k).reshape(rows, k, k)
        out[start:start + rows] = kappa_from_tables(tables, w)
    return out


def ordinal_alpha_from_tables(tables: np.ndarray) -> np.ndarray:
    """Krippendorff's ordinal alpha of two raters who rated every unit, from each k x k contingency table in ``tables``
    (shape (m, k, k), categories in scale order): each unit adds the coincidences (a, b) and (b, a), so the
    coincidence matrix is t + t^T; a category nobody used adds nothing to the ordinal distances. NaN where undefined
    (one category only). ``krippendorff_alpha`` of the same ratings, for many tables at once."""
    o = tables + np.swapaxes(tables, 1, 2)
    n_c = o.sum(axis=2)
    n = n_c.sum(axis=1)
    k = tables.shape[1]
    cum = np.concatenate([np.zeros((len(tables), 1)), np.cumsum(n_c, axis=1)], axis=1)
    c, e = np.indices((k, k))
    lo, hi = np.minimum(c, e), np.maximum(c, e)
    delta2 = (cum[:, hi + 1] - cum[:, lo] - (n_c[:, lo] + n_c[:, hi]) / 2) ** 2
    d_o = np.sum(o * delta2, axis=(1, 2))
    d_e = np.sum(n_c[:, :, None] * n_c[:, None, :] * delta2, axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d_e == 0, np.nan, 1 - (n - 1) * d_o / d_e)


def unit_draws(units: int, resamples: int, seed: int, block: int):
    """The documented draws of a bootstrap over ``units`` resampling units (answers, or whole questions), in blocks
    of at most ``block`` resamples: each block an array (rows x units) of the units drawn, resample r being the r-th
    call of ``default_rng(seed).integers(0, units, units)`` (kappa_bootstrap's draws when each unit is one item)."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, block):
        yield np.stack([rng.integers(0, units, units) for _ in range(min(block, resamples - start))])


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
