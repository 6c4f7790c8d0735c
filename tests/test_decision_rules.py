"""Decision rules are registered by name, once on each path (judge.numbers.stats.decision_rules and its twin
judge.verify.second_path.decision_rules), under the words the registration's parser accepts
(registration.vocabulary.RULES).

The proof that a rule is its module plus one registration line on each path: a rule nobody wrote into the product,
"t_only" (the two-sided (1 - 2 alpha) paired-t interval decides, its lower end the bound), defined here as a main-path
object and a second-path twin, registered for the time of one test, and a registration naming it parsed, decided by
both paths, and agreeing. Its expected bound is scipy's t interval, computed here; its twin computes it by the second
path's own Student t.
"""
from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats as sps

from core.errors import BadInput
from judge.numbers.stats.decision_rules import DECISION_RULES as MAIN
from judge.numbers.stats.decision_rules.interface import Bounds, DecisionRule, Sample, Simulation
from judge.numbers.stats.decision_rules.interval import claims, interval_verdict
from judge.numbers.stats.hypothesis import decision
from judge.numbers.stats.rule import Scale
from judge.numbers.stats.t_bounds import t_interval
from judge.verify.checks import diff_numbers
from judge.verify.second_path import decisions as second_path
from judge.verify.second_path.bootstrap import t_interval as second_t_interval
from judge.verify.second_path.decision_rules import DECISION_RULES as SECOND
from judge.verify.second_path.decision_rules import interface as twin
from judge.verify.second_path.decision_rules.interval import interval_verdict as twin_verdict
from registration import vocabulary
from registration.prereg import load_experiment
from registration.vocabulary import RuleRegistry

from conftest import ROOT

pytestmark = pytest.mark.unit

DEMO = ROOT / "sealed" / "demo"
ALPHA, MARGIN = 0.025, 0.10


def registration(tmp_path: Path, rule: str) -> Path:
    """The demo's registration deciding by ``rule``."""
    exp = tmp_path / "exp"
    shutil.copytree(DEMO, exp)
    text = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(text.replace("[analysis]\n", f'[analysis]\ndecision_rule = "{rule}"\n', 1))
    return exp


# ---------------------------------------------------------------- the toy rule, "t_only": its main-path module


def t_only_bounds(s: Sample) -> Bounds:
    low, high = t_interval(s.d, 1 - 2 * s.alpha)
    return Bounds(bound=low, upper=high)


def t_only_calibrate(sim: Simulation) -> int:
    """Questions drawn with replacement from the shifted differences, each data set decided by its t interval."""
    rng = np.random.default_rng(sim.seed)
    d = np.array([float(x) for x in sim.shifted])
    hits = 0
    for _ in range(sim.sims):
        low, high = t_interval(d[rng.integers(0, d.size, d.size)], 1 - 2 * sim.alpha)
        hits += claims(sim.kind, sim.margin, low, high)
    return hits


T_ONLY = DecisionRule(name="t_only", needs_scale=False, bounds=t_only_bounds, decide=interval_verdict,
                      calibrate=t_only_calibrate)


# ---------------------------------------------------------------- ... and its second-path twin


def t_only_twin_bounds(c: twin.PairedDifferences) -> dict:
    low, high = second_t_interval([float(x) for x in c.d], c.alpha)
    return {"bound": low, "upper": high}


T_ONLY_TWIN = twin.DecisionRule(name="t_only", bounds=t_only_twin_bounds, verdict=twin_verdict)


@pytest.fixture
def t_only(monkeypatch):
    """The word in the vocabulary and one registration line on each path, undone after the test."""
    monkeypatch.setattr(vocabulary, "RULES", (*vocabulary.RULES, "t_only"))
    MAIN.register(T_ONLY)
    SECOND.register(T_ONLY_TWIN)
    yield
    del MAIN.rules["t_only"], SECOND.rules["t_only"]


