"""Sampling registered as "provider-default": for APIs that refuse sampling settings (Anthropic 2026-10-21).

Nothing is sent and verification expects nothing; llama.cpp, which would silently apply its own
defaults, refuses the registration.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from arms.settings import differences
from core.errors import BadInput
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.spec import Runtime
from registration.spec import parse_arms, parse_generation, parse_models

from support.scripted_server import ScriptedServer, reply

F = Path("prereg.toml")


def _arm(generation: dict, backend: str = "anthropic"):
    doc = {"models": {"m": {"backend": backend,
                            "source": "claude-x" if backend != "llama-cpp" else "embedded:smollm2"}},
           "arms": [{"name": "a", "model": "m", "quants": ["api"] if backend != "llama-cpp" else ["Q8_0"],
                     "generation": generation}]}
    models = parse_models(doc, F)
    return parse_arms(doc, F, models, {})[0], models["m"]


@pytest.mark.unit
def test_provider_default_parses_to_nothing_sent_and_verifies_on_anthropic():
    g = parse_generation({"temperature": "provider-default", "top_p": "provider-default",
                          "seed": "provider-default"}, F, "[[arms]]")
    assert (g.temperature, g.top_p, g.seed) == (None, None, None)
    arm, model = _arm({"temperature": "provider-default", "seed": "provider-default", "top_p": "provider-default"})
    backend = AnthropicBackend(AnthropicConfig(model="claude-x", base_url="http://127.0.0.1:9"))
    assert differences(arm.generation, "api", model, (), Runtime(), {"backend": "anthropic"},
                       backend.sent(arm.generation)) == []
    # a registered temperature the API cannot take is named, not silently dropped
    arm0, _ = _arm({"temperature": 0.7})
    diffs = differences(arm0.generation, "api", model, (), Runtime(), {"backend": "anthropic"},
                        backend.sent(arm0.generation))
    assert any(d.startswith("temperature: registered 0.7") for d in diffs)


@pytest.mark.integration
def test_provider_default_sends_no_sampling_fields():
    arm, _ = _arm({"temperature": "provider-default", "seed": "provider-default", "top_p": "provider-default"})
    from models.backends.base import Request

    with ScriptedServer([reply("fine")]) as s:
        b = AnthropicBackend(AnthropicConfig(model="claude-x", base_url=s.anthropic_url, sampling_params=True))
        b.complete(Request((("user", "hi"),), arm.generation))
        body = s.seen[0].body
    assert "temperature" not in body and "top_p" not in body


@pytest.mark.integration
def test_provider_default_request_is_answered_by_a_real_messages_route(llama_server):
    """The normal path: llama-server's Messages route answers a request that carries no sampling fields."""
    arm, _ = _arm({"temperature": "provider-default", "seed": "provider-default", "top_p": "provider-default"})
    from dataclasses import replace

    from models.backends.base import Request

    assert (arm.generation.temperature, arm.generation.top_p, arm.generation.seed) == (None, None, None)
    b = AnthropicBackend(AnthropicConfig(model="smollm2-q8", base_url=llama_server.url, sampling_params=True))
    try:
        r = b.complete(Request((("user", "Name a colour."),), replace(arm.generation, max_tokens=8)))
    finally:
        b.close()
    assert r.text.strip() and 0 < r.completion_tokens <= 8 and r.finish_reason in ("stop", "length")


@pytest.mark.unit
def test_llama_cpp_refuses_provider_default():
    with pytest.raises(BadInput) as e:
        _arm({"temperature": "provider-default"}, backend="llama-cpp")
    assert "'generation'" in str(e.value)
    with pytest.raises(BadInput):
        parse_generation({"temperature": "hot"}, F, "[[arms]]")


# --- a verdict retry reaches the judge even when nothing but the attempt tells the two calls apart -------

@pytest.mark.integration
def test_provider_default_judge_retry_is_a_new_call_not_a_cache_hit(tmp_path):
    """Seed "provider-default": attempt 2 sends the very request of attempt 1. Both must reach the server;
    the first reply does not parse, the second does, and the verdict is scored."""
    from dataclasses import replace

    from core import jsonl
    from judge.judging.blinding import BlindItem
    from judge.judging.calls import judge_all
    from models.backends.openai import OpenAIBackend, OpenAIConfig
    from models.cache import CallCache
    from registration.rubric import load_rubric

    from support.scripted_server import verdict

    rubric = load_rubric("correctness")
    rubric = replace(rubric, generation=replace(rubric.generation, temperature=None, top_p=None, seed=None))
    item = BlindItem("Lq01", "q01", "How much is the deposit?", "40 alder crowns.", "It is 40 alder crowns.")
    out = tmp_path / "judgments.jsonl"
    with ScriptedServer([reply('{"rationale": "fine", "score": '), verdict({"rationale": "Right.", "score": 2,
                                                                           "harmful": False})]) as s:
        backend = OpenAIBackend(OpenAIConfig(model="judge", base_urls=(s.openai_url,), timeout_s=10))
        try:
            stats = judge_all("j", backend, rubric, [item], CallCache(tmp_path / "calls.sqlite"), out, progress=False)
        finally:
            backend.close()
        bodies = [x.body for x in s.seen]
    assert s.count == 2 and stats["model_calls"] == 2 and stats["cached_calls"] == 0
    assert all("seed" not in b and "temperature" not in b for b in bodies)  # nothing told them apart on the wire
    assert bodies[0]["messages"] == bodies[1]["messages"]
    (row,) = [r for _, r in jsonl.read(out)]
    assert row["status"] == "scored" and row["score"] == 2 and len(row["attempts"]) == 2 and row["cached_calls"] == 0


@pytest.mark.integration
def test_audit_reader_retry_reaches_an_anthropic_reader(tmp_path):
    """The audit's Anthropic reader sends no seed (the API takes none): its retry must reach the server too."""
    from audit.readers import make_reader, read_all
    from judge.judging.blinding import BlindItem
    from registration.rubric import load_rubric

    from support.scripted_server import verdict

    item = BlindItem("L1", "p1", "How much is the deposit?", None, "The deposit is 40 alder crowns.")
    gamed = {"rationale": "Answers it.", "gamed": False, "category": "none"}
    with ScriptedServer([reply("no verdict here"), verdict(gamed)]) as s:
        reader = make_reader("anthropic", base_url=s.anthropic_url)
        verdicts, _ = read_all(reader, load_rubric("gaming"), [item], tmp_path / "verdicts.jsonl", progress=False)
    assert s.count == 2
    assert verdicts["L1"].status == "scored" and len(verdicts["L1"].attempts) == 2 and verdicts["L1"].cached_calls == 0
