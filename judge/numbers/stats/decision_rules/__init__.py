"""The decision rules of the main path, registered by name in this one place (the registration's word for each is
registration.vocabulary.RULES; tests/test_decision_rules.py holds this registry, the second path's
(judge.verify.second_path.decision_rules) and the words to each other). A new rule is its module, defining
``RULE = DecisionRule(...)`` (judge.numbers.stats.decision_rules.interface), plus one ``register`` line below.
"""

from __future__ import annotations

from registration import vocabulary

from . import bootstrap, bootstrap_and_t, score
from .interface import DecisionRule

REGISTRY: dict[str, DecisionRule] = {}


def register(rule: DecisionRule) -> DecisionRule:
    """Register ``rule`` under its name, a word of registration.vocabulary.RULES."""
    if rule.name not in vocabulary.RULES:
        raise ValueError(f"decision rule {rule.name!r} is not a word of registration.vocabulary.RULES")
    REGISTRY[rule.name] = rule
    return rule


def rule_named(name: str) -> DecisionRule:
    """The registered rule of that name; a ValueError naming the registered ones for any other."""
    if name not in REGISTRY:
        raise ValueError(f"rule must be one of {tuple(REGISTRY)}, got {name!r}")
    return REGISTRY[name]


register(score.RULE)
register(bootstrap.RULE)
register(bootstrap_and_t.RULE)
