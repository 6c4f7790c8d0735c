"""The decision vocabulary (registration.vocabulary) walked through both paths: every rule, method and hypothesis kind
is accepted by the registration's parser, decided by the main path (judge.numbers.stats) and recomputed by verify's
second path (judge.verify.second_path), which must agree; a word outside the vocabulary is refused by all three. A word
added to the vocabulary that either path does not implement fails here.

Expected values: on the planted input (b beats a by one point on 16 of 20 questions of a 0-2 scale, ties on the
other 4) every rule must find b superior (mean difference 0.8, eight times the margin), so superiority and
non-inferiority say "superior" and equivalence within 0.10 says "not equivalent"; on an input the rules decide
differently (7 wins, 1 loss, 12 ties: "superior", "non-inferior" or "not shown" by rule) the two paths must give the
same verdict and the same numbers, as on a skewed input where BCa and the percentile interval differ."""
from __future__ import annotations

import itertools
import shutil
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.errors import BadInput
from judge.numbers.stats.decide import decide
from judge.numbers.stats.hypothesis import decision
from judge.numbers.stats.paired import paired
from judge.numbers.stats.rule import Scale
from judge.verify.compare import diff_numbers
from judge.verify.second_path import decisions as second_path
from registration.prereg import load_experiment
from registration.vocabulary import CLAIMS, DEFAULT_METHOD, DEFAULT_RULE, KINDS, METHODS, RULES, VERDICTS

from conftest import ROOT

pytestmark = pytest.mark.unit

DEMO = ROOT / "sealed" / "demo"
ENTRIES = list(itertools.product(RULES, METHODS, KINDS))
ALPHA, MARGIN, RESAMPLES, SEED = 0.025, 0.10, 400, 7
CLEAR = ([Fraction(1)] * 20, [Fraction(2)] * 16 + [Fraction(1)] * 4)
SPLIT = ([Fraction(1)] * 20, [Fraction(1)] * 12 + [Fraction(2)] * 7 + [Fraction(0)])
SKEW = ([Fraction(0)] * 5 + [Fraction(1)] * 15, [Fraction(2)] * 9 + [Fraction(1)] * 6 + [Fraction(0)] * 5)
PLANTED = {"superiority": "superior", "non_inferiority": "superior", "equivalence": "not equivalent"}


def registration(tmp_path: Path, rule: str, method: str, kind: str) -> Path:
    """The demo's registration with this rule and method in [analysis] and this kind on its first hypothesis."""
    exp = tmp_path / "exp"
    shutil.copytree(DEMO, exp)
    text = (exp / "prereg.toml").read_text()
    text = text.replace('[analysis]\n', f'[analysis]\ndecision_rule = "{rule}"\n', 1)
    text = text.replace('method = "percentile"', f'method = "{method}"', 1)
    text = text.replace('kind = "non_inferiority"', f'kind = "{kind}"', 1)
    (exp / "prereg.toml").write_text(text)
    return exp


def both_paths(a, b, rule: str, method: str, kind: str) -> tuple[str, dict, str, dict]:
    """The main path's verdict (the rule alone) and result, and the second path's."""
    settings = SimpleNamespace(resamples=RESAMPLES, seed=SEED, method=method, rule=rule, min_clusters=10,
                               calibration_sims=5, calibration_ceiling=1.0)
    d = decision(a, b, kind=kind, margin=MARGIN, alpha=ALPHA, scale=Scale(0, 2, 1), cluster_of=None,
                 settings=settings)
    again = second_path.comparison(a, b, alpha=ALPHA, margin=MARGIN, rule=rule, method=method, resamples=RESAMPLES,
                                   seed=SEED, scale=(0, 2, 1))
    return d.statistic.verdict, d.result.to_dict(), second_path.verdict(kind, MARGIN, again), again


def test_the_registrations_defaults_are_in_the_vocabulary():
    assert DEFAULT_RULE in RULES and DEFAULT_METHOD in METHODS
    assert set(CLAIMS) == set(KINDS) and all(set(v) <= set(VERDICTS) for v in CLAIMS.values())


@pytest.mark.parametrize(("rule", "method", "kind"), ENTRIES)
def test_every_entry_is_parsed_decided_and_recomputed(tmp_path, rule, method, kind):
    exp = load_experiment(registration(tmp_path, rule, method, kind))
    assert (exp.analysis.rule, exp.analysis.method, exp.hypotheses[0].kind) == (rule, method, kind)
    for a, b in (CLEAR, SPLIT, SKEW):
        main_verdict, main, second_verdict, second = both_paths(a, b, rule, method, kind)
        assert main_verdict == second_verdict, (a, b)
        assert main["rule"] == second["rule"] == rule and main["method"] == second["method"] == method
        assert diff_numbers({k: main[k] for k in second}, second, "second path") == []
    assert both_paths(*CLEAR, rule, method, kind)[0] == PLANTED[kind]


@pytest.mark.parametrize("where", ["rule", "method", "kind"])
def test_a_word_outside_the_vocabulary_is_refused_by_all_three(tmp_path, where):
    parsed = {"rule": DEFAULT_RULE, "method": DEFAULT_METHOD, "kind": "non_inferiority"} | {where: "bayes"}
    with pytest.raises(BadInput) as e:
        load_experiment(registration(tmp_path, parsed["rule"], parsed["method"], parsed["kind"]))
    assert e.value.field == {"rule": "decision_rule"}.get(where, where)
    a, b = CLEAR
    words = {"rule": DEFAULT_RULE, "method": DEFAULT_METHOD} | ({} if where == "kind" else {where: "bayes"})
    kind = "bayes" if where == "kind" else "non_inferiority"
    with pytest.raises(ValueError):  # the main path
        decide(paired(a, b, resamples=50, alpha=ALPHA, margin=MARGIN, scale=Scale(0, 2, 1), **words), kind, MARGIN)
    with pytest.raises(ValueError):  # the second path
        second_path.verdict(kind, MARGIN, second_path.comparison(a, b, alpha=ALPHA, margin=MARGIN, resamples=50,
                                                                 seed=0, scale=(0, 2, 1), **words))
