"""What a decision rule is on the second path: a frozen object with the two things this path's decision code asks of
it, written from the rule's definition (registered by name in judge.verify.second_path.decision_rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class PairedDifferences:
    """One comparison as a rule sees it, after the bootstrap is recomputed (``result``: ``check_paired``'s)."""

    d: list[Fraction]  # each question's difference b - a, exact
    labels: Sequence | None  # each question's resampling unit, or None when no question has a cluster
    alpha: float  # one-sided
    margin: float
    scale: tuple[int, int, int]  # the rubric's lowest and highest score, and the samples per question
    result: dict[str, Any]


@dataclass(frozen=True)
class DecisionRule:
    """A decision rule: the fields of numbers.json's result it sets (``bounds``: "bound" and "upper", and "guard_low"
    and "guard_high" or "tests" where it has them), and its verdict on such a result before the registered guards
    (``verdict``: kind, margin, result)."""

    name: str
    bounds: Callable[[PairedDifferences], dict[str, Any]]
    verdict: Callable[[str, float, dict[str, Any]], str]
