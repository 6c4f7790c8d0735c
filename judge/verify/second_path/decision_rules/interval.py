"""A verdict by the interval a result decides on (``bound``, ``upper``) against the margin, strictly: a bound at the
margin does not clear it."""

from __future__ import annotations

from typing import Any


def interval_verdict(kind: str, margin: float, result: dict[str, Any]) -> str:
    bound, upper = result["bound"], result["upper"]
    if kind == "equivalence":
        return ("equivalent" if bound > -margin and upper < margin else
                "not equivalent" if bound >= margin or upper <= -margin else "inconclusive")
    if bound > 0:
        return "superior"
    return "non-inferior" if kind == "non_inferiority" and bound > -margin else "not shown"
