"""The decision rules of the second path, registered by name in this one place: the twins of the main path's
(judge.numbers.stats.decision_rules), written from each rule's definition and importing nothing of it. A new rule's
twin is its module, defining ``RULE = DecisionRule(...)`` (judge.verify.second_path.decision_rules.interface), plus
one ``DECISION_RULES.register`` line below.
"""

from __future__ import annotations

from registration.vocabulary import RuleRegistry

from . import bootstrap, bootstrap_and_t, score

DECISION_RULES = RuleRegistry()

DECISION_RULES.register(score.RULE)
DECISION_RULES.register(bootstrap.RULE)
DECISION_RULES.register(bootstrap_and_t.RULE)
