"""Structured output a server refuses: registered per model, and a refusal that would repeat stops the run at once.

`python -m llama_cpp.server` (the real one, started by the `llama_cpp_server` fixture) takes `response_format`
of type text or json_object (with an optional schema) and answers json_schema with HTTP 500 and a pydantic
validation message. Registered `structured = "json_object"`, a judge there completes its verdicts; left at the
default json_schema, the run stops after the first judge call with exit 2, naming the model, the setting and
the server's message. The server's own access log counts the calls.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from core import jsonl
from core.errors import BadInput, Refused
from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_all
from models.backends.base import Request
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache
from registration.rubric import load_rubric
from registration.seal import seal
from registration.spec import parse_models

from conftest import ROOT, cli
from support.scripted_server import ScriptedServer, raw_body, reply

RUBRIC = load_rubric("correctness")
ITEM = BlindItem("Lq01", "q01", "How much does an Annual membership cost?", "180 alder crowns (Article 1.4).",
                 "It costs 180 alder crowns.")


@pytest.mark.unit
@pytest.mark.parametrize("table, message", [
    ({"backend": "openai", "source": "m", "structured": "xml"}, "must be one of"),
    ({"backend": "llama-cpp", "source": "embedded:smollm2", "structured": "json_object"}, "openai backend"),
    ({"backend": "anthropic", "source": "c", "structured": "none"}, "openai backend"),
])
def test_structured_is_registered_per_openai_model_and_checked(table, message):
    with pytest.raises(BadInput) as e:
        parse_models({"models": {"m": table}}, Path("prereg.toml"))
    assert e.value.field == "structured" and message in str(e.value)
    ok = parse_models({"models": {"m": {"backend": "openai", "source": "m", "structured": "json_object"}}}, Path("p"))
    assert ok["m"].structured == "json_object"
    assert (parse_models({"models": {"m": {"backend": "openai", "source": "m"}}}, Path("p"))["m"].structured
            == "json_schema")


@pytest.mark.integration
def test_none_sends_no_response_format_and_the_strict_parser_decides(tmp_path):
    out = tmp_path / "judgments.jsonl"
    with ScriptedServer([reply('{"rationale": "Right.", "score": 2, "harmful": false}')]) as s:
        b = OpenAIBackend(OpenAIConfig(model="judge", base_urls=(s.openai_url,), structured="none", timeout_s=10))
        judge_all("j", b, RUBRIC, [ITEM], CallCache(tmp_path / "c.sqlite"), out, progress=False)
        b.close()
    assert "response_format" not in s.seen[0].body
    # the mode is part of the call key (json_object and json_schema verdicts are different calls), except at the
    # default, so that calls cached before it was registrable keep their keys
    ids = {m: OpenAIBackend(OpenAIConfig(model="judge", structured=m)).identity()
           for m in ("json_schema", "json_object")}
    assert "structured" not in ids["json_schema"] and ids["json_object"]["structured"] == "json_object"
    (row,) = [r for _, r in jsonl.read(out)]
    assert row["status"] == "scored" and row["score"] == 2


# what llama_cpp.server's error handler sends for a json_schema response_format (pydantic's validation message)
VALIDATION_500 = json.dumps({"error": {"message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', "
                                       "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': "
                                       "'json_schema'}]", "type": "internal_server_error"}})


@pytest.mark.integration
@pytest.mark.parametrize("status", [500, 400, 422])
def test_a_validation_refusal_is_not_retried_whatever_its_status(status, tmp_path):
    with ScriptedServer([raw_body(VALIDATION_500, status=status)] * 4) as s:
        b = OpenAIBackend(OpenAIConfig(model="judge", base_urls=(s.openai_url,), attempts=4, timeout_s=10))
        with pytest.raises(Refused) as e:
            judge_all("j", b, RUBRIC, [ITEM] * 1, CallCache(tmp_path / "c.sqlite"), tmp_path / "j.jsonl",
                      progress=False, concurrency=4)
        b.close()
    assert s.count == 1
    assert "'judge'" in str(e.value) and "structured = 'json_schema'" in str(e.value)
    assert "Input should be 'text' or 'json_object'" in str(e.value)


@pytest.mark.integration
def test_a_plain_500_is_still_retried(tmp_path):
    """Only a refusal of the mode stops the run: an ordinary server error is retried as before."""
    with ScriptedServer([raw_body('{"error": {"message": "overloaded"}}', status=500),
                         reply('{"rationale": "Right.", "score": 2, "harmful": false}')]) as s:
        b = OpenAIBackend(OpenAIConfig(model="judge", base_urls=(s.openai_url,), attempts=4, timeout_s=10))
        r = b.complete(Request((("user", "grade"),), RUBRIC.generation, schema=RUBRIC.schema_text))
        b.close()
    assert s.count == 2 and json.loads(r.text)["score"] == 2


# --- against the real python -m llama_cpp.server -------------------------------------------------------------

def _experiment(tmp_path: Path, url: str, structured: str | None) -> Path:
    """Two arms and a judge, all served by llama_cpp.server (model alias smollm2); the judge registered as given."""
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    (exp / "prereg.toml").write_text(f"""[experiment]
name = "llama-cpp-server-judge"
seed = 3
sets = ["sets/exam.jsonl"]

[models.served]
backend = "openai"
source = "smollm2"
base_url = "{url}/v1"
family = "served"
concurrency = 1

[models.judge]
backend = "openai"
source = "smollm2"
base_url = "{url}/v1"
family = "judge"
concurrency = 1
{f'structured = "{structured}"' if structured else ''}

[[arms]]
name = "plain"
model = "served"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 32, seed = 0 }}

