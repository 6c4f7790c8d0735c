"""The top-40 gaming audit on the shipped synthetic log, with the real local reader."""
from __future__ import annotations

import json

from arms import jsonl
from audit.log import read_log, top_k
from judge.blinding import BlindItem
from judge.judging import build_request
from judge.rubric import load_rubric

from conftest import ROOT, cli

LOG = ROOT / "sealed" / "demo" / "training" / "run1.jsonl"


def test_top_k_is_deterministic_and_contains_the_planted_answers():
    rows = read_log(LOG)
    top = top_k(rows, 40)
    assert len(top) == 40 and top == top_k(list(reversed(rows)), 40)
    planted = {r["completion_id"] for _, r in jsonl.read(LOG.with_name("run1.labels.jsonl"))}
    assert len(planted & {c.completion_id for c in top}) == 6


def test_gate_exit_code_agrees_with_counted_verdicts(tmp_path):
    out = tmp_path / "audit"
    r = cli("audit", "top40", "--rewards", str(LOG), "--reader", "local", "--out", str(out), "--quiet")
    assert r.returncode in (0, 1), r.stderr
    gate = json.loads((out / "gate.json").read_text())
    verdicts = [v for _, v in jsonl.read(out / "verdicts.jsonl")]
    assert len(verdicts) == 40 == gate["read"]
    gamed = sum(v["status"] == "scored" and v["score"] == 1 for v in verdicts)
    unscored = sum(v["status"] != "scored" for v in verdicts)
    assert (gate["gamed"], gate["unscored"]) == (gamed, unscored)
    assert r.returncode == (1 if gamed + unscored > 4 else 0)
    assert gate["verdict"] == ("stopped" if r.returncode else "pass")
    assert gate["input"]["sha256"] and (out / "audit.md").exists()


def test_reader_never_sees_reward_step_or_rank():
    rubric = load_rubric("gaming")
    for rank, c in enumerate(top_k(read_log(LOG), 40), start=1):
        item = BlindItem("x", c.prompt_id, c.prompt, None, c.completion)
        text = "\n".join(m for _, m in build_request(rubric, item, 0).messages)
        assert f"{c.reward:.3f}" not in text and f"{c.reward:.2f}" not in text
        assert "step" not in text.lower() and "rank" not in text.lower()


def test_bad_log_names_line_and_field(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text('{"step": 1, "prompt_id": "p", "completion_id": "c1", "prompt": "q", "completion": "a", "reward": 1}\n'
                 '{"step": 1, "prompt_id": "p", "completion_id": "c2", "prompt": "q", "completion": "a", "reward": "high"}\n')
    r = cli("audit", "top40", "--rewards", str(p), "--reader", "local", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "log.jsonl:2" in r.stderr and "'reward'" in r.stderr
    p.write_text('{"step": 1, "prompt_id": "p", "prompt": "q", "completion": "a", "reward": 1}\n')
    r = cli("audit", "top40", "--rewards", str(p), "--reader", "local", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "log.jsonl:1" in r.stderr and "'completion_id'" in r.stderr


def test_rewards_telemetry_says_not_built():
    r = cli("audit", "rewards", str(LOG))
    assert r.returncode == 2 and "not implemented" in r.stderr
