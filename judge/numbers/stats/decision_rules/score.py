"""Rule "score" (the default): the score test anchored to the rubric's scale (judge.numbers.stats.rule). It decides by
one-sided tests at the registered boundaries, the bound being their inversion, shown; its calibration decides each
simulated data set by the same tests.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from .. import rule as score_rule
from ..bootstrap import decimal
from ..rule import Scale
from .interface import Bounds, DecisionRule, Sample, Simulation
from .interval import interval_verdict, pct


def score_tests(d: Sequence, margin, alpha: float, scale: Scale, labels: Sequence | None) -> list[dict[str, Any]]:
    """The one-sided score tests (judge.numbers.stats.rule) a decision needs, at the registered decimal margin M.

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


def bounds(s: Sample) -> Bounds:
    labels = None if s.clusters is None else list(s.clusters)
    tests = score_tests(s.exact, s.margin, s.alpha, s.scale, labels)
    if s.n_units < 2:  # one cluster: no test, nothing excluded
        return Bounds(bound=float(-s.scale.range), upper=float(s.scale.range), tests=tests)
    return Bounds(bound=score_rule.lower_bound(s.exact, s.alpha, s.scale, labels),
                  upper=score_rule.upper_bound(s.exact, s.alpha, s.scale, labels), tests=tests)


def score_test_at(p, side: str, boundary: float) -> dict[str, Any]:
    """The recorded one-sided test of a core.records.Result on ``side`` ("lower"/"upper") at
    ``boundary``."""
    for t in p.tests or ():
        if t["side"] == side and t["boundary"] == boundary:
            return t
    raise ValueError(f"no {side} score test at {boundary:+g}: the comparison was computed with another margin")


def decide(p, kind: str, margin: float) -> tuple[str, str]:
    """The verdict of the score tests, quoting each; a result carrying no tests (an interval moved by an
    adjustment) is decided by its interval."""
    if p.tests is None:
        return interval_verdict(p, kind, margin)
    if not p.tests:
        return "inconclusive", f"{p.units} unit(s) of questions: the score test needs at least two"
    lo, hi, k = p.scale
    where = f"score test on the {lo}–{hi} scale" + (f", K = {k}" if k > 1 else "")
    one_sided = pct((1 + p.confidence) / 2)

    def line(t: dict) -> str:
        return f"T = {t['statistic']:+.3f} {'>' if t['claims'] else '<='} {t['critical']:.3f}"

    if kind in ("non_inferiority", "superiority"):
        sup, ni = score_test_at(p, "lower", 0.0), score_test_at(p, "lower", -margin)
        bound = f"one-sided {one_sided} lower bound {p.bound:+.4f} ({where}"
        if sup["claims"]:
            return "superior", (f"{bound}; at 0: {line(sup)}): superior" if kind == "superiority" else
                                f"{bound}; at 0: {line(sup)}): non-inferior and superior")
        if kind == "non_inferiority" and ni["claims"]:
            return "non-inferior", f"{bound}; at -{margin:.4g}: {line(ni)}): non-inferior"
        if kind == "non_inferiority":
            return "not shown", f"{bound}; at -{margin:.4g}: {line(ni)}): non-inferiority not shown"
        return "not shown", f"{bound}; at 0: {line(sup)}): superiority not shown"
    low, high = score_test_at(p, "lower", -margin), score_test_at(p, "upper", margin)
    span = (f"{pct(p.confidence)} interval [{p.bound:+.4f}, {p.upper:+.4f}] ({where}; above -{margin:.4g}: "
            f"{line(low)}, below +{margin:.4g}: {line(high)})")
    if low["claims"] and high["claims"]:
        return "equivalent", f"{span}: equivalent (two one-sided tests)"
    if score_test_at(p, "lower", margin)["claims"] or score_test_at(p, "upper", -margin)["claims"]:
        return "not equivalent", f"{span}: entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
    return "inconclusive", f"{span}: equivalence not shown"


def _claims(kind: str, d: list, m: Fraction, alpha: float, scale: Scale, labels: list | None) -> bool:
    """Whether the score tests make the registered claim on differences shifted off the grid (the calibration):
    the same tests as ``decide`` (non-inferiority: the test at -M, or at 0 for "superior")."""
    kw = dict(scale=scale, clusters=labels, shifted=True)
    if kind == "non_inferiority":
        return (score_rule.claims("non_inferiority", d, m, alpha, **kw)
                or score_rule.claims("superiority", d, m, alpha, **kw))
    return score_rule.claims(kind, d, m, alpha, **kw)


def calibrate(sim: Simulation) -> int:
    """Each simulated data set draws whole units (questions, or clusters with their questions' differences) with
    replacement from the shifted differences, and is decided by the score tests."""
    m = decimal(sim.margin)
    groups: dict[Any, list[Fraction]] = {}
    for i, x in enumerate(sim.shifted):
        groups.setdefault(i if sim.clusters is None else sim.clusters[i], []).append(x)
    tallied: dict[tuple, int] = {}
    for values in groups.values():
        key = tuple(sorted(values))
        tallied[key] = tallied.get(key, 0) + 1
    kinds = sorted(tallied)
    freq = np.array([tallied[k] for k in kinds])
    n_units = int(freq.sum())
    hits = 0
    if n_units >= 2:  # one cluster: no test, no claim
        for data in np.random.default_rng(sim.seed).multinomial(n_units, freq / n_units, size=sim.sims):
            d, labels, unit = [], [], 0
            for i in np.nonzero(data)[0]:
                for _ in range(int(data[i])):
                    labels += [unit] * len(kinds[i])
                    d += kinds[i]
                    unit += 1
            hits += _claims(sim.kind, d, m, sim.alpha, sim.scale, None if sim.clusters is None else labels)
    return hits


RULE = DecisionRule(name="score", needs_scale=True, bounds=bounds, decide=decide, calibrate=calibrate)
