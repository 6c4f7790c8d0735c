"""A decision by an interval against the registered margin: whether it makes its claim, and the verdict with the
reason quoting the bound. The rules that decide by an interval (the bootstrap rules, and the score rule on a result
carrying no tests) word their verdict here.
"""

from __future__ import annotations

import math


def pct(x: float) -> str:
    return f"{100 * x:.4g}%"


def claims(kind: str, margin: float, low: float, high: float) -> bool:
    """Whether the registered rule makes its claim (non-inferior or better / superior / equivalent) on the
    decision interval [low, high]. Strict: a bound exactly at the margin does not clear it."""
    if kind == "non_inferiority":
        return low > -margin
    if kind == "superiority":
        return low > 0
    return low > -margin and high < margin


def interval_verdict(p, kind: str, margin: float, note: str = "") -> tuple[str, str]:
    """The verdict of a core.records.Result's decision interval (``bound``, ``upper``) and its reason;
    ``note`` says after the bound where it comes from. Non-finite bounds give "inconclusive"."""
    one_sided = pct((1 + p.confidence) / 2)
    two_sided = pct(p.confidence)
    lb, lo, hi = p.bound, p.bound, p.upper
    if not all(math.isfinite(x) for x in (lb, lo, hi)):
        return "inconclusive", "interval is not finite"
    if kind == "non_inferiority":
        if claims("superiority", margin, lb, hi):
            return "superior", (f"one-sided {one_sided} lower bound {lb:+.4f}{note} > -{margin:.4g} and > 0: "
                                f"non-inferior and superior")
        if claims(kind, margin, lb, hi):
            return "non-inferior", f"one-sided {one_sided} lower bound {lb:+.4f}{note} > -{margin:.4g}: non-inferior"
        return "not shown", (f"one-sided {one_sided} lower bound {lb:+.4f}{note} <= -{margin:.4g}: "
                             f"non-inferiority not shown")
    if kind == "superiority":
        if claims(kind, margin, lb, hi):
            return "superior", f"one-sided {one_sided} lower bound {lb:+.4f}{note} > 0: superior"
        return "not shown", f"one-sided {one_sided} lower bound {lb:+.4f}{note} <= 0: superiority not shown"
    span = f"{two_sided} interval [{lo:+.4f}, {hi:+.4f}]"
    if claims(kind, margin, lo, hi):
        return "equivalent", f"{span} inside (-{margin:.4g}, +{margin:.4g}): equivalent (TOST)"
    if lo >= margin or hi <= -margin:
        return "not equivalent", f"{span} entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
    return "inconclusive", f"{span} crosses a margin of +/-{margin:.4g}: equivalence not shown"
