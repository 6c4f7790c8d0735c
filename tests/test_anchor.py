"""The anchor: one sha256 over everything a decision depends on (the registration as the folder bound it, run.json,
the raw files, numbers.json), which the documentation tells a reviewer to record outside the folder. Its recipe
gives it, run literally; a resume that adds no evidence leaves it byte for byte; a post-hoc change of the registration,
however consistent, changes it and fails verify wherever a hash the folder recorded disagrees."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import jsonl
from core.records import RunInfo
from judge.gold.sources import run_gold
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.outputs.report import folder_report
from judge.outputs.review_md import write_review
from judge.results.files import ANCHOR_FILES, INVOCATIONS, anchor, last_invocation
from judge.verify.checks import Verification, verify
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import seal

from conftest import ROOT, cli


def documented_recipe() -> str:
    """The command docs/explanation/verify.md gives for recomputing the anchor by hand, exactly as printed."""
    return re.search(r"^    (sha256sum binding\.json .*\| sha256sum)$", 
                     (ROOT / "docs" / "explanation" / "verify.md").read_text(), re.M).group(1)


@pytest.mark.unit
@settings(max_examples=20, deadline=None)
@given(contents=st.lists(st.binary(max_size=300), min_size=len(ANCHOR_FILES), max_size=len(ANCHOR_FILES)))
def test_the_anchor_is_what_the_documented_recipe_prints(tmp_path_factory, contents):
    folder = tmp_path_factory.mktemp("results")
    for name, data in zip(ANCHOR_FILES, contents, strict=True):
        (folder / name).write_bytes(data)
    printed = subprocess.run(["bash", "-c", documented_recipe()], cwd=folder, capture_output=True, text=True,
                             check=True)
    assert printed.stdout.split()[0] == anchor(folder)
    # and spelt out with hashlib: each file's sha256, two spaces, its name, one line each; then that listing's sha256
    listing = "".join(f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in zip(ANCHOR_FILES, contents,
                                                                                             strict=True))
    assert anchor(folder) == hashlib.sha256(listing.encode()).hexdigest()


@pytest.mark.unit
def test_the_anchor_covers_the_registration_the_raw_files_and_the_numbers_and_nothing_volatile():
    assert ANCHOR_FILES == ("binding.json", "run.json", "answers.jsonl", "blinding.jsonl", "judgments.jsonl",
                            "numbers.json")
    assert INVOCATIONS not in ANCHOR_FILES and "report.md" not in ANCHOR_FILES


@pytest.mark.unit
def test_a_folder_without_binding_has_no_anchor(tmp_path):
    for name in ANCHOR_FILES[1:]:
        (tmp_path / name).write_text("{}\n")
    assert anchor(tmp_path) is None
    (tmp_path / "binding.json").write_text("{}\n")
    assert anchor(tmp_path) is not None


@pytest.mark.slow
def test_a_resume_that_makes_no_call_leaves_every_anchored_file_byte_identical(small_run):
    before = {name: (small_run / name).read_bytes() for name in ANCHOR_FILES}
    digest, runs = anchor(small_run), len(list(jsonl.read(small_run / INVOCATIONS)))
    r = cli("judge", "run", "--arms", "--limit", "3", "--out", str(small_run), "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"anchor: {digest}"  # printed at the end of the run
    last = last_invocation(small_run)
    assert last["answers"]["model_calls"] == 0 and all(s["model_calls"] == 0 for s in last["judging"].values())
    assert {name: (small_run / name).read_bytes() for name in ANCHOR_FILES} == before
    assert anchor(small_run) == digest and len(list(jsonl.read(small_run / INVOCATIONS))) == runs + 1
    assert f"Anchor: `{digest}`" in (small_run / "report.md").read_text()
    assert verify(small_run, recorded=digest) == Verification([], [], digest)


def _reanalyse(exp, out) -> None:
    """numbers.json and report.md recomputed with our own code, as a careful forger would."""
    info = json.loads((out / "run.json").read_text())
    e = load_experiment(exp)
    write_numbers(compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.from_dict(info, "run.json"),
                                  run_gold(e, out)), out / "numbers.json")
    write_review(out, exp)
    (out / "report.md").write_text(folder_report(out))


@pytest.mark.slow
def test_a_margin_raised_and_sealed_again_after_the_run_changes_the_anchor_and_fails_on_the_recorded_hashes(
        small_run, tmp_path):
    exp, out = tmp_path / "demo", tmp_path / "run"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    shutil.copytree(small_run, out)
    recorded = anchor(out)
    assert verify(out, exp).problems == []
    # the forger raises every margin, seals again, and rewrites binding.json's hashes and the numbers and report
    prereg = exp / "prereg.toml"
    prereg.write_text(prereg.read_text().replace("margin = 0.10", "margin = 0.80"))
    seal(exp)
    binding = json.loads((out / "binding.json").read_text())
    new = {"prereg.toml sha256": hashlib.sha256(prereg.read_bytes()).hexdigest(),
           "MANIFEST sha256": hashlib.sha256((exp / "MANIFEST").read_bytes()).hexdigest()}
    binding["registration"].update(new)
    binding["amendments"]["head"] = new["MANIFEST sha256"]  # with no amendment, the chain's head is the MANIFEST's
    (out / "binding.json").write_text(json.dumps(binding, indent=1) + "\n")
    _reanalyse(exp, out)
    numbers = json.loads((out / "numbers.json").read_text())
    assert {c["margin"] for c in numbers["comparisons"]} == {0.8}
    assert anchor(out) != recorded
    found = verify(out, exp).problems
    run_json = out / "run.json"
    for field, sha in (("hashes.prereg.toml", new["prereg.toml sha256"]), ("hashes.MANIFEST", new["MANIFEST sha256"])):
        assert any(p.startswith(f"{run_json}: field '{field}': reads '") and p.endswith(f"the experiment folder give "
                                                                                      f"'{sha}'") for p in found), found
    # run.json's hashes (the report's Inputs) rewritten too: nothing in either folder disagrees any more, and only
    # the anchor recorded when the run finished tells
    info = json.loads(run_json.read_text())
    info["hashes"].update({"prereg.toml": new["prereg.toml sha256"], "MANIFEST": new["MANIFEST sha256"]})
    run_json.write_text(json.dumps(info, indent=1) + "\n")
    _reanalyse(exp, out)
    assert verify(out, exp).problems == []
    assert verify(out, exp, recorded=recorded).problems == [
        f"anchor: this folder's anchor is {anchor(out)}, not the {recorded} recorded: something a decision depends "
        "on (binding.json, run.json, the raw files or numbers.json) changed since"]
