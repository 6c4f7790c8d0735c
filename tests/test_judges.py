"""Several judges, pairwise mode and bias measurements."""
from __future__ import annotations

import json

import pytest

from judge.agreement import agreement, length_bias
from judge.pairwise import PairKey, summarise
from judge.prereg import Hypothesis
from judge.records import Judgment

from conftest import cli

H = Hypothesis("H", "base", "trained", "Q8_0", "non_inferiority", 0.1, 0.025)


def verdict(label: str, preferred: int | None) -> Judgment:
    status = "scored" if preferred is not None else "unscored"
    return Judgment("j", label, "q", status, preferred, None, False, None, "sha", [], 0.0, 0, 0, 0, rubric="pairwise")


def test_order_inconsistent_verdicts_are_ties_and_consistency_is_reported():
    keys = [PairKey("1", "H", "q1", "Q8_0", "base", "trained"), PairKey("2", "H", "q1", "Q8_0", "trained", "base"),
            PairKey("3", "H", "q2", "Q8_0", "base", "trained"), PairKey("4", "H", "q2", "Q8_0", "trained", "base"),
            PairKey("5", "H", "q3", "Q8_0", "base", "trained"), PairKey("6", "H", "q3", "Q8_0", "trained", "base")]
    # q1: trained wins in both orders; q2: the judge always prefers the first shown (flips); q3: one unscored
    judgments = [verdict("1", 2), verdict("2", 1), verdict("3", 1), verdict("4", 1), verdict("5", 1), verdict("6", None)]
    s = summarise([H], keys, judgments, "j")[0]
    assert (s["pairs"], s["both_orders_scored"], s["consistent"]) == (3, 2, 1)
    assert s["consistency_rate"] == 0.5
    assert (s["wins_b"], s["wins_a"], s["ties"]) == (1, 0, 1)
    assert s["unscored_verdicts"] == 1
    assert s["first_position_share"] == pytest.approx(4 / 5)  # 4 of 5 non-tie verdicts chose the first shown


def test_agreement_needs_two_judges_and_brackets_kappa():
    a = {f"L{i}": i % 3 for i in range(60)}
    b = {k: (v if i % 5 else (v + 1) % 3) for i, (k, v) in enumerate(a.items())}
    assert agreement({"x": a}, (0, 1, 2), 0) is None
    ag = agreement({"x": a, "y": b}, (0, 1, 2), 0)
    p = ag["pairs"][0]
    assert ag["answers"] == 60 and p["exact_agreement"] == pytest.approx(48 / 60)
    assert p["kappa_ci95"][0] <= p["kappa_quadratic"] <= p["kappa_ci95"][1]
    assert -1 <= ag["krippendorff_alpha_ordinal"] <= 1


def test_length_bias_separates_length_from_arm():
    # the judge pays for length; "trained" writes longer answers but is not otherwise better
    points = []
    for i in range(40):
        for arm, extra in (("base", 0), ("trained", 30)):
            words = 5 + (i % 10) * 5 + extra
            points.append((arm, "Q8_0", words, 2 if words > 40 else (1 if words > 20 else 0)))
    b = length_bias(points, [("H", "base", "trained", "Q8_0")])
    assert b["length_spearman"] > 0.8
    c = b["comparisons"][0]
    assert c["raw_difference"] > 0.5
    assert abs(c["length_adjusted_difference"]) < c["raw_difference"] / 2


def test_two_judges_pairwise_end_to_end(tmp_path):
    out = tmp_path / "two-judges"
    r = cli("judge", "run", "--arms", "base,trained", "--limit", "2", "--judges", "local,local-q4", "--mode", "both",
            "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    numbers = json.loads((out / "numbers.json").read_text())
    assert numbers["judges"]["panel"] == ["local", "local-q4"]
    assert set(numbers["judges"]["pairwise"]) == {"local", "local-q4"}
    assert numbers["judges"]["agreement"]["answers"] == 8
    report = (out / "report.md").read_text()
    assert "position-consistent" in report and "Agreement on 8 answers" in report and "Spearman" in report
    assert cli("judge", "verify", str(out)).returncode == 0
