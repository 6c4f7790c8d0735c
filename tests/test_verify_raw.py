"""`judge verify` re-derives the raw files from the rawest evidence: each forgery of a real run fails it,
naming file, line and field, after the forger has recomputed numbers.json and report.md with our own code."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import judge.verify.checks
from judge.judging.blinding import blind
from judge.judging.calls import build_request, prompt_sha256
from judge.outputs.report import folder_report
from judge.results.files import ANCHOR_FILES, anchor
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.rubric import load_rubric
from registration.seal import seal

from conftest import cli
from support.forgery import label_key, reanalyse, records, rewrite

pytestmark = pytest.mark.slow


@pytest.fixture
def run(small_run, tmp_path):
    """This test's own copy of the small real run."""
    out = tmp_path / "run"
    shutil.copytree(small_run, out)
    return out


def verify(out, *args, env=None):
    return cli("judge", "verify", str(out), *args, env=env)


def forged_score(j):
    """A score the judge's raw reply does not give."""
    return 2 if j["score"] != 2 else 0


def test_an_untouched_copy_passes(run):
    r = verify(run)
    assert r.returncode == 0, r.stderr


def test_a_score_the_raw_reply_does_not_give_fails(run):
    path = run / "judgments.jsonl"
    recs = records(path)
    line, j = next((i, j) for i, j in enumerate(recs, 1) if j["status"] == "scored")
    j["score"] = j["fields"]["score"] = forged_score(j)
    rewrite(path, recs)
    reanalyse(run)
    r = verify(run)
    assert r.returncode == 1
    assert f"{path}:{line}: field 'score': reads {j['score']}" in r.stderr, r.stderr
    assert f"{path}:{line}: field 'fields'" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("file, code, words", [
    ("gold.py", "def score(question, reference, answer):\n    raise SystemExit(0)\n",
     "gold program gold.py:score exited (SystemExit(0)) on question"),
    ("gold.py", "import sys\nsys.exit(0)\n",
     "gold program 'gold.py:score' exited (SystemExit(0)) while being imported"),
    ("glue.py", "def answer(question, call_model, experiment_dir):\n    import os\n    os._exit(0)\n",
     "glue 'glue.py:answer' ended the process (exit status 0) when run again"),
])
def test_the_experiments_code_exiting_under_verify_never_decides_its_exit_status(run, tmp_path, file, code, words):
    """Every score of the folder forged, and the experiment's gold program (or glue) made to exit when verify calls
    it: verify still finds the forged scores (exit 1) and names the exit, which no longer ends verify's process
    (before, it exited 0 having printed nothing)."""
    exp = tmp_path / "exp"
    shutil.copytree(json.loads((run / "run.json").read_text())["experiment_dir"], exp)
    (exp / file).write_text((exp / file).read_text() + "\n\n" + code)
    seal(exp)
    path = run / "judgments.jsonl"
    recs = records(path)
    line = next(i for i, j in enumerate(recs, 1) if j["status"] == "scored")
    for j in recs:
        if j["status"] == "scored":
            j["score"] = j["fields"]["score"] = forged_score(j)
    rewrite(path, recs)
    r = verify(run, "--exp", str(exp))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"{path}:{line}: field 'score': reads {recs[line - 1]['score']}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert words in r.stdout + r.stderr, (r.stdout, r.stderr)


def _plain_answer(out):
    """(line, record) of an ok answer of the glue-less `base` arm, and its blinding label."""
    recs = records(out / "answers.jsonl")
    line, a = next((i, a) for i, a in enumerate(recs, 1) if a["arm"] == "base" and a["status"] == "ok"
                   and len(a["text"].split()) > 1)
    label = next(k["label"] for k in records(out / "blinding.jsonl") if k["row"] == a["row"])
    return recs, line, a, label


def _edit_text(a):
    """The same number of words, one of them changed."""
    words = a["text"].split(" ")
    words[-1] = "Never." if words[-1] != "Never." else "Always."
    return " ".join(words)


