"""The decision rules of the main path, registered by name in this one place (the registration's word for each is
registration.vocabulary.RULES; tests/test_decision_rules.py holds this registry, the second path's
(judge.verify.second_path.decision_rules) and the words to each other). A new rule is its module, defining
``RULE = DecisionRule(...)`` (judge.numbers.stats.decision_rules.interface), plus one ``DECISION_RULES.register``
line below.
"""

from __future__ import annotations

from registration.vocabulary import RuleRegistry

from . import bootstrap, bootstrap_and_t, score

DECISION_RULES = RuleRegistry()

DECISION_RULES.register(score.RULE)
DECISION_RULES.register(bootstrap.RULE)
DECISION_RULES.register(bootstrap_and_t.RULE)
