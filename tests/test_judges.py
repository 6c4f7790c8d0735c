"""Several judges, pairwise mode and bias measurements."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from core.records import Judgment, PairKey
from judge.judging.pairwise import summarise
from judge.numbers.agreement import agreement, length_bias
from registration.prereg import Hypothesis

from conftest import cli

H = Hypothesis("H", "base", "trained", "Q8_0", "non_inferiority", 0.1, 0.025)


def verdict(label: str, preferred: int | None) -> Judgment:
    status = "scored" if preferred is not None else "unscored"
    return Judgment("j", label, "q", status, preferred, None, False, None, "sha", [], 0.0, 0, 0, 0,
                    rubric="pairwise", kind="pairwise")


@pytest.mark.unit
def test_order_inconsistent_verdicts_are_ties_and_consistency_is_reported():
    keys = [PairKey("1", "H", "q1", "Q8_0", "base", "trained"), PairKey("2", "H", "q1", "Q8_0", "trained", "base"),
            PairKey("3", "H", "q2", "Q8_0", "base", "trained"), PairKey("4", "H", "q2", "Q8_0", "trained", "base"),
            PairKey("5", "H", "q3", "Q8_0", "base", "trained"), PairKey("6", "H", "q3", "Q8_0", "trained", "base")]
    # q1: trained wins in both orders; q2: the judge always prefers the first shown (flips); q3: one unscored
    judgments = [verdict("1", 2), verdict("2", 1), verdict("3", 1), verdict("4", 1), verdict("5", 1),
                 verdict("6", None)]
    s = summarise([H], keys, judgments, "j")[0]
    assert (s["pairs"], s["both_orders_scored"], s["consistent"]) == (3, 2, 1)
    assert s["consistency_rate"] == 0.5
    assert (s["wins_b"], s["wins_a"], s["ties"]) == (1, 0, 1)
    assert s["unscored_verdicts"] == 1
    assert s["first_position_share"] == pytest.approx(4 / 5)  # 4 of 5 non-tie verdicts chose the first shown


@pytest.mark.unit
def test_agreement_needs_two_judges_and_brackets_kappa():
    a = {f"L{i}": i % 3 for i in range(60)}
    b = {k: (v if i % 5 else (v + 1) % 3) for i, (k, v) in enumerate(a.items())}
    assert agreement({"x": a}, (0, 1, 2), 0) is None
    ag = agreement({"x": a, "y": b}, (0, 1, 2), 0)
    p = ag.pairs[0]
    assert ag.answers == 60 and p.exact_agreement == pytest.approx(48 / 60)
    assert p.kappa_ci95[0] <= p.kappa_quadratic <= p.kappa_ci95[1]
    # expected values from peer libraries, not from judge.numbers.stats
    x, y = list(a.values()), [b[k] for k in a]
    table = np.zeros((3, 3))
    np.add.at(table, (x, y), 1)
    assert p.kappa_quadratic == pytest.approx(cohens_kappa(table, wt="quadratic").kappa, abs=1e-12)
    assert p.kappa_quadratic == pytest.approx(0.7, abs=1e-12)
    peer = krippendorff.alpha(reliability_data=[x, y], level_of_measurement="ordinal", value_domain=[0, 1, 2])
    assert ag.krippendorff_alpha_ordinal == pytest.approx(peer, abs=1e-4)
    assert ag.krippendorff_alpha_ordinal == pytest.approx(0.7025, abs=1e-4)


@pytest.mark.unit
def test_length_bias_separates_length_from_arm():
    # the judge pays for length; "trained" writes longer answers but is not otherwise better
    points = []
    for i in range(40):
        for arm, extra in (("base", 0), ("trained", 30)):
            words = 5 + (i % 10) * 5 + extra
            points.append((arm, "Q8_0", words, 2 if words > 40 else (1 if words > 20 else 0)))
    b = length_bias(points, [("H", "base", "trained", "Q8_0")])
    assert b.length_spearman > 0.8
    c = b.comparisons[0]
    assert c.raw_difference > 0.5
    assert abs(c.length_adjusted_difference) < c.raw_difference / 2


@pytest.fixture(scope="module")
def two_judges(small_run, tmp_path_factory) -> Path:
    """One real run by two local judges in both modes (single and pairwise); tests that change it copy it first.

    Made after the session's `small_run`, in its worker (tests/conftest.py): the 8 answers and the local judge's 8
    single verdicts are calls that run made already, answered from the session's call cache as any resumed or
    extended run is; local-q4's verdicts and every pairwise verdict are new calls."""
    out = tmp_path_factory.mktemp("two-judges") / "run"
    r = cli("judge", "run", "--arms", "base,trained", "--limit", "2", "--judges", "local,local-q4", "--mode", "both",
            "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.integration
def test_two_judges_pairwise_end_to_end(two_judges):
    out = two_judges
    numbers = json.loads((out / "numbers.json").read_text())
    assert numbers["judges"]["panel"] == ["local", "local-q4"]
    assert set(numbers["judges"]["pairwise"]) == {"local", "local-q4"}
    assert numbers["judges"]["agreement"]["answers"] == 8
    report = (out / "report.md").read_text()
    assert "position-consistent" in report and "Agreement: 8 answers scored by every judge" in report
    assert "Spearman" in report
    assert cli("judge", "verify", str(out)).returncode == 0


@pytest.mark.unit
def test_verify_recomputes_judge_numbers_by_its_own_path():
    from scipy import stats as sps

    from judge.verify.second_path.agreement import kappa_quadratic, pearson, ranks, solve3

    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, 200).tolist()
    b = [(x + (rng.random() < 0.3)) % 3 for x in a]
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)  # the peer (statsmodels), not the analysis path, gives the expected kappa
    assert kappa_quadratic(a, b, [0, 1, 2]) == pytest.approx(cohens_kappa(table, wt="quadratic").kappa, abs=1e-12)
    words = rng.integers(1, 60, 200).tolist()
    assert pearson(ranks(words), ranks(a)) == pytest.approx(sps.spearmanr(words, a).statistic, abs=1e-12)
    x = np.column_stack([np.ones(200), rng.integers(0, 2, 200), np.log1p(words)])
    y = rng.normal(size=200)
    beta = solve3((x.T @ x).tolist(), (x.T @ y).tolist())
    assert beta == pytest.approx(np.linalg.lstsq(x, y, rcond=None)[0].tolist(), abs=1e-9)


