"""Rule "score" by hand: the score tests at the registered boundaries (judge.verify.second_path.score_test), the bound
and upper end their inversion, and the verdict the tests give."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..score_test import boundary_tests, lower_bound, tests_verdict
from .interface import DecisionRule, PairedDifferences


def bounds(c: PairedDifferences) -> dict[str, Any]:
    lo, hi, _ = c.scale
    m = Fraction(repr(float(c.margin))) if c.margin else Fraction(0)
    tests = boundary_tests(c.d, m, hi - lo, c.alpha, c.labels)
    if not tests:
        return {"tests": tests, "bound": float(lo - hi), "upper": float(hi - lo)}
    return {"tests": tests, "bound": lower_bound(c.d, hi - lo, c.alpha, c.labels),
            "upper": -lower_bound([-x for x in c.d], hi - lo, c.alpha, c.labels)}


def verdict(kind: str, margin: float, result: dict[str, Any]) -> str:
    return tests_verdict(kind, margin, result["tests"])


RULE = DecisionRule(name="score", bounds=bounds, verdict=verdict)