def test_an_answer_edited_after_judging_fails_on_its_prompt(run):
    recs, line, a, label = _plain_answer(run)
    a["text"] = a["raw_output"] = _edit_text(a)
    rewrite(run / "answers.jsonl", recs)
    reanalyse(run)  # every sha256 in numbers.json patched
    r = verify(run)
    assert r.returncode == 1
    jline = next(i for i, j in enumerate(records(run / "judgments.jsonl"), 1) if j["label"] == label)
    assert f"judgments.jsonl:{jline}: field 'prompt_sha256'" in r.stderr, r.stderr
    assert f"answers.jsonl:{line} (field 'text')" in r.stderr


def test_an_answer_edited_with_its_prompt_sha_patched_fails_on_its_calls_and_the_cache(run):
    recs, line, a, label = _plain_answer(run)
    a["text"] = _edit_text(a)
    rewrite(run / "answers.jsonl", recs)
    # the forger re-renders the judge prompt for the new text with our code and patches prompt_sha256
    info = json.loads((run / "run.json").read_text())
    e = load_experiment(info["experiment_dir"])
    from core.records import AnswerRow

    items, _ = blind([AnswerRow.from_dict(a)], {q.id: q for q in load_questions(e.set_paths())},
                     label_key(run), e.seed, e.scrub)
    jrecs = records(run / "judgments.jsonl")
    jline, j = next((i, j) for i, j in enumerate(jrecs, 1) if j["label"] == label)
    j["prompt_sha256"] = prompt_sha256(build_request(load_rubric(e.rubric), items[0], 0))
    rewrite(run / "judgments.jsonl", jrecs)
    reanalyse(run)
    r = verify(run)
    assert r.returncode == 1
    assert "field 'prompt_sha256'" not in r.stderr  # that forgery held; the rest did not
    assert f"judgments.jsonl:{jline}: field 'calls[0]'" in r.stderr, r.stderr
    assert f"answers.jsonl:{line}: field 'text'" in r.stderr  # a glue-less answer is its model's reply


def test_a_raw_output_rewritten_with_its_text_fails_against_the_call_cache(run):
    recs, line, a, _ = _plain_answer(run)
    a["text"] = a["raw_output"] = _edit_text(a)
    rewrite(run / "answers.jsonl", recs)
    reanalyse(run)
    r = verify(run)
    assert r.returncode == 1
    assert f"answers.jsonl:{line}: field 'raw_output': differs from the model's reply held in the call cache" \
        in r.stderr, r.stderr


def test_a_relabelled_answer_fails(run):
    """Swap which arm two blinding keys name: the verdicts of one arm counted for the other."""
    path = run / "blinding.jsonl"
    keys = records(path)
    i = next(i for i, k in enumerate(keys) if k["arm"] == "base" and k["quant"] == "Q8_0")
    k = next(k for k in keys if k["arm"] == "trained" and k["quant"] == "Q8_0")
    keys[i]["arm"], k["arm"] = k["arm"], keys[i]["arm"]
    rewrite(path, keys)
    reanalyse(run)
    r = verify(run)
    assert r.returncode == 1
    assert f"{path}:{i + 1}: field 'arm': reads 'trained'" in r.stderr, r.stderr


def test_a_label_from_another_seed_fails(run):
    path = run / "blinding.jsonl"
    keys = records(path)
    old = keys[0]["label"]
    keys[0]["label"] = "L" + "0" * 12
    rewrite(path, keys)
    jrecs = records(run / "judgments.jsonl")
    for j in jrecs:
        if j["label"] == old:
            j["label"] = keys[0]["label"]
    rewrite(run / "judgments.jsonl", jrecs)
    reanalyse(run)
    r = verify(run)
    assert r.returncode == 1
    assert f"{path}:1: field 'label': 'L000000000000' does not derive from any answer" in r.stderr, r.stderr


