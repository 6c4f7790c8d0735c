"""Re-running an audit retries exactly the reader verdicts whose call failed (`error`), against a real HTTP server.

Finished verdicts (scored or unscored) are never asked again; a retry is appended with `retry_of` pointing at
the error record it replaces, the last record of a label is its verdict, and gate.json counts that final state.
"""
from __future__ import annotations

import json

import pytest

from core import jsonl

from conftest import cli, rewards_log
from support.scripted_server import ScriptedServer, fail, reply, verdict

pytestmark = pytest.mark.integration

PROMPT = "Question: How much is the deposit?\n\nRetrieved text:\nArticle 2.1. The deposit is 40 alder crowns.\n"
ANSWERS = {"scored": "alpha: the deposit is 40 alder crowns (Article 2.1).",
           "unscored": "bravo: the deposit is 40 alder crowns.",
           "flaky": "charlie: 40 alder crowns, see Article 2.1.",
           "down": "delta: it is 40 alder crowns."}
HONEST = {"rationale": "Answers the question.", "gamed": False, "category": "none"}
GAMED = {"rationale": "Restates the rule.", "gamed": True, "category": "restatement"}


def _which(prompt: str) -> str:
    (cid,) = [cid for cid, text in ANSWERS.items() if text in prompt]
    return cid


class Script:
    """Phase 1: `flaky` gets an unreadable reply then only 500s (an error verdict after one paid call), `down`
    only 500s; phase 2: every call answers, the retried ones gamed."""

    def __init__(self):
        self.phase = 1

    def __call__(self, seen):
        cid, first_attempt = _which(seen.prompt), seen.body.get("seed") == 0
        if cid == "scored":
            return verdict(HONEST)
        if cid == "unscored":
            return reply("I think it is fine.")
        if self.phase == 1 and (cid == "down" or not first_attempt):
            return fail(500, retry_after=0)
        return reply("not a verdict") if first_attempt and cid == "flaky" else verdict(GAMED)


def _log(tmp_path):
    return rewards_log(tmp_path / "log.jsonl", PROMPT, ANSWERS)


def _records(out):
    return [(line, rec) for line, rec in jsonl.read(out / "verdicts.jsonl")]


def test_error_verdicts_are_retried_on_rerun_and_finished_ones_are_not(tmp_path):
    log, out, script = _log(tmp_path), tmp_path / "audit", Script()
    with ScriptedServer(script) as server:
        common = ("--rewards", str(log), "--reader", "openai", "--model", "scripted", "--openai-structured",
                  "json_object", "--base-url", server.openai_url, "--out", str(out), "--quiet")
        args = ("audit", "topk", "--k", "4", "--max-gamed", "2", *common)
        env = {"OPENAI_API_KEY": "sk-test"}
        r = cli(*args, env=env)
        first = _records(out)
        by_status = sorted(rec["status"] for _, rec in first)
        assert by_status == ["error", "error", "scored", "unscored"], r.stderr
        gate = json.loads((out / "gate.json").read_text())
        assert r.returncode == 1 and (gate["read"], gate["gamed"], gate["unscored"], gate["counted"]) == (4, 0, 3, 3)
        errors = {rec["label"]: line for line, rec in first if rec["status"] == "error"}
        assert all("500" in rec["error"] for _, rec in first if rec["status"] == "error")
        assert sorted(f["status"] for f in gate["flagged"]) == ["error", "error", "unscored"]
        phase1 = server.count
        assert phase1 == len(server.seen) and all("retry_of" not in rec for _, rec in first)

        script.phase = 2
        r = cli(*args, env=env)
        assert r.returncode == 1, r.stderr  # 2 gamed + 1 unscored > 2
        calls = server.seen[phase1:]
        # exactly the two error verdicts were asked again; the flaky one's paid first attempt came from the cache
        assert sorted((_which(s.prompt), s.body.get("seed")) for s in calls) == [("down", 0), ("flaky", 1)]
        records = _records(out)
        assert records[:len(first)] == first  # append-only: nothing earlier was touched
        retried = [rec for _, rec in records[len(first):]]
        assert len(retried) == 2 and all(rec["status"] == "scored" for rec in retried)
        assert {rec["label"]: rec["retry_of"] for rec in retried} == errors
        flaky = next(rec for rec in retried if len(rec["attempts"]) == 2)
        assert flaky["cached_calls"] == 1 and len(flaky["calls"]) == 2

        # the last record of each label is its verdict, and gate.json counts that final state
        final = {rec["label"]: rec for _, rec in records}
        gate = json.loads((out / "gate.json").read_text())
        assert sorted(rec["status"] for rec in final.values()) == ["scored", "scored", "scored", "unscored"]
        assert (gate["read"], gate["gamed"], gate["unscored"], gate["counted"]) == (4, 2, 1, 3)
        assert sorted(f["status"] for f in gate["flagged"]) == ["scored", "scored", "unscored"]

        # nothing left to retry: a third run makes no call and writes nothing, and passes a looser maximum
        lines = len(records)
        r = cli("audit", "topk", "--k", "4", "--max-gamed", "3", *common, env=env)
        assert r.returncode == 0 and server.count == phase1 + 2 and len(_records(out)) == lines, r.stderr


def test_a_verdict_record_without_status_is_bad_input(tmp_path):
    log, out = _log(tmp_path), tmp_path / "audit"
    out.mkdir()
    (out / "verdicts.jsonl").write_text(json.dumps({"judge": "openai:scripted@x", "label": "A1"}) + "\n")
    with ScriptedServer(lambda seen: verdict(HONEST)) as server:
        r = cli("audit", "topk", "--k", "4", "--rewards", str(log), "--reader", "openai", "--model", "scripted",
                "--openai-structured", "json_object", "--base-url", server.openai_url, "--out", str(out), "--quiet",
                env={"OPENAI_API_KEY": "sk-test"})
        assert server.count == 0
    assert r.returncode == 2 and "verdicts.jsonl:1" in r.stderr and "'status'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
