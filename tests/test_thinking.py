"""Thinking mode as registered, sent and observed (docs/motivating-experiment.md: thinking switched on unasked).

Registration: Anthropic thinking needs a token budget; OpenAI models are switched through
`chat_template_kwargs` or `reasoning_effort`; what a backend cannot send is refused at parse time.
Sending: the request carries the switch explicitly, off included. Observing: a reply that shows
thinking while thinking is registered off stops the run. Judges go through the same checks.
All against the real scripted HTTP server, through the official SDKs.
"""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from arms.collect import collect
from arms.settings import verify_settings
from core.errors import BadInput, CheckFailed
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.backends.base import Generation, Request
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache
from models.spec import ModelSpec, Runtime
from registration.questions import Question
from registration.seal import seal
from registration.spec import ArmSpec, parse_arms, parse_models

from conftest import cli
from support.scripted_server import ScriptedServer, reply, verdict

F = Path("prereg.toml")
SCHEMA = json.dumps({"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]})


def _parse(model: dict, generation: dict):
    doc = {"models": {"m": {"source": "x", **model}},
           "arms": [{"name": "a", "model": "m", "quants": ["api"], "generation": generation}]}
    return parse_arms(doc, F, parse_models(doc, F), {})[0]


@pytest.mark.unit
@pytest.mark.parametrize("model, generation, field", [
    ({"backend": "anthropic"}, {"thinking": True, "max_tokens": 4096}, "thinking_budget"),
    ({"backend": "anthropic"}, {"thinking": True, "thinking_budget": 512, "max_tokens": 4096}, "thinking_budget"),
    ({"backend": "anthropic"}, {"thinking": True, "thinking_budget": 4096, "max_tokens": 4096}, "thinking_budget"),
    ({"backend": "anthropic"}, {"thinking_budget": 2048, "max_tokens": 4096}, "thinking_budget"),
    ({"backend": "openai"}, {"thinking": True, "thinking_budget": 2048, "max_tokens": 4096}, "thinking_budget"),
    ({"backend": "openai", "thinking_control": "reasoning_effort"}, {"thinking": True}, "effort"),
    ({"backend": "openai"}, {"effort": "high", "thinking": True}, "effort"),
    ({"backend": "openai", "thinking_control": "reasoning_effort"}, {"effort": "loud", "thinking": True}, "effort"),
    ({"backend": "anthropic", "thinking_control": "reasoning_effort"}, {}, "thinking_control"),
    ({"backend": "openai", "thinking_control": "sometimes"}, {}, "thinking_control"),
])
def test_thinking_a_backend_cannot_send_is_refused_at_parse(model, generation, field):
    with pytest.raises(BadInput) as e:
        _parse(model, generation)
    assert e.value.field == field


@pytest.mark.unit
def test_a_registered_budget_parses_and_keeps_old_call_keys():
    arm = _parse({"backend": "anthropic"}, {"thinking": True, "thinking_budget": 2048, "max_tokens": 4096,
                                            "temperature": "provider-default", "top_p": "provider-default",
                                            "seed": "provider-default"})
    assert arm.generation.thinking_budget == 2048
    # unset extensions are left out of the dict the call cache hashes: keys from before they existed still match
    assert "thinking_budget" not in Generation().to_dict() and "effort" not in Generation().to_dict()
    assert arm.generation.to_dict()["thinking_budget"] == 2048


def _anthropic(server: ScriptedServer) -> AnthropicBackend:
    return AnthropicBackend(AnthropicConfig(model="claude-x", base_url=server.anthropic_url))


CLAUDE = Generation(temperature=None, top_p=None, seed=None, max_tokens=4096)


@pytest.mark.integration
def test_anthropic_thinking_on_sends_the_budget_and_keeps_the_thought_out_of_the_answer():
    on = Generation(temperature=None, top_p=None, seed=None, max_tokens=4096, thinking=True, thinking_budget=2048)
    script = [reply("Paris.", thinking="The capital of France is Paris."),
              verdict({"score": 2}, thinking="Grading: it matches the reference.")]
    with ScriptedServer(script, models=("claude-x",), thinking_types=("disabled", "enabled")) as s:
        b = _anthropic(s)
        try:
            eff = verify_settings(b, "arm 'a'", on, "api", ModelSpec("m", "anthropic", "claude-x"), (), Runtime())
            assert eff["thinking_types"] == ["disabled", "enabled"] and eff["sent"]["thinking_budget"] == 2048
            r = b.complete(Request((("user", "Capital of France?"),), on))
            structured = b.complete(Request((("user", "Grade it."),), on, schema=SCHEMA))
        finally:
            b.close()
        first, second = s.seen[0].body, s.seen[1].body
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert r.text == "Paris." and r.thinking and r.raw["thinking_tokens"] == 6
    # the API refuses a forced tool call while thinking: the tool is offered, not forced
    assert second["tool_choice"] == {"type": "auto"} and json.loads(structured.text) == {"score": 2}


@pytest.mark.integration
def test_anthropic_thinking_off_is_sent_explicitly_and_a_thinking_reply_stops_the_run(tmp_path):
    arm = ArmSpec("a", "m", ("api",), CLAUDE)
    questions = [Question(f"q{i}", f"Question {i}?", None, (), None, "t.jsonl") for i in range(3)]
    script = [reply("One."), reply("Two.", thinking="Let me think about two."), reply("Three.")]
    with ScriptedServer(script, models=("claude-x",), thinking_types=("disabled", "enabled")) as s:
        spec = ModelSpec("m", "anthropic", "claude-x", base_url=s.anthropic_url, concurrency=1)
        with pytest.raises(CheckFailed, match=r"arm 'a' at api: thinking is registered off, but the backend's reply "
                                              r"shows thinking"):
            collect([arm], {"m": spec}, {}, questions, tmp_path, Runtime(), tmp_path / "a.jsonl",
                    CallCache(tmp_path / "c.sqlite"), progress=False)
        assert all(seen.body["thinking"] == {"type": "disabled"} for seen in s.seen)
        assert s.count == 2  # stopped at the reply that thought; the third question was never asked
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["status"] == "ok" and rows[0]["thinking"] is False


@pytest.mark.integration
def test_thinking_off_on_a_real_messages_route_answers_and_records_what_the_server_reports(llama_server, tmp_path):
    """The normal path: llama-server's Messages route takes the explicit "thinking off"; the tiny model does not
    think, every row is answered, and the capability the server does not report is recorded as such."""
    arm = ArmSpec("a", "m", ("api",), replace(CLAUDE, max_tokens=16))
    questions = [Question(f"q{i}", f"Name a colour number {i}.", None, (), None, "t.jsonl") for i in range(2)]
    spec = ModelSpec("m", "anthropic", "smollm2-q8", base_url=llama_server.url, concurrency=1)
    b = AnthropicBackend(AnthropicConfig(model="smollm2-q8", base_url=llama_server.url))
    try:
        eff = verify_settings(b, "arm 'a'", arm.generation, "api", spec, (), Runtime())
    finally:
        b.close()
    assert str(eff["thinking_types"]).startswith("not reported: ")  # llama-server has no GET /v1/models/{id}
    stats = collect([arm], {"m": spec}, {}, questions, tmp_path, Runtime(), tmp_path / "a.jsonl",
                    CallCache(tmp_path / "c.sqlite"), progress=False)
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert stats["errors"] == 0 and len(rows) == 2
    assert all(r["status"] == "ok" and r["text"].strip() and r["thinking"] is False for r in rows)


@pytest.mark.integration
def test_a_model_that_cannot_switch_thinking_off_is_refused_before_the_first_question():
    with ScriptedServer([reply("x")], models=("claude-x",), thinking_types=("adaptive",)) as s:
        b = _anthropic(s)
        try:
            with pytest.raises(CheckFailed, match=r"thinking: registered disabled, the API says model 'claude-x' "
                                                  r"supports only \['adaptive'\]"):
                verify_settings(b, "arm 'a'", CLAUDE, "api", ModelSpec("m", "anthropic", "claude-x"), (), Runtime())
        finally:
            b.close()
        assert s.count == 0


@pytest.mark.integration
def test_a_server_without_the_models_route_is_recorded_not_guessed():
    with ScriptedServer([reply("x")]) as s:  # no thinking_types: GET /v1/models/{id} is a 404
        b = _anthropic(s)
        try:
            eff = verify_settings(b, "arm 'a'", CLAUDE, "api", ModelSpec("m", "anthropic", "claude-x"), (), Runtime())
        finally:
            b.close()
    assert eff["thinking_types"] == "not reported: NotFoundError"


@pytest.mark.integration
def test_openai_reasoning_effort_switches_thinking_and_a_reasoning_reply_is_caught(tmp_path):
    script = [reply("a", thinking="Considering the options."), reply("b"), reply("c", thinking="Hmm.")]
    with ScriptedServer(script, models=("o-mini",)) as s:
        b = OpenAIBackend(OpenAIConfig(model="o-mini", base_urls=(s.openai_url,), thinking_control="reasoning_effort"))
        try:
            on = b.complete(Request((("user", "q"),), Generation(thinking=True, effort="high")))
            off = b.complete(Request((("user", "q"),), Generation()))
            off_but_thought = b.complete(Request((("user", "q"),), Generation()))
        finally:
            b.close()
        assert s.seen[0].body["reasoning_effort"] == "high" and s.seen[1].body["reasoning_effort"] == "none"
    assert on.thinking and on.raw["reasoning_tokens"] == 3 and not off.thinking and off_but_thought.thinking
    from arms.settings import check_reply

    check_reply("arm 'a'", Generation(thinking=True, effort="high"), on)
    check_reply("arm 'a'", Generation(), off)
    with pytest.raises(CheckFailed, match="thinking is registered off"):
        check_reply("arm 'a'", Generation(), off_but_thought)


@pytest.mark.integration
def test_a_judge_whose_settings_the_api_cannot_honour_is_refused_before_any_answer(demo_copy, tmp_path):
    """The claude judge without its registered "provider-default" override: the rubric's temperature 0
    cannot be sent to the Messages API, so the run stops (exit 1) before collecting, naming the judge."""
    exp = tmp_path / "demo"
    shutil.copytree(demo_copy, exp)
    p = exp / "prereg.toml"
    with ScriptedServer(lambda seen: verdict({"rationale": "Fine.", "score": 2, "harmful": False}),
                        models=("claude-sonnet-4-5",), thinking_types=("disabled", "enabled")) as s:
        shipped = p.read_text().replace('source = "claude-sonnet-4-5"\n',
                                        f'source = "claude-sonnet-4-5"\nbase_url = "{s.anthropic_url}"\n')
        p.write_text(re.sub(r'(?m)^generation = \{ temperature = "provider-default".*\n', "", shipped))
        seal(exp)
        run = ("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "1", "--quiet")
        r = cli(*run, "--out", str(tmp_path / "refused"), env={"ANTHROPIC_API_KEY": "sk-ant-test"})
        assert r.returncode == 1, r.stderr
        assert "judge 'anthropic' (rubric 'correctness')" in r.stderr
        assert "temperature: registered 0.0, the backend sends nothing" in r.stderr
        assert "top_p: registered 1.0, the backend sends nothing" in r.stderr
        assert s.count == 0 and not (tmp_path / "refused" / "answers.jsonl").exists()

        p.write_text(shipped)  # as registered: provider-default sampling for the Claude judge
        seal(exp)
        r = cli(*run, "--out", str(tmp_path / "ok"), env={"ANTHROPIC_API_KEY": "sk-ant-test"})
        assert r.returncode == 0, r.stderr
        bodies = [seen.body for seen in s.seen]
    assert len(bodies) == 2 and all("temperature" not in b and b["thinking"] == {"type": "disabled"} for b in bodies)
    info = json.loads((tmp_path / "ok" / "run.json").read_text())
    eff = info["judge"]["effective_settings"]["anthropic/correctness"]
    assert eff["sent"]["temperature"] is None and eff["thinking_types"] == ["disabled", "enabled"]