def by_scipy(a, b) -> tuple[float, float]:
    """The (1 - 2 alpha) paired-t interval of b - a, by scipy."""
    d = np.array([float(y - x) for x, y in zip(a, b, strict=True)])
    return sps.t.interval(1 - 2 * ALPHA, d.size - 1, loc=d.mean(), scale=sps.sem(d))


def verdict_of(kind: str, low: float, high: float) -> str:
    """The registered kinds' verdicts on an interval, by their definitions (docs/explanation)."""
    if kind == "equivalence":
        return ("equivalent" if -MARGIN < low and high < MARGIN else
                "not equivalent" if low >= MARGIN or high <= -MARGIN else "inconclusive")
    if low > 0:
        return "superior"
    return "non-inferior" if kind == "non_inferiority" and low > -MARGIN else "not shown"


# 7 wins, 1 loss, 12 ties on 0-2: the t bound is about +0.03 (superior); 3 wins, 1 loss: about -0.11 (not shown)
DATA = {"wins": ([Fraction(1)] * 20, [Fraction(1)] * 12 + [Fraction(2)] * 7 + [Fraction(0)]),
        "few": ([Fraction(1)] * 20, [Fraction(1)] * 16 + [Fraction(2)] * 3 + [Fraction(0)])}


@pytest.mark.parametrize("kind", vocabulary.KINDS)
@pytest.mark.parametrize("data", sorted(DATA))
def test_a_rule_added_by_its_module_and_one_line_on_each_path_is_decided_by_both(tmp_path, t_only, kind, data):
    exp = load_experiment(registration(tmp_path, "t_only"))
    assert exp.analysis.rule == "t_only"
    a, b = DATA[data]
    settings = SimpleNamespace(resamples=400, seed=7, method="percentile", rule=exp.analysis.rule, min_clusters=10,
                               calibration_sims=50, calibration_ceiling=1.0)
    main = decision(a, b, kind=kind, margin=MARGIN, alpha=ALPHA, scale=Scale(0, 2, 1), cluster_of=None,
                    settings=settings)
    again = second_path.comparison(a, b, alpha=ALPHA, margin=MARGIN, rule=exp.analysis.rule, method="percentile",
                                   resamples=400, seed=7, scale=(0, 2, 1))
    low, high = by_scipy(a, b)
    assert (main.result.bound, main.result.upper) == pytest.approx((low, high), rel=1e-12)
    assert (again["bound"], again["upper"]) == pytest.approx((low, high), rel=1e-9)
    assert main.result.rule == again["rule"] == "t_only"
    assert main.statistic.verdict == second_path.verdict(kind, MARGIN, again) == verdict_of(kind, low, high)
    assert diff_numbers({k: main.result.to_dict()[k] for k in again}, again, "second path") == []
    assert 0 <= main.calibration.claims <= 50


def test_the_added_rule_is_refused_once_it_is_unregistered(tmp_path):
    with pytest.raises(BadInput) as e:
        load_experiment(registration(tmp_path, "t_only"))
    assert e.value.field == "decision_rule"
    with pytest.raises(ValueError):
        MAIN.named("t_only")
    with pytest.raises(ValueError):
        SECOND.named("t_only")


@pytest.mark.parametrize("rule", vocabulary.RULES)
def test_every_word_the_parser_accepts_is_registered_on_both_paths(tmp_path, rule):
    assert load_experiment(registration(tmp_path, rule)).analysis.rule == rule
    assert MAIN.named(rule).name == SECOND.named(rule).name == rule


def test_each_registry_holds_exactly_the_vocabularys_words():
    assert set(MAIN.rules) == set(SECOND.rules) == set(vocabulary.RULES)


def test_a_rule_under_a_word_outside_the_vocabulary_is_refused():
    with pytest.raises(ValueError, match="'bayes' is not a word of registration.vocabulary.RULES"):
        RuleRegistry().register(SimpleNamespace(name="bayes"))
