"""One paired comparison, "b vs a" on the same questions (d = b - a): ``paired`` computes every number numbers.json
reports for it (its contract, core.records.Result), and the interval or tests the registered rule decides on.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np

from core.records import Result
from registration.vocabulary import METHODS

from . import rule as score_rule
from .bootstrap import _coded, _is_constant, decimal, draw_counts, exact_interval, tally, units
from .decision_rules import DECISION_RULES
from .decision_rules.interface import Sample
from .rule import Scale
from .t_bounds import _check_n, mde, n_for_effect, sign_test, t_interval, t_test_p


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


def paired(a, b, *, resamples: int = 10000, seed: int = 0, method: str = "percentile",
           alpha: float = 0.05, margin: float | None = None, clusters: Sequence | None = None,
           rule: str = "bootstrap", scale: Scale | None = None) -> Result:
    """Compare system b against system a on the same questions (d = b - a, positive = b better).

    ``alpha`` is one-sided: ``bound`` is the one-sided (1 - alpha) lower bound and
    ``ci_low``/``ci_high`` the two-sided (1 - 2*alpha) interval (alpha=0.025 -> 95%). Scores are exact: ints, or
    Fractions for a question's mean over K samples (``exact_scores``; floats are refused). ``clusters`` (one label
    per question; a question without a registered cluster carries a label of its own) makes it a cluster
    bootstrap: whole clusters are resampled. ``rule``, a registered rule (judge.numbers.stats.decision_rules), says
    what ``bound``/``upper`` are; a rule that reads the rubric's scale and K ("score", "bootstrap_and_t") needs
    ``scale`` (the differences are checked against it).
    """
    decides = DECISION_RULES.named(rule)
    if decides.needs_scale and scale is None:
        raise ValueError(f"rule {rule!r} needs the rubric's scale "
                         "(scale=judge.numbers.stats.rule.Scale(lo, hi, samples))")
    if np.ndim(a) != 1 or np.ndim(b) != 1 or len(a) != len(b):
        raise ValueError("a and b must be 1-D arrays of the same length (one score per question)")
    va, ia = _coded(exact_scores(a, "a"))
    vb, ib = _coded(exact_scores(b, "b"))
    a = np.array([float(x) for x in va])[ia]
    b = np.array([float(x) for x in vb])[ib]
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
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
    on = decides.bounds(Sample(d=d, exact=ed, alpha=alpha, margin=margin, scale=scale, clusters=clusters,
                               units=unit_list, n_units=n_units, ci_low=ci_low, ci_high=ci_high))
    return Result(
        n=n,
        mean_a=float(sum(x * int(c) for x, c in zip(va, np.bincount(ia), strict=False)) / n),
        mean_b=float(sum(x * int(c) for x, c in zip(vb, np.bincount(ib), strict=False)) / n),
        diff=float(sum(x * int(c) for x, c in zip(dv, np.bincount(which), strict=False)) / n),
        sd_diff=sd,
        se=sd / math.sqrt(n),
        ci_low=ci_low,
        ci_high=ci_high,
        bound=on.bound,
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
        guard_low=on.guard_low,
        guard_high=on.guard_high,
        upper=on.upper,
        scale=None if scale is None else [scale.lo, scale.hi, scale.samples],
        tests=on.tests,
    )
