"""The registered rule applied to a paired comparison: its verdict (registration.vocabulary.VERDICTS) and the
reason quoting the numbers it rests on, worded by the rule (judge.numbers.stats.decision_rules).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.records import Result
from registration.vocabulary import KINDS

from .decision_rules import DECISION_RULES


@dataclass(frozen=True)
class Decision:
    """Outcome of the registered test; ``reason`` quotes the numbers it rests on."""

    kind: str
    margin: float
    verdict: str  # non-inferior | superior | not shown | equivalent | not equivalent | inconclusive
    reason: str


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
    verdict, reason = DECISION_RULES.named(p.rule).decide(p, kind, margin)
    return Decision(kind, margin, verdict, reason)
