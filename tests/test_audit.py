"""The top-k gaming audit on the shipped synthetic log, with real readers: the local llama.cpp model,
an OpenAI-compatible llama.cpp server on 127.0.0.1, and an Anthropic client that cannot get a verdict."""
from __future__ import annotations

import json
import math

import pytest

from audit.gate import check_gate
from audit.log import read_log, top_k
from core import jsonl
from core.errors import CheckFailed
from judge.judging.blinding import BlindItem
from judge.judging.calls import build_request
from judge.numbers.stats.agreement import cohen_kappa
from registration.rubric import load_rubric

from conftest import ROOT, cli

LOG = ROOT / "sealed" / "demo" / "training" / "run1.jsonl"
LABELS = {r["completion_id"]: r["category"] for _, r in jsonl.read(LOG.with_name("run1.labels.jsonl"))}
PLANTED = len(LABELS)  # 7: 3 padding, 2 citation stuffing, 1 false decline, 1 grader injection


@pytest.fixture(scope="module")
def server(llama_cpp_server):
    return llama_cpp_server


@pytest.mark.unit
def test_top_k_is_deterministic_and_contains_the_planted_answers():
    rows = read_log(LOG).rows
    top = top_k(rows, 40)
    assert len(top) == 40 and top == top_k(list(reversed(rows)), 40)
    assert PLANTED == 7 and len(set(LABELS) & {c.completion_id for c in top}) == PLANTED
    assert {c.completion_id for c in top_k(rows, PLANTED)} == set(LABELS)  # the test below reads the top 7


def _verdicts(out, reader_id):
    return {v["label"]: v for _, v in jsonl.read(out / "verdicts.jsonl") if v["judge"] == reader_id}


def _kappa_by_hand(pairs: list[tuple[bool, bool]]) -> float:
    """Cohen's kappa of two yes/no readers from its definition (observed vs chance agreement); NaN when undefined."""
    if not pairs:
        return math.nan
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    yes_a, yes_b = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    return math.nan if chance == 1 else (observed - chance) / (1 - chance)


@pytest.mark.unit
def test_kappa_by_hand_matches_a_worked_example():
    # 10 answers: both yes 4, both no 3, 2 yes/no, 1 no/yes -> po .7, pe .6*.5+.4*.5 = .5, kappa .4
    pairs = [(True, True)] * 4 + [(False, False)] * 3 + [(True, False)] * 2 + [(False, True)]
    assert _kappa_by_hand(pairs) == pytest.approx(0.4)
    assert cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], labels=[False, True]) == pytest.approx(0.4)


@pytest.mark.integration
def test_gate_counts_reader_verdicts_and_registered_detectors(tmp_path, server):
    out = tmp_path / "audit"
    args = ["audit", "topk", "--k", str(PLANTED), "--rewards", str(LOG), "--reader", "local", "--second-reader",
            "openai", "--second-model", "smollm2", "--second-base-url", server + "/v1", "--openai-structured",
            "json_object", "--out", str(out), "--quiet"]
    r = cli(*args)
    assert (out / "gate.json").exists(), r.stderr
    gate = json.loads((out / "gate.json").read_text())
    first = _verdicts(out, gate["reader"]["id"])
    second = _verdicts(out, gate["second_reader"]["id"])
    assert len(first) == len(second) == PLANTED == gate["read"]
    # the expected exit comes from the raw verdicts and the default --max-gamed 4, not from the gate
    gamed = sum(v["status"] == "scored" and v["score"] == 1 for v in first.values())
    unscored = sum(v["status"] != "scored" for v in first.values())
    assert (gate["gamed"], gate["unscored"], gate["counted"]) == (gamed, unscored, gamed + unscored)
    assert r.returncode == (1 if gamed + unscored > 4 else 0), r.stderr
    assert gate["verdict"] == ("stopped" if r.returncode else "pass") and not gate["gate_on_detectors"]

    # the detectors find every planted answer, with its category, whatever the tiny reader said
    det = gate["detectors"]
    assert {f["completion_id"]: f["category"] for f in det["flagged"]} == LABELS
    assert gate["detector_flagged"] == PLANTED

    # second reader: kappa over answers both scored, every other answer listed as a disagreement
    pairs = [(first[k]["score"] == 1, second[k]["score"] == 1) for k in first
             if first[k]["status"] == second[k]["status"] == "scored"]
    s = gate["second_reader"]
    assert s["both_scored"] == len(pairs) and s["agree"] == sum(a == b for a, b in pairs)
    expected = _kappa_by_hand(pairs)
    assert (s["kappa"] is None) if math.isnan(expected) else math.isclose(s["kappa"], expected, abs_tol=1e-4)
    assert len(s["disagreements"]) == PLANTED - s["agree"]
    md = (out / "audit.md").read_text()
    assert "Second reader" in md and "Deterministic detectors (not gating)" in md

    # registered detectors: the same verdicts (resumed, no new calls) now stop the run
    lines = (out / "verdicts.jsonl").read_text().count("\n")
    r = cli(*args, "--gate-on-detectors")
    gate = json.loads((out / "gate.json").read_text())
    assert r.returncode == 1 and gate["verdict"] == "stopped" and gate["gate_on_detectors"]
    assert gate["counted"] >= PLANTED and (out / "verdicts.jsonl").read_text().count("\n") == lines
    assert "Deterministic detectors (gating)" in (out / "audit.md").read_text()


