"""A verdict by the interval a result decides on (``bound``, ``upper``) against the margin, strictly: a bound at the
margin does not clear it."""

from __future__ import annotations

from typing import Any


def verdict_between(kind: str, margin: float, bound: float, upper: float) -> str:
    """The verdict of the interval [bound, upper] (a one-sided claim reads its lower end)."""
    if kind == "equivalence":
        return ("equivalent" if bound > -margin and upper < margin else
                "not equivalent" if bound >= margin or upper <= -margin else "inconclusive")
    if bound > 0:
        return "superior"
    return "non-inferior" if kind == "non_inferiority" and bound > -margin else "not shown"


def interval_verdict(kind: str, margin: float, result: dict[str, Any]) -> str:
    """The verdict of a result's decision interval (``bound``, ``upper``)."""
    return verdict_between(kind, margin, result["bound"], result["upper"])
