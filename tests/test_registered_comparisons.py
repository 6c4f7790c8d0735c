"""[[comparisons]]: this run's arm against a previous results folder's arm, registered by the folder's anchor and
decided like a hypothesis.

Both folders are copies of tests/data/version1 (no model): the previous folder's base arm and this folder's trained arm
get planted scores, so the paired differences are known by hand; the anchor is computed here from its definition (the
sha256 of what `sha256sum` prints over the anchored files)."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from core.errors import BadInput
from core.records import RunInfo
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.verify.checks import verify
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import seal

from conftest import cli

VERSION1 = Path(__file__).parent / "data" / "version1"
ANCHORED = ("binding.json", "run.json", "answers.jsonl", "blinding.jsonl", "judgments.jsonl", "numbers.json")


def anchor_by_hand(folder: Path) -> str:
    listing = "".join(f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in ANCHORED)
    return hashlib.sha256(listing.encode()).hexdigest()


def plant(folder: Path, arm: str, scores: dict[str, int]) -> None:
    """The primary judge's verdict on each question of `arm` becomes the planted score."""
    keys = {r["label"]: r for r in map(json.loads, (folder / "blinding.jsonl").read_text().splitlines())
            if "arm" in r}
    lines = []
    for line in (folder / "judgments.jsonl").read_text().splitlines():
        r = json.loads(line)
        k = keys.get(r.get("label"))
        if r["judge"] == "openai" and k and k["arm"] == arm:
            r.update(status="scored", score=scores[k["question_id"]])
        lines.append(json.dumps(r, sort_keys=True, separators=(",", ":")))
    (folder / "judgments.jsonl").write_text("\n".join(lines) + "\n")


def unclustered(exp: Path) -> None:
    """The set's questions without their one shared cluster (one cluster is below min_clusters: always inconclusive)."""
    path = exp / "sets" / "exam.jsonl"
    rows = [{k: v for k, v in json.loads(x).items() if k != "cluster"} for x in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def runs(tmp_path):
    """(experiment, this run's folder, previous run's folder, its anchor): the previous folder's base arm scores
    0, 1, 0 on q01..q03."""
    prev_exp, prev = shutil.copytree(VERSION1 / "exp", tmp_path / "prev_exp"), shutil.copytree(VERSION1 / "out",
                                                                                               tmp_path / "prev")
    run = json.loads((prev / "run.json").read_text())
    run["experiment_dir"] = str(prev_exp)
    (prev / "run.json").write_text(json.dumps(run, indent=1) + "\n")
    plant(prev, "base", {"q01": 0, "q02": 1, "q03": 0})
    exp, out = shutil.copytree(VERSION1 / "exp", tmp_path / "exp"), shutil.copytree(VERSION1 / "out", tmp_path / "out")
    unclustered(exp)
    return exp, out, prev, anchor_by_hand(prev)


def register(exp: Path, body: str) -> None:
    text = (exp / "prereg.toml").read_text().replace('method = "percentile"',
                                                     'method = "percentile"\ndecision_rule = "bootstrap"')
    (exp / "prereg.toml").write_text(text + "\n[[comparisons]]\n" + body)


def numbers(exp: Path, out: Path):
    e = load_experiment(exp)
    return compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.read_file(out / "run.json"))


def comparison(folder: Path, anchor: str, kind: str = "superiority", margin: float = 0.0) -> str:
    return (f'id = "C1"\nfolder = "{folder}"\nanchor = "{anchor}"\narm = "trained"\nprevious_arm = "base"\n'
            f'quant = "served"\nkind = "{kind}"\nmargin = {margin}\nalpha = 0.025\n')


