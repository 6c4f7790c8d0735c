"""The panel rules by verify's second path, registered by name: the twin of judge.numbers.panel_rules, written again
from the definitions (registration.panel declares the names) and importing nothing else of judge/.

Per rule: whether the primary judge's scores decide (then this path recomputes the decision and its style
regression itself; otherwise the decision is the main path's, taken as recorded), what the judges' own verdicts make
of this path's decision, and whether the claims the family made at an adjusted alpha are the primary judge's score
test's (checked again by this path's own score test).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class PanelRule:
    name: str
    primary_decides: bool  # the primary judge's scores decide: this path's own decision and style regression
    verdict: Callable[[str, dict[str, Any] | None], str] = lambda verdict, sp: verdict  # (own verdict, per-judge)
    claims_checked: bool = False  # the family's claims at an adjusted alpha are the primary judge's score test's


PANEL_RULES: dict[str, PanelRule] = {}


def register(rule: PanelRule) -> PanelRule:
    PANEL_RULES[rule.name] = rule
    return rule


def _all_agree(verdict: str, sp: dict[str, Any] | None) -> str:
    """The primary judge's decision stands only where every judge's own verdict is the same."""
    if sp is not None and len({v["verdict"] for v in sp["judges"].values()}) > 1:
        return "inconclusive"
    return verdict


register(PanelRule("primary", primary_decides=True, claims_checked=True))
register(PanelRule("all-agree", primary_decides=True, verdict=_all_agree))
register(PanelRule("unrelated-mean", primary_decides=False))  # decided on other scores: the main path's decision