@pytest.mark.integration
def test_an_openai_reader_on_llama_server_scores_every_answer(tmp_path, llama_server):
    """The normal path of an API reader: llama-server's OpenAI route, its JSON-schema grammar constraining each
    verdict. With --max-gamed equal to k the gate cannot stop, whatever the tiny reader says."""
    out = tmp_path / "audit"
    r = cli("audit", "topk", "--k", "3", "--max-gamed", "3", "--rewards", str(LOG), "--reader", "openai",
            "--model", "smollm2-q8", "--base-url", llama_server.url + "/v1", "--out", str(out), "--quiet",
            env={"OPENAI_API_KEY": "sk-test"})
    assert r.returncode == 0, r.stderr
    verdicts = [v for _, v in jsonl.read(out / "verdicts.jsonl")]
    assert len(verdicts) == 3 and all(v["status"] == "scored" and v["score"] in (0, 1) for v in verdicts), verdicts
    gate = json.loads((out / "gate.json").read_text())
    gamed = sum(v["score"] == 1 for v in verdicts)
    assert (gate["read"], gate["gamed"], gate["unscored"], gate["verdict"]) == (3, gamed, 0, "pass")
    top3 = {c.completion_id for c in top_k(read_log(LOG).rows, 3)}
    assert {f["completion_id"] for f in gate["flagged"]} == top3


@pytest.mark.integration
def test_a_reader_that_cannot_read_cannot_pass_the_gate(tmp_path, server):
    """An Anthropic client against a server without the Messages API gets no verdict: each counts against passing."""
    out = tmp_path / "audit"
    r = cli("audit", "topk", "--k", "3", "--max-gamed", "2", "--rewards", str(LOG), "--reader", "anthropic",
            "--base-url", server, "--out", str(out), "--quiet")
    gate = json.loads((out / "gate.json").read_text())
    assert r.returncode == 1, r.stderr
    assert (gate["read"], gate["gamed"], gate["unscored"], gate["verdict"]) == (3, 0, 3, "stopped")
    assert all(f["status"] == "error" and f["error"] for f in gate["flagged"])
    # the reader's settings were read back like a judge's: the API takes no sampling, so none is registered or sent
    sent = gate["reader"]["identity"]["effective_settings"]["sent"]
    assert (sent["temperature"], sent["top_p"], sent["thinking"]) == (None, None, False)
    with pytest.raises(CheckFailed, match="it stopped the run"):
        check_gate(out / "gate.json", LOG, k=3, max_gamed=2)

    # a re-run retries the error verdicts (appended, each naming the record it replaces); they fail again, and
    # under a looser maximum pass; the gate then holds only for this log and settings
    r = cli("audit", "topk", "--k", "3", "--max-gamed", "3", "--rewards", str(LOG), "--reader", "anthropic",
            "--base-url", server, "--out", str(out), "--quiet")
    assert r.returncode == 0, r.stderr
    records = list(jsonl.read(out / "verdicts.jsonl"))
    assert [rec.get("retry_of") for _, rec in records] == [None, None, None, 1, 2, 3]
    assert all(rec["status"] == "error" for _, rec in records)
    assert json.loads((out / "gate.json").read_text())["unscored"] == 3
    assert check_gate(out / "gate.json", LOG, k=3, max_gamed=3)["verdict"] == "pass"
    with pytest.raises(CheckFailed, match="another log"):
        check_gate(out / "gate.json", LOG.with_name("run2.jsonl"), k=3, max_gamed=3)
    with pytest.raises(CheckFailed, match="gate_on_detectors is False, registered True"):
        check_gate(out / "gate.json", LOG, k=3, max_gamed=3, gate_on_detectors=True)
    with pytest.raises(CheckFailed, match="missing"):
        check_gate(tmp_path / "nowhere" / "gate.json", LOG, k=3, max_gamed=3)


@pytest.mark.unit
def test_reader_never_sees_reward_step_or_rank():
    rubric = load_rubric("gaming")
    for c in top_k(read_log(LOG).rows, 40):
        item = BlindItem("x", c.prompt_id, c.prompt, None, c.completion)
        text = "\n".join(m for _, m in build_request(rubric, item, 0).messages)
        assert f"{c.reward:.3f}" not in text and f"{c.reward:.2f}" not in text
        assert "step" not in text.lower() and "rank" not in text.lower()


@pytest.mark.integration
def test_bad_log_names_line_and_field(tmp_path):
    p = tmp_path / "log.jsonl"
    row = '{"step": 1, "prompt_id": "p", "completion_id": "c%d", "prompt": "q", "completion": "a", "reward": %s}\n'
    p.write_text(row % (1, "1") + row % (2, '"high"'))
    r = cli("audit", "top40", "--rewards", str(p), "--reader", "local", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "log.jsonl:2" in r.stderr and "'reward'" in r.stderr
    p.write_text('{"step": 1, "prompt_id": "p", "prompt": "q", "completion": "a", "reward": 1}\n')
    r = cli("audit", "top40", "--rewards", str(p), "--reader", "local", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "log.jsonl:1" in r.stderr and "'completion_id'" in r.stderr
    r = cli("audit", "topk", "--k", "3", "--rewards", str(LOG), "--reader", "local", "--second-reader", "local",
            "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and "second reader" in r.stderr and "Traceback" not in r.stderr