def test_a_row_with_other_settings_fails(run):
    path = run / "answers.jsonl"
    recs = records(path)
    recs[0]["settings"]["max_tokens"] = 128
    recs[0]["effective"]["sent"]["max_tokens"] = 128
    recs[1]["model_sha256"] = "0" * 64
    rewrite(path, recs)
    reanalyse(run)
    r = verify(run)
    assert r.returncode == 1
    assert f"{path}:1: field 'settings.max_tokens': reads 128, but arm {recs[0]['arm']!r} is registered with 64" \
        in r.stderr, r.stderr
    assert f"{path}:1: field 'effective'" in r.stderr and "max_tokens: registered 64" in r.stderr
    assert f"{path}:2: field 'model_sha256'" in r.stderr


def test_a_consistent_rewrite_of_a_raw_reply_is_caught_by_the_cache_and_else_only_by_the_anchor(run, tmp_path,
                                                                                                  monkeypatch):
    before = anchor(run)
    path = run / "judgments.jsonl"
    recs = records(path)
    line, j = next((i, j) for i, j in enumerate(recs, 1) if j["status"] == "scored" and len(j["attempts"]) == 1)
    j["score"] = j["fields"]["score"] = forged_score(j)
    j["attempts"][0]["raw"] = json.dumps(j["fields"])
    j["attempts"][0]["repaired"] = False
    rewrite(path, recs)
    reanalyse(run)
    found = judge.verify.checks.verify(run).problems
    assert any(p.startswith(f"{path}:{line}: field 'attempts[0].raw': differs from the judge's reply held in the "
                            "call cache") for p in found), found
    # a verifier whose environment has no cache is told so, loudly: never a silent pass
    monkeypatch.setenv("BLINDEVAL_CACHE", str(tmp_path / "elsewhere"))
    found = judge.verify.checks.verify(run).problems
    assert any(p.startswith(f"call cache: {tmp_path / 'elsewhere' / 'calls.sqlite'} does not exist") for p in found)
    # without the run's cache (another machine, said with --no-cache) the forgery is out of verify's reach
    # (docs/explanation/verify.md),
    # and verify says what it did not check ...
    r = verify(run, "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "unchecked: call cache: none consulted (--no-cache)" in r.stdout
    # ... and the anchor recorded elsewhere is what shows it
    after = anchor(run)
    assert after != before and f"anchor: {after}" in r.stdout
    r = verify(run, "--no-cache", "--anchor", before)
    assert r.returncode == 1 and f"anchor: this folder's anchor is {after}, not the {before} recorded" in r.stderr


def test_duplicate_comparison_ids_cannot_hide_an_edited_first_entry(run):
    numbers = json.loads((run / "numbers.json").read_text())
    first = json.loads(json.dumps(numbers["comparisons"][0]))
    first["verdict"] = "superior" if first["verdict"] != "superior" else "not shown"
    numbers["comparisons"].insert(0, first)
    (run / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    (run / "report.md").write_text(folder_report(run))  # re-rendered with our own renderer
    r = verify(run)
    assert r.returncode == 1
    cid = first["id"]
    assert f"numbers.json comparisons: 2 entries are named {cid!r}" in r.stderr, r.stderr
    assert f"numbers.json comparisons[{cid}].verdict = {first['verdict']!r}" in r.stderr


def test_the_anchor_is_what_sha256sum_gives_and_is_in_the_report_and_printed_by_verify(run):
    listing = subprocess.run(["sha256sum", *ANCHOR_FILES], cwd=run, capture_output=True, check=True).stdout
    digest = subprocess.run(["sha256sum"], input=listing, capture_output=True, check=True).stdout.split()[0].decode()
    assert anchor(run) == digest
    assert f"Anchor: `{digest}`" in (run / "report.md").read_text()
    r = verify(run)
    assert r.returncode == 0 and f"anchor: {digest}" in r.stdout, r.stderr
    (run / "run.json").write_text((run / "run.json").read_text().replace('"seed"', '"seed" ', 1))
    r = verify(run)
    assert r.returncode == 1 and "report.md line" in r.stderr and "Anchor: `" in r.stderr, r.stderr