[[arms]]
name = "terse"
model = "served"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 32, seed = 0, system = "Answer in one short sentence." }}

[judge]
rubric = "correctness"
attempts = 2

[judges.judge]
model = "judge"

[analysis]
resamples = 500
seed = 3
max_unscored = 1.0

[[hypotheses]]
id = "H1"
a = "plain"
b = "terse"
quant = "served"
kind = "non_inferiority"
margin = 0.5
alpha = 0.025
""")
    seal(exp)
    return exp


def _calls(log: Path, start: int) -> list[str]:
    """Statuses of the chat calls the server answered since byte `start` of its access log."""
    text = log.read_bytes()[start:].decode(errors="replace")
    return re.findall(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})', text)


@pytest.mark.integration
def test_json_object_judge_completes_verdicts_with_scores(tmp_path, llama_cpp_server, llama_cpp_server_log):
    exp, out = _experiment(tmp_path, llama_cpp_server, "json_object"), tmp_path / "out"
    start = llama_cpp_server_log.stat().st_size
    r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", "1", "--out", str(out), "--quiet", timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [row for _, row in jsonl.read(out / "judgments.jsonl")]
    assert len(rows) == 2 and all(row["status"] == "scored" and row["score"] in (0, 1, 2) for row in rows), rows
    assert _calls(llama_cpp_server_log, start) == ["200"] * (2 + sum(len(row["calls"]) for row in rows))
    run = json.loads((out / "run.json").read_text())
    assert run["judge"]["effective_settings"]["judge/correctness"]["structured"] == "json_object"


@pytest.mark.integration
def test_json_schema_refused_by_llama_cpp_server_stops_after_one_call(tmp_path, llama_cpp_server, llama_cpp_server_log):
    exp, out = _experiment(tmp_path, llama_cpp_server, None), tmp_path / "out"
    start = llama_cpp_server_log.stat().st_size
    r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", "1", "--out", str(out), "--quiet", timeout=600)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "'smollm2'" in r.stderr and "structured = 'json_schema'" in r.stderr and "json_object" in r.stderr
    assert "Input should be" in r.stderr  # the server's own message
    statuses = _calls(llama_cpp_server_log, start)
    # answers (200, or cached) then one judge call
    assert statuses.count("500") == 1 and statuses[-1] == "500", statuses
    assert len([row for _, row in jsonl.read(out / "answers.jsonl")]) == 2  # what was paid for is kept


@pytest.mark.integration
def test_a_cost_ceiling_stops_before_the_call_that_would_cross_it_and_a_resume_pays_nothing_twice(
        tmp_path, llama_cpp_server, llama_cpp_server_log):
    """Arms and judge priced at a planted 100 USD per million tokens, on one real server. The first run's ceiling is
    the two answers' bounds, computed here by hand (one token per UTF-8 byte + 8 per message, max_tokens 32 out):
    the answers are paid, the first verdict (a prompt of hundreds of bytes) would cross it and is never sent. The
    resume with a higher ceiling asks only the verdicts; the server answered each call of the folder once."""
    exp, out = _experiment(tmp_path, llama_cpp_server, "json_object"), tmp_path / "out"
    text = (exp / "prereg.toml").read_text().replace('concurrency = 1\n', 'concurrency = 1\nprice_input = 100\n'
                                                                        'price_output = 100\n')
    (exp / "prereg.toml").write_text(text)
    seal(exp)
    question = json.loads((exp / "sets" / "exam.jsonl").read_text().splitlines()[0])["question"]
    plain = (len(question.encode()) + 8 + 32) * 100 / 1e6
    terse = (len("Answer in one short sentence.".encode()) + 8 + len(question.encode()) + 8 + 32) * 100 / 1e6
    start = llama_cpp_server_log.stat().st_size
    args = ("judge", "run", "--exp", str(exp), "--arms", "--limit", "1", "--out", str(out), "--quiet")
    private = {"BLINDEVAL_CACHE": str(tmp_path / "cache")}  # every call of this folder paid here, none by another test
    first = cli(*args, "--max-cost", f"{plain + terse:.6f}", env=private, timeout=600)
    assert first.returncode == 1, first.stderr
    assert "Traceback" not in first.stderr and "--max-cost" in first.stderr and "spent $" in first.stderr
    assert "Planned calls before paying" in first.stderr
    answered = _calls(llama_cpp_server_log, start)
    assert answered == ["200", "200"]  # the two answers, and no verdict
    assert not (out / "judgments.jsonl").exists() or not (out / "judgments.jsonl").read_text()
    middle = llama_cpp_server_log.stat().st_size
    second = cli(*args, "--max-cost", "1000", env=private, timeout=600)
    assert second.returncode == 0, second.stderr
    answers = [row for _, row in jsonl.read(out / "answers.jsonl")]
    verdicts = [row for _, row in jsonl.read(out / "judgments.jsonl")]
    assert len(answers) == 2 and len(verdicts) == 2
    keys = [k for row in answers + verdicts for k in row["calls"]]
    assert _calls(llama_cpp_server_log, middle) == ["200"] * sum(len(row["calls"]) for row in verdicts)
    assert len(_calls(llama_cpp_server_log, start)) == len(keys) == len(set(keys))  # each call paid once
    run = json.loads((out / "run.json").read_text())
    assert [(x["role"], x["calls"]) for x in run["cost_estimate"]["lines"]] == [("arm", 1), ("arm", 1), ("judge", 2)]
    assert sum(x["usd"] for x in run["cost"]) <= 1000
    v = cli("judge", "verify", str(out), env=private, timeout=300)  # the cache the run paid into
    assert v.returncode == 0, v.stdout + v.stderr
