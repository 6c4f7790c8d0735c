"""[judge] panel_rule: who decides when several judges scored, registered by name in one place.

The registration knows a panel rule by its name and by what it asks of the registration before any call (a rule that
decides on some judges refuses a hypothesis none of them could decide). What a rule does to the decisions is the main
path's (judge.numbers.panel_rules) and, again, the second path's (judge.verify.second_path.panel_rules), each keyed by
these names; tests/test_panel_rules.py walks every name through the parser and both paths.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from core.errors import BadInput
from models.spec import ModelSpec

from .spec import ArmSpec

if TYPE_CHECKING:
    from .hypotheses import Hypothesis
    from .judges import JudgeSpec

# (hypotheses, arms by name, judges, models, prereg.toml): BadInput when the registration cannot be decided by the rule
Check = Callable[[list["Hypothesis"], dict[str, ArmSpec], list["JudgeSpec"], dict[str, ModelSpec], Path], None]


@dataclass(frozen=True)
class PanelRuleSpec:
    name: str
    check: Check | None = None  # what the rule asks of the registration, checked when prereg.toml is loaded


PANEL_RULES: dict[str, PanelRuleSpec] = {}
DEFAULT_PANEL_RULE = "primary"


def declare(spec: PanelRuleSpec) -> PanelRuleSpec:
    PANEL_RULES[spec.name] = spec
    return spec


def unrelated(judge: JudgeSpec, arms: list[ArmSpec], models: dict[str, ModelSpec]) -> bool:
    """A judge that shares a registered model family with none of `arms` (a judge or arm without a family shares
    none, as the self-preference warning reads it)."""
    family = models[judge.model].family
    return not family or all(models[a.model].family != family for a in arms)


def _unrelated_judges(hyps: list[Hypothesis], arms: dict[str, ArmSpec], judges: list[JudgeSpec],
                      models: dict[str, ModelSpec], file: Path) -> None:
    """panel_rule "unrelated-mean" decides on judges unrelated to both arms: a hypothesis without one could never be
    decided, so it is refused now, before any call."""
    for h in hyps:
        if not any(unrelated(j, [arms[h.a], arms[h.b]], models) for j in judges):
            fams = sorted({str(models[arms[x].model].family) for x in (h.a, h.b)})
            raise BadInput(file, f'[judge] panel_rule = "unrelated-mean" decides on judges that share a model family '
                           f"with neither arm, and hypothesis {h.id!r} has none: every registered judge shares a "
                           f"family with {h.a!r} or {h.b!r} ({', '.join(fams)})", field="panel_rule")


# The primary judge alone decides (the default, as before panel rules existed); a verdict every judge of the panel
# reaches on its own scores; or the judges that share a model family with neither arm of the hypothesis, on the
# per-question mean of their scores.
declare(PanelRuleSpec("primary"))
declare(PanelRuleSpec("all-agree"))
declare(PanelRuleSpec("unrelated-mean", check=_unrelated_judges))