@pytest.mark.integration
def test_verify_names_a_tampered_pairwise_count(two_judges, tmp_path):
    out = tmp_path / "pairs"
    shutil.copytree(two_judges, out)
    numbers = json.loads((out / "numbers.json").read_text())
    numbers["judges"]["pairwise"]["local"][0]["ties"] += 1
    (out / "numbers.json").write_text(json.dumps(numbers))
    r = cli("judge", "verify", str(out))
    assert r.returncode == 1
    assert "judges.pairwise.local[H1-Q8_0].ties" in r.stderr and "independent plain-Python" in r.stderr


@pytest.mark.unit
def test_verify_alpha_matches_the_reference_and_the_package():
    from judge.verify.second_path.agreement import alpha_ordinal

    # statistics.md: both readers say gamed 7, only A 3, only B 2, neither 28 (binary: ordinal = nominal)
    a = [1] * 7 + [1] * 3 + [0] * 2 + [0] * 28
    b = [1] * 7 + [0] * 3 + [1] * 2 + [0] * 28
    assert alpha_ordinal([a, b]) == pytest.approx(0.6592, abs=1e-4)
    m = [[0, 1, 2, 2, 1, 0, 2, 1], [0, 1, 2, 1, 1, 0, 2, 2], [1, 1, 2, 2, 0, 0, 2, 1]]
    ref = krippendorff.alpha(reliability_data=m, level_of_measurement="ordinal", value_domain=[0, 1, 2])
    assert alpha_ordinal(m) == pytest.approx(ref, abs=1e-12)


@pytest.mark.unit
def test_verify_alpha_uses_every_pairable_rating_like_the_package():
    from judge.verify.second_path.agreement import alpha_ordinal

    m = [[0, 1, 2, None, 2, 1, 0, None, 1], [0, 2, 2, 1, None, 1, 1, 2, None], [None, 1, 2, 1, 2, None, 0, 2, None]]
    ref = krippendorff.alpha(reliability_data=[[float("nan") if v is None else v for v in row] for row in m],
                             level_of_measurement="ordinal", value_domain=[0, 1, 2])
    assert alpha_ordinal(m) == pytest.approx(ref, abs=1e-12)
