"""The walking skeleton end to end with the real tiny model: collect, blind, judge, analyse, report, verify."""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace

import pytest

from core import jsonl
from core.records import AnswerRow
from judge.judging.blinding import blind
from judge.judging.calls import build_request
from judge.results.files import last_invocation
from pipeline.run import DEMO
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.rubric import load_rubric

from conftest import cli

pytestmark = pytest.mark.slow

RAW = ("run.json", "answers.jsonl", "blinding.jsonl", "judgments.jsonl", "numbers.json", "report.md")


def rows(path):
    return [r for _, r in jsonl.read(path)]


def test_run_writes_every_raw_file(small_run):
    for name in RAW:
        assert (small_run / name).exists(), name
    answers = rows(small_run / "answers.jsonl")
    # 4 arms x 2 quants x 3 questions x 1 sample
    assert len(answers) == 24
    assert {a["arm"] for a in answers} == {"base", "trained", "glue-base", "glue-trained"}
    assert {a["quant"] for a in answers} == {"Q8_0", "Q4_K_M"}
    assert all(a["status"] == "ok" and a["model_sha256"] for a in answers)
    assert len({a["row"] for a in answers}) == 24
    judgments = rows(small_run / "judgments.jsonl")
    assert len(judgments) == 24 and len({j["label"] for j in judgments}) == 24
    for j in judgments:  # a verdict is a score or explicitly not one; never a silent zero
        assert (j["status"] == "scored") == (j["score"] is not None)
    report = (small_run / "report.md").read_text()
    assert "## Decisions (pre-registered)" in report and "H1-Q8_0" in report
    run = json.loads((small_run / "run.json").read_text())
    assert run["runtime"]["threads"] == 1
    assert all(e["n_threads"] == 1 for e in run["effective_settings"].values())


def test_trained_arm_is_a_different_model(small_run):
    answers = rows(small_run / "answers.jsonl")
    by = {(a["arm"], a["quant"], a["question_id"]): a for a in answers}
    assert all(a["lora_sha256"] for a in answers if a["arm"] in ("trained", "glue-trained"))
    assert not any(a["lora_sha256"] for a in answers if a["arm"] in ("base", "glue-base"))
    differ = sum(by[("base", q, i)]["raw_output"] != by[("trained", q, i)]["raw_output"]
                 for (arm, q, i) in by if arm == "base")
    assert differ >= 3, "the adapter should change most greedy outputs"


def test_quant_type_is_read_back_from_the_file(small_run):
    run = json.loads((small_run / "run.json").read_text())
    eff = run["effective_settings"]
    assert eff["base/Q8_0"]["file_type"] == "MOSTLY_Q8_0"
    assert eff["base/Q4_K_M"]["file_type"] == "MOSTLY_Q4_K_M"
    # K-quant fallback: the per-tensor types are recorded, not just the name asked for
    assert "Q5_0" in eff["base/Q4_K_M"]["tensor_types"]


def test_rerun_makes_no_model_call(small_run):
    r = cli("judge", "run", "--arms", "--limit", "3", "--out", str(small_run), "--quiet")
    assert r.returncode == 0, r.stderr
    last = last_invocation(small_run)
    assert last["answers"]["model_calls"] == 0
    assert last["answers"]["rows_already_done"] == 24
    judging = last["judging"]
    assert judging and all(stats["model_calls"] == 0 for stats in judging.values())
    assert len(rows(small_run / "answers.jsonl")) == 24
    assert len(rows(small_run / "judgments.jsonl")) == 24


