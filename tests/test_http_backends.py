"""The OpenAI backend through the official SDK against a real OpenAI-compatible server on 127.0.0.1."""
from __future__ import annotations

import json

import pytest

from judge.judging.verdict import parse_verdict
from models.backends import Generation, Request
from models.backends.openai import OpenAIBackend, OpenAIConfig
from registration.rubric import load_rubric

from conftest import free_port


@pytest.fixture(scope="module")
def llama_cpp_openai(llama_cpp_server):
    return llama_cpp_server + "/v1"


@pytest.mark.integration
def test_openai_backend_answers(llama_cpp_openai):
    b = OpenAIBackend(OpenAIConfig(model="smollm2", base_urls=(llama_cpp_openai,), structured="json_object"))
    r = b.complete(Request((("user", "Name a colour."),), Generation(max_tokens=16)))
    assert r.text and r.completion_tokens > 0 and r.finish_reason in ("stop", "length")
    assert "api_key" not in json.dumps(b.identity()).lower()


@pytest.mark.integration
def test_openai_backend_structured_verdict(llama_cpp_openai):
    rubric = load_rubric("correctness")
    b = OpenAIBackend(OpenAIConfig(model="smollm2", base_urls=(llama_cpp_openai,), structured="json_object"))
    r = b.complete(Request((("system", rubric.system), ("user", "Question: 2+2? Reference: 4. Candidate: 4.")),
                           rubric.generation, schema=rubric.schema_text))
    parsed = parse_verdict(r.text, rubric.schema)
    assert parsed.ok, (parsed.error, r.text)  # the server's JSON-schema grammar constrains the verdict
    assert parsed.fields["score"] in (0, 1, 2)


@pytest.mark.unit
def test_unreachable_server_is_an_error_not_an_answer():
    b = OpenAIBackend(OpenAIConfig(model="x", base_urls=(f"http://127.0.0.1:{free_port()}/v1",), attempts=2,
                                   timeout_s=2))
    with pytest.raises(Exception) as e:
        b.complete(Request((("user", "hi"),), Generation(max_tokens=4)))
    assert type(e.value).__name__ == "APIConnectionError"
