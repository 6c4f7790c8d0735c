"""`judge verify` re-checks the amendment chain by an independent path: hash links, the date rule, post hoc.

One real run (one arm, two questions) is made per module; every test works on its own copy of the
experiment and the results folder, and verifies the copy with `--exp`.
"""
from __future__ import annotations

import json
import shutil

import pytest

import judge.verify.amendments
import judge.verify.checks
import registration.seal
from core import jsonl
from core.records import RunInfo
from judge.gold.sources import run_gold
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.outputs.report import folder_report
from judge.outputs.review_md import write_review
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import amend, seal

from conftest import cli

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def amended_run(demo_copy, tmp_path_factory):
    """A demo copy with two amendments sealed before judging, and one small real run of it."""
    root = tmp_path_factory.mktemp("amended")
    exp, out = root / "demo", root / "run"
    shutil.copytree(demo_copy, exp)
    seal(exp)  # a fresh chain anchor for this copy
    amend(exp, "a decline on an out-of-scope question counts as correct (≥ 1 point)")  # non-ASCII: hashed as UTF-8
    amend(exp, "report the Q4_K_M cells first")
    r = cli("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "2", "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    return exp, out


@pytest.fixture
def run_copy(amended_run, tmp_path):
    """This test's own copy of the experiment and of the results folder."""
    exp, out = (tmp_path / "demo", tmp_path / "run")
    shutil.copytree(amended_run[0], exp)
    shutil.copytree(amended_run[1], out)
    return exp, out


def verify(exp, out):
    return cli("judge", "verify", str(out), "--exp", str(exp))


def reanalyse(exp, out):
    """Recompute numbers.json and report.md from the raw files, as a careful forger would after editing them."""
    run = json.loads((out / "run.json").read_text())
    e = load_experiment(exp)
    numbers = compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.from_dict(run, "run.json"),
                              run_gold(e, out))
    write_numbers(numbers, out / "numbers.json")
    write_review(out, exp)
    (out / "report.md").write_text(folder_report(out))


def edit_amendment(exp, line, **changes):
    """Rewrite one record of amendments.jsonl in place, as a hand edit after the run would."""
    lines = (exp / "amendments.jsonl").read_text().splitlines()
    lines[line - 1] = jsonl.dumps({**json.loads(lines[line - 1]), **changes})
    (exp / "amendments.jsonl").write_text("\n".join(lines) + "\n")


def test_amendments_sealed_before_judging_pass(run_copy):
    exp, out = run_copy
    r = verify(exp, out)
    assert r.returncode == 0, r.stderr
    stored = json.loads((out / "numbers.json").read_text())["amendments"]
    check = judge.verify.amendments.amendment_check(exp, out, stored)
    assert check == {"problems": [], "broken_at": None, "late": set()}


def test_an_edited_amendment_breaks_the_chain_link_after_it(run_copy):
    exp, out = run_copy
    edit_amendment(exp, 1, date="2020-01-01T00:00:00+00:00")
    r = verify(exp, out)
    assert r.returncode == 1
    path = exp / "amendments.jsonl"
    # the main seal check and the independent check both name line 2's prev, and agree
    assert f"seal: {path}:2: field 'prev'" in r.stderr
    assert f"amendments: {path}:2: field 'prev': hash chain broken at amendment 2, the link from line 1 to line 2" \
        in r.stderr
    assert "disagree" not in r.stderr


def test_an_edited_last_amendment_is_caught_against_numbers_json(run_copy):
    """No later record chains the last one: what numbers.json was computed from anchors it."""
    exp, out = run_copy
    edit_amendment(exp, 2, text="report the Q8_0 cells first")
    r = verify(exp, out)
    assert r.returncode == 1
    assert (f"amendments: {exp / 'amendments.jsonl'}:2: field 'text': amendment 2 reads 'report the Q8_0 cells "
            "first', but numbers.json was computed with 'report the Q4_K_M cells first'") in r.stderr


def test_an_amendment_dated_after_the_first_judgment_fails(run_copy):
    exp, out = run_copy
    amend(exp, "tighten the margin after seeing scores")  # dated now, after judging; a valid chain link
    reanalyse(exp, out)  # numbers.json and report.md agree with the files: only the date rule is left
    r = verify(exp, out)
    assert r.returncode == 1
    problems = [line for line in r.stderr.splitlines() if line.startswith("  - ")]
    assert len(problems) == 1, r.stderr  # the two paths agree, so one finding, not a disagreement
    assert problems[0].startswith(f"  - amendments: {exp / 'amendments.jsonl'}:3: field 'date': amendment 3 is dated")
    assert "not marked post hoc" in problems[0]


def test_a_late_amendment_marked_post_hoc_passes_and_is_reported(run_copy):
    exp, out = run_copy
    amend(exp, "tighten the margin after seeing scores", post_hoc=True)
    reanalyse(exp, out)
    r = verify(exp, out)
    assert r.returncode == 0, r.stderr
    report = (out / "report.md").read_text()
    assert "- Amendment 3 (" in report and "— **post hoc**, written after judging began" in report
    assert "Amendment 3 was written after judging began" in report


def test_verify_fails_when_the_main_path_misses_a_late_amendment(run_copy, monkeypatch):
    exp, out = run_copy
    amend(exp, "tighten the margin after seeing scores")
    reanalyse(exp, out)
    monkeypatch.setattr(judge.verify.checks, "late_amendments", lambda numbers: [])
    problems = judge.verify.checks.verify(out, exp).problems
    assert ("amendments: the two paths disagree on which amendments are dated after the first judgment and not "
            "marked post hoc: the main path (registration.seal, judge.numbers.analysis) gives [], the independent "
            "plain-Python check gives [3]") in problems


def test_verify_fails_when_the_main_path_misses_a_broken_chain(run_copy, monkeypatch):
    exp, out = run_copy
    edit_amendment(exp, 1, text="a decline counts as correct")
    # a main path that reads the amendments without checking their links
    monkeypatch.setattr(registration.seal, "verify_amendments",
                        lambda exp_dir: [r for _, r in jsonl.read(exp_dir / "amendments.jsonl")])
    problems = judge.verify.checks.verify(out, exp).problems
    assert ("amendments: the two paths disagree on the first broken line of the amendment chain: the main path "
            "(registration.seal, judge.numbers.analysis) gives None, the independent plain-Python check gives 2"
            ) in problems
