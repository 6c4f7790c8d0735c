"""A hypothesis registered with `statistic = "pass^k"` (registration.hypotheses; judge.numbers.stability
.pass_hat_k_scores; judge.verify.second_path.decisions.pass_hat_k): decided on each question's pass^k indicator, on
planted K = 3 scores whose indicators, paired differences and verdict are worked out here by hand, through the real
run and `judge verify`; the registrations refused.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from scipy import stats
from test_contamination_run import PLANTED_SEEN, planted_run
from test_k_samples import run_planted
from test_stability import _experiment, _records

from core.errors import BadInput
from judge.numbers.stability import pass_hat_k_scores
from judge.verify.second_path.decisions import pass_hat_k
from registration.prereg import load_experiment

from conftest import ROOT, cli

PASS_HYPOTHESIS = ('[[hypotheses]]\nid = "H2"\na = "base"\nb = "trained"\nquant = "served"\nkind = "superiority"\n'
                   'margin = 0.0\nalpha = 0.025\nstatistic = "pass^k"\n')


def _demo(tmp_path, analysis_line: str, statistic: str) -> tuple:
    """The demo's registration with `analysis_line` in [analysis] and `statistic` on its first hypothesis; the path
    and the line the statistic is on."""
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    text = (exp / "prereg.toml").read_text().replace("[analysis]\n", f"[analysis]\n{analysis_line}\n", 1)
    text = text.replace('alpha = 0.025\n', f'alpha = 0.025\nstatistic = "{statistic}"\n', 1)
    (exp / "prereg.toml").write_text(text)
    line = text.splitlines().index(f'statistic = "{statistic}"') + 1
    return exp, line


@pytest.mark.unit
def test_pass_hat_k_without_a_registered_pass_score_is_refused_naming_file_line_and_field(tmp_path):
    exp, line = _demo(tmp_path, "", "pass^k")
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert (e.value.field, e.value.line) == ("statistic", line)
    assert "pass_score" in e.value.message and e.value.file.endswith("prereg.toml")


@pytest.mark.unit
def test_an_unknown_statistic_is_refused_naming_file_line_and_field(tmp_path):
    exp, line = _demo(tmp_path, "pass_score = 2", "median")
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert (e.value.field, e.value.line) == ("statistic", line) and "'median'" in e.value.message


@pytest.mark.unit
@pytest.mark.parametrize("where, line, named", [
    ("[analysis]\n", 'judge_error = "decide"', 'judge_error = "decide"'),
    ("\n[judge]\n", 'panel_rule = "unrelated-mean"', "panel_rule = 'unrelated-mean'"),
])
def test_pass_hat_k_beside_a_decision_on_mean_scores_is_refused(tmp_path, where, line, named):
    # a gold-corrected decision and a panel of judges decide on mean scores, never on one judge's samples
    exp, at = _demo(tmp_path, "pass_score = 2", "pass^k")
    text = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(text.replace(where, f"{where}{line}\n", 1))
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert (e.value.field, e.value.line) == ("statistic", at + 1) and named in e.value.message


@pytest.mark.unit
def test_the_refusal_exits_2_through_the_cli(tmp_path):
    exp, line = _demo(tmp_path, "", "pass^k")
    assert cli("judge", "seal", str(exp)).returncode == 0  # sealing reads no setting: the run refuses, before any call
    r = cli("judge", "run", "--exp", str(exp), "--limit", "1", "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 2 and f"prereg.toml:{line}" in r.stderr and "'statistic'" in r.stderr, r.stderr


@pytest.mark.unit
def test_mean_is_the_default_and_pass_hat_k_is_read(tmp_path):
    exp, _ = _demo(tmp_path, "pass_score = 2", "pass^k")
    hyps = load_experiment(exp).hypotheses
    assert hyps[0].statistic == "pass^k" and {h.statistic for h in hyps[1:]} == {"mean"}


@pytest.mark.unit
def test_both_paths_give_the_indicators_by_hand_and_leave_a_question_with_an_unscored_sample_out():
    # K = 3 at pass score 2, by hand: q1 [2, 2, 2] -> 1; q2 [2, 1, 2] -> 0; q3 [0, 0, 0] -> 0; q4 [2, unscored, 2]:
    # left out (neither a pass nor a fail); at pass score 1, q2 -> 1
    keys, verdicts = _records({"q1": [2, 2, 2], "q2": [2, 1, 2], "q3": [0, 0, 0], "q4": [2, None, 2]})
    rows = {k.label: k.to_dict() for k in keys}
    for score, want in ((2, {"q1": 1, "q2": 0, "q3": 0}), (1, {"q1": 1, "q2": 1, "q3": 0})):
        exp = _experiment(3, score)
        assert dict(pass_hat_k_scores(exp, keys, verdicts, "j")) == {("a", "Q8_0"): want}
        assert dict(pass_hat_k(rows, [v.to_dict() for v in verdicts], "j", exp)) == {("a", "Q8_0"): want}


@pytest.mark.integration
def test_a_pass_hat_k_hypothesis_is_decided_on_the_indicators_by_hand_and_verifies(tmp_path):
    # K = 3, 20 questions, pass score 2. base: every question [2, 2, 1] -> pass^k 0 (mean 5/3).
    # trained: q00..q15 [2, 2, 2] -> 1; q16..q18 [2, 1, 2] -> 0; q19 [2, unscored, 2] -> left out (mean 2).
    base = [[2, 2, 1]] * 20
    trained = [[2, 2, 2]] * 16 + [[2, 1, 2]] * 3 + [[2, None, 2]]
    analysis = ('[analysis]\nresamples = 1000\nmethod = "percentile"\nseed = 7\nmax_unscored = 0.10\n'
                'calibration_sims = 20\npass_score = 2\n\n' + PASS_HYPOTHESIS)
    out, _, v = run_planted(tmp_path, {"alpha": base, "beta": trained}, [None] * 20, analysis)
    assert v.returncode == 0, v.stdout + v.stderr  # the second path decides the pass^k hypothesis alike
    numbers = json.loads((out / "numbers.json").read_text())
    c = {x["id"]: x for x in numbers["comparisons"]}
    h2, h1 = c["H2"], c["H1"]
    # pass^k: 19 paired questions (q19 left out), differences b - a: 16 of 1 (q00..q15) and 3 of 0 (q16..q18)
    assert h2["statistic"] == "pass^k"
    assert h2["paired_questions"] == [f"q{i:02d}" for i in range(19)]
    r = h2["result"]
    assert (r["n"], r["up"], r["down"], r["ties"]) == (19, 16, 0, 3)
    assert r["diff"] == pytest.approx(16 / 19, abs=1e-12) and r["scale"] == [0, 1, 1]
    # 16 wins of the scale's full range, no loss: the sign test alone gives 2^-16, far below alpha 0.025 / 2 (Holm)
    assert h2["verdict"] == "superior"
    # its paired t interval is on the indicators: scipy's, on 16 ones and 3 zeros, two-sided 1 - 2 alpha = 0.95
    d = [1.0] * 16 + [0.0] * 3
    lo, hi = stats.t.interval(0.95, 18, loc=np.mean(d), scale=stats.sem(d))
    assert (r["t_low"], r["t_high"]) == pytest.approx((lo, hi), abs=1e-9)
    # the mean hypothesis on the same scores: no statistic recorded, 20 paired questions, difference 17 x (1/3) / 20
    assert "statistic" not in h1
    assert h1["result"]["n"] == 20 and h1["result"]["diff"] == pytest.approx(17 / 60, abs=1e-12)
    assert h1["result"]["scale"] == [0, 2, 3]
    report = (out / "report.md").read_text()
    assert "| H2 (decided on pass^k) | trained vs base |" in report and "| H1 | trained vs base |" in report


@pytest.mark.integration
def test_the_contamination_re_decision_of_a_pass_hat_k_hypothesis_is_on_the_indicators_and_verifies(tmp_path):
    # K = 1 at pass score 2: base scores 0 on the six seen questions and 1 on the rest -> every indicator 0; trained
    # scores 2 on the seen ones (indicator 1) and 1 on the rest (0). All questions: six wins of the full range, six
    # ties; on the six clean questions every pair ties (0 - 0), so superiority is not shown there.
    out = planted_run(tmp_path, "both", lambda text: text.replace(
        'margin = 0.0\n', 'margin = 0.0\nstatistic = "pass^k"\n').replace(
        "max_unscored = 0.10\n", "max_unscored = 0.10\npass_score = 2\n"))
    numbers = json.loads((out / "numbers.json").read_text())
    [h1] = numbers["comparisons"]
    assert h1["statistic"] == "pass^k" and h1["result"]["scale"] == [0, 1, 1]
    assert (h1["result"]["up"], h1["result"]["ties"], h1["result"]["diff"]) == (6, 6, 0.5)
    assert h1["verdict"] == "superior"
    [clean] = numbers["contamination"]["comparisons"]
    assert clean["paired_questions"] == [f"q{i:02d}" for i in range(12) if i not in PLANTED_SEEN]
    assert clean["result"]["scale"] == [0, 1, 1] and clean["result"]["diff"] == 0
    assert (clean["verdict"], clean["differs"]) == ("not shown", True)
    v = cli("judge", "verify", str(out), timeout=600)
    assert v.returncode == 0, v.stdout + v.stderr
