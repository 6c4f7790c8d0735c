"""The OpenAI backend through the official SDK against a real OpenAI-compatible server on 127.0.0.1."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from arms.backends import Generation, Request
from arms.backends.openai import OpenAIBackend, OpenAIConfig
from arms.models import embedded_model
from judge.rubric import load_rubric
from judge.verdict import parse_verdict


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "wb")  # a pipe would fill up and block the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model("smollm2")), "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048",
         "--model_alias", "smollm2"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}; see {log.name}")
        try:
            urllib.request.urlopen(f"{url}/v1/models", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError("llama_cpp.server did not come up in 120 s")
    yield url + "/v1"
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def test_openai_backend_answers(llama_server):
    b = OpenAIBackend(OpenAIConfig(model="smollm2", base_urls=(llama_server,), structured="json_object"))
    r = b.complete(Request((("user", "Name a colour."),), Generation(max_tokens=16)))
    assert r.text and r.completion_tokens > 0 and r.finish_reason in ("stop", "length")
    assert "api_key" not in json.dumps(b.identity()).lower()


def test_openai_backend_structured_verdict(llama_server):
    rubric = load_rubric("correctness")
    b = OpenAIBackend(OpenAIConfig(model="smollm2", base_urls=(llama_server,), structured="json_object"))
    r = b.complete(Request((("system", rubric.system), ("user", "Question: 2+2? Reference: 4. Candidate: 4.")),
                           rubric.generation, schema=rubric.schema_text))
    parsed = parse_verdict(r.text, rubric.schema)
    assert parsed.ok, (parsed.error, r.text)  # the server's JSON-schema grammar constrains the verdict
    assert parsed.fields["score"] in (0, 1, 2)


def test_unreachable_server_is_an_error_not_an_answer():
    b = OpenAIBackend(OpenAIConfig(model="x", base_urls=(f"http://127.0.0.1:{_free_port()}/v1",), attempts=2,
                                   timeout_s=2))
    with pytest.raises(Exception) as e:
        b.complete(Request((("user", "hi"),), Generation(max_tokens=4)))
    assert type(e.value).__name__ == "APIConnectionError"
