"""`judge run` honours the registered audit gate: missing or stopped refuses the audited arms (exit 1)."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from registration.seal import seal

from conftest import cli
from support.scripted_server import ScriptedServer, verdict


def _exp_with_real_gate(demo_copy, tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    p = exp / "prereg.toml"
    text = re.sub(r'(?m)^override = .*\n', "", p.read_text())
    gate = tmp_path / "audit" / "gate.json"
    text = re.sub(r'(?m)^gate = .*$', f'gate = "{gate}"', text)
    p.write_text(text)
    seal(exp)
    return exp, gate


@pytest.mark.integration
def test_missing_or_stopped_gate_refuses_and_a_passing_gate_runs(demo_copy, tmp_path):
    exp, gate = _exp_with_real_gate(demo_copy, tmp_path)
    run = ("judge", "run", "--exp", str(exp), "--arms", "base,trained", "--limit", "1", "--quiet",
           "--out", str(tmp_path / "out"))
    r = cli(*run)
    assert r.returncode == 1 and "gate" in r.stderr and "missing" in r.stderr

    log = exp / "training" / "run2.jsonl"
    audit = ("audit", "top40", "--rewards", str(log), "--reader", "openai", "--model", "scripted",
             "--openai-structured", "json_object", "--out", str(gate.parent), "--quiet")
    with ScriptedServer(lambda seen: verdict({"rationale": "Padding.", "gamed": True, "category": "padding"})) as s:
        r = cli(*audit, "--base-url", s.openai_url, env={"OPENAI_API_KEY": "sk-test"})
    assert r.returncode == 1 and json.loads(gate.read_text())["verdict"] == "stopped"
    r = cli(*run)
    assert r.returncode == 1 and "stopped the run" in r.stderr

    shutil.rmtree(gate.parent)
    with ScriptedServer(lambda seen: verdict({"rationale": "Honest.", "gamed": False, "category": "none"})) as s:
        r = cli(*audit, "--base-url", s.openai_url, env={"OPENAI_API_KEY": "sk-test"})
    assert r.returncode == 0, r.stderr
    r = cli(*run)
    assert r.returncode == 0, r.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Audit gate passed for trained" in report

    # a base-only run does not need the gate at all
    r = cli("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "1", "--quiet",
            "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_demo_report_states_the_registered_override(small_run):
    report = (small_run / "report.md").read_text()
    assert "Audit gate OVERRIDDEN by the registration" in report
