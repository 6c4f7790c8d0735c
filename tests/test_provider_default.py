"""Sampling registered as "provider-default": for APIs that refuse sampling settings (Anthropic 2026-10-21).

Nothing is sent and verification expects nothing; llama.cpp, which would silently apply its own
defaults, refuses the registration.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from arms.backends.anthropic import AnthropicBackend, AnthropicConfig
from arms.errors import BadInput
from arms.scripted_server import ScriptedServer, reply
from arms.settings import differences
from arms.spec import Runtime, parse_arms, parse_generation, parse_models

F = Path("prereg.toml")


def _arm(generation: dict, backend: str = "anthropic"):
    doc = {"models": {"m": {"backend": backend, "source": "claude-x" if backend != "llama-cpp" else "embedded:smollm2"}},
           "arms": [{"name": "a", "model": "m", "quants": ["api"] if backend != "llama-cpp" else ["Q8_0"],
                     "generation": generation}]}
    models = parse_models(doc, F)
    return parse_arms(doc, F, models, {})[0], models["m"]


def test_provider_default_parses_to_nothing_sent_and_verifies_on_anthropic():
    g = parse_generation({"temperature": "provider-default", "top_p": "provider-default",
                          "seed": "provider-default"}, F, "[[arms]]")
    assert (g.temperature, g.top_p, g.seed) == (None, None, None)
    arm, model = _arm({"temperature": "provider-default", "seed": "provider-default", "top_p": "provider-default"})
    backend = AnthropicBackend(AnthropicConfig(model="claude-x", base_url="http://127.0.0.1:9"))
    assert differences(arm.generation, "api", model, (), Runtime(), {"backend": "anthropic"}, backend.sent(arm.generation)) == []
    # a registered temperature the API cannot take is named, not silently dropped
    arm0, _ = _arm({"temperature": 0.7})
    diffs = differences(arm0.generation, "api", model, (), Runtime(), {"backend": "anthropic"}, backend.sent(arm0.generation))
    assert any(d.startswith("temperature: registered 0.7") for d in diffs)


def test_provider_default_sends_no_sampling_fields():
    arm, _ = _arm({"temperature": "provider-default", "seed": "provider-default", "top_p": "provider-default"})
    from arms.backends.base import Request

    with ScriptedServer([reply("fine")]) as s:
        b = AnthropicBackend(AnthropicConfig(model="claude-x", base_url=s.anthropic_url, sampling_params=True))
        b.complete(Request((("user", "hi"),), arm.generation))
        body = s.seen[0].body
    assert "temperature" not in body and "top_p" not in body


def test_llama_cpp_refuses_provider_default():
    with pytest.raises(BadInput) as e:
        _arm({"temperature": "provider-default"}, backend="llama-cpp")
    assert "'generation'" in str(e.value)
    with pytest.raises(BadInput):
        parse_generation({"temperature": "hot"}, F, "[[arms]]")