@pytest.mark.unit
@pytest.mark.parametrize("trained, verdict", [
    # d = 2, 1, 2: mean 5/3; every bootstrap resample's mean is at least min d = 1 > 0, so superiority is shown
    ({"q01": 2, "q02": 2, "q03": 2}, "superior"),
    # d = 2, -1, 0: mean 1/3; a resample of q02 alone has mean -1, so the 2.5% percentile lies below 0: not shown
    ({"q01": 2, "q02": 0, "q03": 0}, "not shown"),
])
def test_a_registered_comparison_is_decided_on_the_planted_differences(runs, trained, verdict):
    exp, out, prev, anchor = runs
    plant(out, "trained", trained)
    register(exp, comparison(prev, anchor))
    computed = numbers(exp, out)
    assert computed.text() == numbers(exp, out).text()  # the same bytes for the same inputs (the anchor's)
    c, = computed.run_comparisons
    before = {"q01": 0, "q02": 1, "q03": 0}
    d = [trained[q] - before[q] for q in ("q01", "q02", "q03")]
    assert (c.id, c.anchor, c.arm, c.previous_arm, c.n) == ("C1", anchor, "trained", "base", 3)
    assert c.result.diff == pytest.approx(sum(d) / 3) and c.result.ci_low <= c.result.diff <= c.result.ci_high
    assert (c.result.up, c.result.down, c.result.ties) == (sum(x > 0 for x in d), sum(x < 0 for x in d),
                                                           sum(x == 0 for x in d))
    assert min(d) <= c.result.bound <= sum(d) / 3
    assert c.verdict == verdict, c.reason


@pytest.mark.unit
def test_numbers_without_a_registered_comparison_have_no_section(runs):
    exp, out, _, _ = runs
    assert "run_comparisons" not in numbers(exp, out).to_dict()


@pytest.mark.unit
def test_a_previous_folder_of_another_anchor_is_refused_naming_both(runs):
    exp, out, prev, anchor = runs
    register(exp, comparison(prev, "0" * 64))
    with pytest.raises(BadInput) as e:
        numbers(exp, out)
    assert anchor in str(e.value) and "0" * 64 in str(e.value) and e.value.field == "anchor"


@pytest.mark.unit
def test_a_question_reworded_between_the_runs_is_refused_naming_it(runs):
    exp, out, prev, anchor = runs
    path = exp / "sets" / "exam.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    rows[1]["question"] += " (reworded)"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    register(exp, comparison(prev, anchor))
    with pytest.raises(BadInput) as e:
        numbers(exp, out)
    assert rows[1]["id"] in str(e.value) and e.value.field == "question_ids"


@pytest.mark.unit
@pytest.mark.parametrize("change, field", [
    (lambda t: t.replace('anchor = "', 'anchor = "x'), "anchor"),
    (lambda t: t.replace('arm = "trained"', 'arm = "nobody"'), "arm"),
    (lambda t: t.replace('quant = "served"\nkind', 'quant = "Q4"\nkind'), "quant"),
    (lambda t: t.replace("alpha = 0.025\n", "alpha = 0.7\n"), "alpha"),
    (lambda t: t.replace('kind = "superiority"', 'kind = "better"'), "kind"),
    (lambda t: t + "colour = 1\n", "colour"),
    (lambda t: t.replace('folder = "', 'folder = 3\n# "'), "folder"),
])
def test_a_bad_registered_value_is_refused_naming_file_line_and_field(runs, change, field):
    exp, _, prev, anchor = runs
    register(exp, change(comparison(prev, anchor)))
    with pytest.raises(BadInput) as e:
        load_experiment(exp)
    assert e.value.field == field and e.value.line is not None and e.value.file == str(exp / "prereg.toml")


@pytest.mark.unit
def test_the_previous_arm_defaults_to_the_arm(runs):
    exp, _, prev, anchor = runs
    register(exp, comparison(prev, anchor).replace('previous_arm = "base"\n', ""))
    assert load_experiment(exp).comparisons[0].previous_arm == "trained"


