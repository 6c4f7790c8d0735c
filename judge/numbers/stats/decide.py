"""The registered rule applied to a paired comparison: its verdict (registration.vocabulary.VERDICTS) and the
reason quoting the numbers it rests on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from core.records import Result
from registration.vocabulary import KINDS


@dataclass(frozen=True)
class Decision:
    """Outcome of the registered test; ``reason`` quotes the numbers it rests on."""

    kind: str
    margin: float
    verdict: str  # non-inferior | superior | not shown | equivalent | not equivalent | inconclusive
    reason: str


def _pct(x: float) -> str:
    return f"{100 * x:.4g}%"


def claims(kind: str, margin: float, low: float, high: float) -> bool:
    """Whether the registered rule makes its claim (non-inferior or better / superior / equivalent) on the
    decision interval [low, high]. Strict: a bound exactly at the margin does not clear it."""
    if kind == "non_inferiority":
        return low > -margin
    if kind == "superiority":
        return low > 0
    return low > -margin and high < margin


def decide(p: Result, kind: str, margin: float = 0.0) -> Decision:
    """Apply the registered rule to a paired result (judge.numbers.stats.paired).

    * non_inferiority: one-sided (1 - alpha) lower bound > -margin -> "non-inferior";
      if also > 0 -> "superior" (non-inferior and superior); else "not shown".
    * superiority: lower bound > 0 -> "superior", else "not shown" (margin is recorded but
      not used: superiority is against zero).
    * equivalence (TOST): (1 - 2*alpha) interval inside (-margin, +margin) -> "equivalent";
      interval entirely outside it -> "not equivalent"; straddling a margin -> "inconclusive".
    Rule "score" decides by its one-sided tests at the registered boundaries (``Result.tests``), the bound being
    their inversion, shown; the other rules by the bound, exact rounded once against the registered decimal
    margin, so an exact tie compares equal and does not clear the margin. Non-finite bounds give "inconclusive".
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    margin = float(margin)
    if margin < 0 or (kind == "equivalence" and margin == 0):
        raise ValueError("margin must be >= 0 (and > 0 for equivalence)")
    if p.tests is not None:
        return _decide_by_tests(p, kind, margin)
    one_sided = _pct((1 + p.confidence) / 2)
    two_sided = _pct(p.confidence)
    lb, lo, hi = p.bound, p.bound, p.upper
    if not all(math.isfinite(x) for x in (lb, lo, hi)):
        return Decision(kind, margin, "inconclusive", "interval is not finite")
    which = "" if p.rule != "bootstrap_and_t" else (f" (the lower of the {p.resampling} bootstrap {p.ci_low:+.4f} "
                                                    f"and the small-sample t {p.guard_low:+.4f})")
    if kind == "non_inferiority":
        if claims("superiority", margin, lb, hi):
            verdict = "superior"
            reason = (f"one-sided {one_sided} lower bound {lb:+.4f}{which} > -{margin:.4g} and > 0: "
                      f"non-inferior and superior")
        elif claims(kind, margin, lb, hi):
            verdict = "non-inferior"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f}{which} > -{margin:.4g}: non-inferior"
        else:
            verdict = "not shown"
            reason = (f"one-sided {one_sided} lower bound {lb:+.4f}{which} <= -{margin:.4g}: "
                      f"non-inferiority not shown")
    elif kind == "superiority":
        if claims(kind, margin, lb, hi):
            verdict = "superior"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f}{which} > 0: superior"
        else:
            verdict = "not shown"
            reason = f"one-sided {one_sided} lower bound {lb:+.4f}{which} <= 0: superiority not shown"
    else:
        span = f"{two_sided} interval [{lo:+.4f}, {hi:+.4f}]"
        if claims(kind, margin, lo, hi):
            verdict = "equivalent"
            reason = f"{span} inside (-{margin:.4g}, +{margin:.4g}): equivalent (TOST)"
        elif lo >= margin or hi <= -margin:
            verdict = "not equivalent"
            reason = f"{span} entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
        else:
            verdict = "inconclusive"
            reason = f"{span} crosses a margin of +/-{margin:.4g}: equivalence not shown"
    return Decision(kind, margin, verdict, reason)


def score_test_at(p: Result, side: str, boundary: float) -> dict[str, Any]:
    """Rule "score": the recorded one-sided test on ``side`` ("lower"/"upper") at ``boundary``."""
    for t in p.tests or ():
        if t["side"] == side and t["boundary"] == boundary:
            return t
    raise ValueError(f"no {side} score test at {boundary:+g}: the comparison was computed with another margin")


def _decide_by_tests(p: Result, kind: str, margin: float) -> Decision:
    if not p.tests:
        return Decision(kind, margin, "inconclusive", f"{p.units} unit(s) of questions: the score test needs at least "
                                                      "two")
    lo, hi, k = p.scale
    where = f"score test on the {lo}–{hi} scale" + (f", K = {k}" if k > 1 else "")
    one_sided = _pct((1 + p.confidence) / 2)

    def line(t: dict) -> str:
        return f"T = {t['statistic']:+.3f} {'>' if t['claims'] else '<='} {t['critical']:.3f}"

    if kind in ("non_inferiority", "superiority"):
        sup, ni = score_test_at(p, "lower", 0.0), score_test_at(p, "lower", -margin)
        bound = f"one-sided {one_sided} lower bound {p.bound:+.4f} ({where}"
        if sup["claims"]:
            verdict = "superior"
            reason = (f"{bound}; at 0: {line(sup)}): superior" if kind == "superiority" else
                      f"{bound}; at 0: {line(sup)}): non-inferior and superior")
        elif kind == "non_inferiority" and ni["claims"]:
            verdict, reason = "non-inferior", f"{bound}; at -{margin:.4g}: {line(ni)}): non-inferior"
        elif kind == "non_inferiority":
            verdict = "not shown"
            reason = f"{bound}; at -{margin:.4g}: {line(ni)}): non-inferiority not shown"
        else:
            verdict, reason = "not shown", f"{bound}; at 0: {line(sup)}): superiority not shown"
        return Decision(kind, margin, verdict, reason)
    low, high = score_test_at(p, "lower", -margin), score_test_at(p, "upper", margin)
    span = (f"{_pct(p.confidence)} interval [{p.bound:+.4f}, {p.upper:+.4f}] ({where}; above -{margin:.4g}: "
            f"{line(low)}, below +{margin:.4g}: {line(high)})")
    if low["claims"] and high["claims"]:
        verdict, reason = "equivalent", f"{span}: equivalent (two one-sided tests)"
    elif score_test_at(p, "lower", margin)["claims"] or score_test_at(p, "upper", -margin)["claims"]:
        verdict, reason = "not equivalent", f"{span}: entirely outside (-{margin:.4g}, +{margin:.4g}): not equivalent"
    else:
        verdict, reason = "inconclusive", f"{span}: equivalence not shown"
    return Decision(kind, margin, verdict, reason)
