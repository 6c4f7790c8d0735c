"""The decision vocabulary: every word a registration, the decision code and verify's second path use to say how a
hypothesis is decided, defined once.

registration.prereg parses a registration against it; judge.numbers.stats decides by it; judge.verify.second_path
decides again by it, without any of judge.numbers.stats' code. A word added here is walked through both paths by
tests/test_vocabulary.py.
"""
from __future__ import annotations

from typing import Any

KINDS = ("non_inferiority", "superiority", "equivalence")
"""What a hypothesis claims of the mean difference b - a: above -margin, above 0, or inside (-margin, +margin)."""

STATISTICS = ("mean", "pass^k")
"""What a hypothesis is decided on, per question ([[hypotheses]] statistic). "mean" (the default): the question's mean
score over its scored samples. "pass^k": 1 when every one of its K samples is scored at or above [analysis]
pass_score, else 0 (a question with a sample without a score is left out, as stability leaves it out), decided on the
scale (0, 1, samples=1)."""
DEFAULT_STATISTIC = "mean"
PASS_HAT_K = "pass^k"
PASS_HAT_K_SCALE = (0, 1, 1)
"""The scale (lowest, highest, samples) a pass^k hypothesis is decided on: one 0/1 indicator per question."""

RULES = ("score", "bootstrap", "bootstrap_and_t")
"""The decision rule a registration may name ([analysis] decision_rule). "score" (the default): the score test anchored
to the rubric's scale (judge.numbers.stats.rule). "bootstrap": the bootstrap interval alone. "bootstrap_and_t": the
wider of the bootstrap interval and a small-sample t interval with a pseudo-loss and a pseudo-win of half the rubric's
range (judge.numbers.stats.t_bounds.guarded_t_interval), so a claim needs both. Both bootstrap rules exceed 1.2 alpha
where most differences are ties (BENCHMARKS.md): they stay registrable for folders and experiments that registered
them. Each path implements every word once, in its rule registry (``RuleRegistry``; docs/how-to/add-a-decision-rule.md).
The parser reads this when it parses, not when it is imported."""
DEFAULT_RULE = "score"


class RuleRegistry:
    """One path's decision rules, registered by name: each path (judge.numbers.stats.decision_rules,
    judge.verify.second_path.decision_rules) keeps one, and tests/test_decision_rules.py holds both to RULES. A rule
    is any object with a ``name``, a word of RULES."""

    def __init__(self) -> None:
        self.rules: dict[str, Any] = {}

    def register(self, rule: Any) -> Any:
        """Register ``rule`` under its name; a name that is not a word of RULES is refused."""
        if rule.name not in RULES:
            raise ValueError(f"decision rule {rule.name!r} is not a word of registration.vocabulary.RULES {RULES}")
        self.rules[rule.name] = rule
        return rule

    def named(self, name: str) -> Any:
        """The rule registered under ``name``; a ValueError naming the registered ones for any other."""
        if name not in self.rules:
            raise ValueError(f"rule must be one of {tuple(self.rules)}, got {name!r}")
        return self.rules[name]

METHODS = ("percentile", "bca")
"""The bootstrap interval ([analysis] method): the percentile interval, or the bias-corrected and accelerated one."""
DEFAULT_METHOD = "percentile"

RESAMPLING = ("questions", "clusters")
"""What a bootstrap resamples: questions one by one, or whole clusters of questions when a set declares clusters."""

SIDES = ("lower", "upper")
"""A one-sided score test's side: "lower" rejects mean <= boundary, "upper" rejects mean >= boundary."""

VERDICTS = ("superior", "non-inferior", "not shown", "equivalent", "not equivalent", "inconclusive")
"""What a decision says."""

CLAIMS = {"non_inferiority": ("non-inferior", "superior"), "superiority": ("superior",),
          "equivalence": ("equivalent",)}
"""The verdicts of each kind that are its claim: what a calibration counts, and what the family steps down on."""


def boundary(kind: str, margin, estimate):
    """Where a hypothesis's claim is just false, the true difference a calibration simulates at: -margin
    (non-inferiority), 0 (superiority), and for equivalence the margin on the side of the ``estimate`` (-margin where
    it is <= 0). In the margin's own arithmetic: exact for a Fraction, float for a float."""
    if kind == "non_inferiority":
        return -margin
    if kind == "superiority":
        return 0 * margin
    return -margin if estimate <= 0 else margin

GOLD_DESIGNS = ("random_sample", "complete_strata", "convenience")
"""How gold labels were chosen (judge.gold.sources). "random_sample": a seeded random sample of the questions (or of
each stratum; a stratum labelled whole is a 100 % sample). "complete_strata": gold only on whole strata (such as a tag
whose every question has programmatic gold). "convenience": picked by hand: agreement only, no correction."""

PPI_RULES = ("guarded", "normal")
"""The interval of a prediction-powered estimate (judge.numbers.stats.ppi). "normal": ppi_py's z interval with ddof-0
variances, exactly. "guarded" (default): the small-sample guard (t with Welch-Satterthwaite df, ddof 1, a rectifier
spread floor)."""