@pytest.mark.unit
def test_verify_finds_a_previous_folder_edited_after_registration(runs):
    exp, out, prev, anchor = runs
    register(exp, comparison(prev, anchor))
    seal(exp)
    plant(prev, "base", {"q01": 2, "q02": 2, "q03": 2})  # the previous run's verdicts edited afterwards
    edited = anchor_by_hand(prev)
    v = verify(out, exp, [])
    assert any(p.startswith("comparison C1:") and anchor in p and edited in p for p in v.problems), v.problems


@pytest.mark.unit
def test_verify_recomputes_the_section_by_both_paths(runs):
    exp, out, prev, anchor = runs
    plant(out, "trained", {"q01": 2, "q02": 2, "q03": 2})
    register(exp, comparison(prev, anchor))
    seal(exp)
    write_numbers(numbers(exp, out), out / "numbers.json")
    assert not [p for p in verify(out, exp, []).problems if "run_comparisons" in p]
    doc = json.loads((out / "numbers.json").read_text())
    doc["run_comparisons"][0]["result"]["diff"] = 1.0  # by hand: (2 + 1 + 2) / 3, never 1
    doc["run_comparisons"][0]["verdict"] = "not shown"
    (out / "numbers.json").write_text(json.dumps(doc, indent=1) + "\n")
    found = [p for p in verify(out, exp, []).problems if "run_comparisons" in p]
    assert any("result.diff" in p and "independent" in p for p in found), found
    assert any("verdict" in p and "independent" in p for p in found), found
    assert any("result.diff" in p and "recomputation from raw files" in p for p in found), found


@pytest.mark.integration
def test_judge_run_refuses_a_previous_folder_of_another_anchor_before_any_call(runs, tmp_path):
    exp, _, prev, anchor = runs
    register(exp, comparison(prev, "f" * 64))
    seal(exp)
    new = tmp_path / "new"
    r = cli("judge", "run", "--exp", str(exp), "--out", str(new), env={"OPENAI_API_KEY": "unused"})
    assert r.returncode == 2, r.stderr
    assert "f" * 64 in r.stderr and anchor in r.stderr and str(prev) in r.stderr and "Traceback" not in r.stderr
    assert not new.exists()  # refused before the folder, let alone a call


@pytest.mark.unit
def test_a_margin_outside_the_rubrics_range_is_refused_before_any_call(runs):
    from judge.judging.preflight import check_margins
    from registration.rubric import load_rubric, rubric_dir

    exp, _, prev, anchor = runs
    register(exp, comparison(prev, anchor, kind="non_inferiority", margin=2.0))  # the rubric's scale is 0..2
    e = load_experiment(exp)
    with pytest.raises(BadInput) as err:
        check_margins(e, [load_rubric(e.rubric, rubric_dir(e.rubric, e.dir))])
    assert err.value.field == "margin" and err.value.line is not None and "comparison 'C1'" in str(err.value)


@pytest.mark.unit
def test_too_many_unscored_answers_leave_it_inconclusive_by_both_paths(runs):
    exp, out, prev, anchor = runs
    plant(out, "trained", {"q01": 2, "q02": 2, "q03": 2})
    keys = {r["label"]: r for r in map(json.loads, (out / "blinding.jsonl").read_text().splitlines()) if "arm" in r}
    lines = []
    for r in map(json.loads, (out / "judgments.jsonl").read_text().splitlines()):
        k = keys.get(r["label"])
        if r["judge"] == "openai" and k and (k["arm"], k["question_id"]) == ("trained", "q03"):
            r.update(status="unscored", score=None)  # 1 of trained's 3 answers: 33% > the registered 10%
        lines.append(json.dumps(r, sort_keys=True, separators=(",", ":")))
    (out / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    register(exp, comparison(prev, anchor))
    seal(exp)
    computed = numbers(exp, out)
    c, = computed.run_comparisons
    assert (c.n, c.unscored_rate["this"]) == (2, pytest.approx(1 / 3))
    assert c.verdict == "inconclusive" and "exceed the registered 10%" in c.reason and "superior" in c.reason
    write_numbers(computed, out / "numbers.json")
    assert not [p for p in verify(out, exp, []).problems if "run_comparisons" in p]
