"""The panel rules by the main path, registered by name ([judge] panel_rule; the names and what each asks of the
registration are registration.panel's): which scores decide a hypothesis, what the panel's own verdicts do to the
decision, and whether the decisions are the primary judge's alone (what its test-retest reliability is compared with).

A rule is one `PanelRule` and one `register(...)` line here, plus its declaration in registration.panel and its twin
in judge.verify.second_path.panel_rules; tests/test_panel_rules.py walks every declared name through the parser and
both paths.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from core.records import Comparison, SelfPreference
from registration.panel import unrelated
from registration.prereg import Experiment, Hypothesis

Scores = Mapping[tuple[str, str], Mapping[str, Any]]  # (arm, quant) -> question id -> mean score
Verdict = tuple[str, str] | None  # (verdict, why) replacing the decision's; None: the decision stands


@dataclass(frozen=True)
class PanelRule:
    """`decided_on(exp, h, primary, by_judge)`: the scores that decide `h` (the primary judge's, or others by
    judge); `verdict(comparison, self_preference)`: what the judges' own verdicts (judge.numbers.bias_checks
    .self_preference, None when one judge scored) make of the decision; `primary_alone`: the decisions are the
    primary judge's own, as they stand."""

    name: str
    decided_on: Callable[[Experiment, Hypothesis, Scores, Mapping[str, Scores]], Scores]
    verdict: Callable[[Comparison, SelfPreference | None], Verdict] = lambda c, sp: None
    primary_alone: bool = False


PANEL_RULES: dict[str, PanelRule] = {}


def register(rule: PanelRule) -> PanelRule:
    PANEL_RULES[rule.name] = rule
    return rule


def _primary(exp: Experiment, h: Hypothesis, primary: Scores, by_judge: Mapping[str, Scores]) -> Scores:
    return primary


def all_agree(c: Comparison, sp: SelfPreference | None) -> Verdict:
    """A verdict every judge reached on its own scores, else inconclusive; None (the decision stands) when one judge
    scored or all agree."""
    if sp is None:
        return None
    verdicts = {v.verdict for v in sp.judges.values()}
    if len(verdicts) == 1:  # every judge agrees: the decision stands as the primary judge's checks left it
        return None
    who = ", ".join(f"{j} \"{v.verdict}\"" for j, v in sp.judges.items())
    return "inconclusive", f"panel rule all-agree: the judges disagree ({who})"


def unrelated_scores(exp: Experiment, h: Hypothesis, primary: Scores, by_judge: Mapping[str, Scores]) -> Scores:
    """Per question, the mean of the scores of the judges that share a registered family with neither arm, on the
    questions every such judge scored (the primary judge's scores for every other cell)."""
    names = [j.name for j in exp.judges if j.name in by_judge and
             unrelated(j, [exp.arm(h.a), exp.arm(h.b)], exp.models)]
    out: dict = {}
    for cell in ((h.a, h.quant), (h.b, h.quant)):
        per = [by_judge[j].get(cell, {}) for j in names]
        common = set.intersection(*(set(p) for p in per)) if per else set()
        out[cell] = {q: sum(p[q] for p in per) / len(per) for q in common}
    return {**primary, **out}


register(PanelRule("primary", _primary, primary_alone=True))
register(PanelRule("all-agree", _primary, verdict=all_agree))
register(PanelRule("unrelated-mean", unrelated_scores))