def test_verify_passes_then_names_a_tampered_score(small_run, tmp_path):
    ok = cli("judge", "verify", str(small_run))
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "tampered"
    shutil.copytree(small_run, bad)
    lines = (bad / "judgments.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if rec["status"] == "scored":
            rec["score"] = 2 if rec["score"] != 2 else 0
            rec["fields"]["score"] = rec["score"]
            lines[i] = jsonl.dumps(rec)
            break
    (bad / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    r = cli("judge", "verify", str(bad))
    assert r.returncode == 1
    assert "raw file judgments.jsonl" in r.stderr
    assert re.search(r"cells\[[\w-]+/[\w]+\]\.mean", r.stderr), r.stderr


def test_verify_names_an_edited_report_number(small_run, tmp_path):
    bad = tmp_path / "tampered-report"
    shutil.copytree(small_run, bad)
    text = (bad / "report.md").read_text()
    m = re.search(r"\| base \| Q8_0 \| (\d\.\d{3}) \|", text)
    assert m
    new = "1.999" if m.group(1) != "1.999" else "0.001"
    (bad / "report.md").write_text(text.replace(m.group(0), m.group(0).replace(m.group(1), new)))
    r = cli("judge", "verify", str(bad))
    assert r.returncode == 1 and "report.md line" in r.stderr and new in r.stderr


# Identity strings planted into the real answers, one per answer in turn, with how many matches each holds
PLANTED = [("<think>As SmolLM2 I think so.</think>", 1), (" I am ChatGPT, built by OpenAI.", 2),
           (" (Claude 3.5 Sonnet, Anthropic)", 2), (" Signed: Llama 3, Meta AI.", 2), (" -- Qwen2.5 / DeepSeek-R1", 2),
           (" Gemini 1.5 Pro from Google.", 2), (" Mistral 7B, GPT-4o.", 2)]


def test_no_identity_in_any_judge_prompt(small_run):
    """Blinding: no arm, model, quant, adapter or path string occurs in a rendered judge prompt, even when
    the answers name a model or vendor; every planted name is removed and counted."""
    exp = load_experiment(DEMO)
    questions = {q.id: q for q in load_questions(exp.set_paths())}
    answers = [AnswerRow.from_dict(r) for r in rows(small_run / "answers.jsonl")]
    planted = {a.row: PLANTED[i % len(PLANTED)] for i, a in enumerate(answers)}
    before = {a.row: blind([a], questions, b"secret", 0, exp.scrub)[1][0].scrubbed for a in answers}
    answers = [replace(a, text=a.text + planted[a.row][0]) for a in answers]
    items, keys = blind(answers, questions, b"secret", 0, exp.scrub)
    rubric = load_rubric("correctness")
    run = json.loads((small_run / "run.json").read_text())
    forbidden = {a.name for a in exp.arms} | {"Q8_0", "Q4_K_M", "Q4_1", "lora", "adapter", "gguf", "smollm",
                                              "SmolLM2", "blindeval", "/root", "cache"}
    forbidden |= {e["model_sha256"][:12] for e in run["effective_settings"].values()}
    forbidden |= {"ChatGPT", "OpenAI", "Claude", "Sonnet", "Anthropic", "Llama", "Meta AI", "Qwen", "DeepSeek",
                  "Gemini", "Google", "Mistral", "GPT-4o", "<think>"}
    assert len(items) == 24
    for item in items:
        prompt = "\n".join(c for _, c in build_request(rubric, item, 0).messages)
        for word in forbidden:
            assert word.lower() not in prompt.lower(), (word, item.label)
    for k in keys:
        assert k.scrubbed == before[k.row] + planted[k.row][1], (k.row, planted[k.row])


def test_changed_sealed_question_is_refused(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    sets = exp / "sets" / "exam.jsonl"
    data = bytearray(sets.read_bytes())
    i = data.index(b"?")
    data[i:i + 1] = b"!"
    sets.write_bytes(bytes(data))
    r = cli("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "1", "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "sets/exam.jsonl" in r.stderr and "changed after sealing" in r.stderr
    assert "Traceback" not in r.stderr


def test_verify_names_an_edited_number_in_numbers_json(small_run, tmp_path):
    bad = tmp_path / "tampered-numbers"
    shutil.copytree(small_run, bad)
    numbers = json.loads((bad / "numbers.json").read_text())
    c = next(c for c in numbers["comparisons"] if c["result"])
    c["result"]["bound"] += 0.05
    (bad / "numbers.json").write_text(json.dumps(numbers, indent=1))
    r = cli("judge", "verify", str(bad))
    assert r.returncode == 1
    assert f"comparisons[{c['id']}].result.bound" in r.stderr


def test_report_links_plots_and_shows_the_quantisation_check(small_run):
    report = (small_run / "report.md").read_text()
    for png in ("plots/forest.png", "plots/scores.png"):
        assert f"]({png})" in report
        assert (small_run / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "## Quantisation check" in report and "## Subsets (secondary, exploratory)" in report
    numbers = json.loads((small_run / "numbers.json").read_text())
    assert set(numbers["quant_check"]["means"]["base"]) == {"Q8_0", "Q4_K_M"}
    assert all("mde" in c["result"] and "n_for_margin" in c["result"] for c in numbers["comparisons"] if c["result"])


def test_amendment_after_judging_is_refused_unless_post_hoc(demo_copy, tmp_path):
    from registration.seal import amend, seal

    def args(exp, out):
        return ("judge", "run", "--exp", str(exp), "--arms", "base,trained", "--limit", "2", "--out", str(out),
                "--quiet")

    judged, judged_out = tmp_path / "demo", tmp_path / "out"
    shutil.copytree(demo_copy, judged)
    seal(judged)
    assert cli(*args(judged, judged_out)).returncode == 0
    for post_hoc in (False, True):  # each amends its own copy of the judged experiment and its results folder
        exp, out = tmp_path / f"demo-{post_hoc}", tmp_path / f"out-{post_hoc}"
        shutil.copytree(judged, exp)
        shutil.copytree(judged_out, out)
        amend(exp, "tighten the margin after seeing scores", post_hoc=post_hoc)
        r = cli(*args(exp, out))
        if post_hoc:
            assert r.returncode == 0, r.stderr
            assert "**post hoc**" in (out / "report.md").read_text()
        else:
            assert r.returncode == 2
            assert "amendments.jsonl:1" in r.stderr and "'date'" in r.stderr
