"""The backend registry: a new backend is one module plus one registry line, and sampling is read back, not echoed.

The `echo` backend below is the whole of a new backend: its class, its BackendInfo, and one registry entry
(made for the test's duration). Collection, settings verification and spec parsing take it without any
other change, and no product module outside models/backends compares a backend's name.
"""
from __future__ import annotations

import json
import re
import threading
import tomllib
import urllib.error
import urllib.request
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from arms.collect import collect
from arms.settings import verify_settings
from core.errors import BadInput, CheckFailed
from core.records import Numbers, RunInfo
from judge.outputs.report import owe_the_reader
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.backends.base import NOT_USED, NOT_VERIFIABLE, BackendInfo, Generation, Reply, Request, nothing_read_back
from models.backends.llama_cpp import LlamaConfig, LlamaCppBackend
from models.backends.llama_read_back import sampler_differences
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.backends.registry import REGISTRY
from models.cache import CallCache, summary
from models.files import embedded_model
from models.spec import ModelSpec, Runtime
from registration.questions import Question
from registration.spec import parse_arms, parse_models

from conftest import ROOT
from support.planted import contract


class EchoBackend:
    """Answers every question with the question itself."""

    name = "echo"

    def __init__(self, model: str):
        self.model = model
        self.threads: set[int] = set()

    def identity(self):
        return {"backend": self.name, "model": self.model}

    def effective(self):
        return {"backend": self.name, "model": self.model}

    def sent(self, generation: Generation):
        return generation.to_dict()

    def read_back(self, generation: Generation):
        return nothing_read_back()

    def complete(self, request: Request) -> Reply:
        self.threads.add(threading.get_ident())
        text = request.messages[-1][1]
        return Reply(text=text, finish_reason="stop", prompt_tokens=len(text.split()),
                     completion_tokens=len(text.split()), latency_s=0.0)

    def close(self) -> None:
        pass


OPENED: list[EchoBackend] = []


def open_echo(spec, quant, adapters, exp_dir, runtime) -> EchoBackend:
    OPENED.append(EchoBackend(spec.source))
    return OPENED[-1]


ECHO = BackendInfo(name="echo", open=open_echo)

PREREG = """
[models.e]
backend = "echo"
source = "parrot"
concurrency = 3
[[arms]]
name = "a"
model = "e"
quants = ["source"]
generation = { temperature = 0.0, top_p = 1.0, seed = 0, max_tokens = 8 }
"""


@pytest.fixture
def echo(monkeypatch):
    monkeypatch.setitem(REGISTRY, "echo", ECHO)  # the one registry line
    OPENED.clear()


@pytest.mark.unit
def test_an_unregistered_backend_is_bad_input(tmp_path):
    with pytest.raises(BadInput) as e:
        parse_models(tomllib.loads(PREREG), tmp_path / "prereg.toml")
    assert e.value.field == "backend" and "echo" in str(e.value)


@pytest.mark.unit
def test_a_registered_echo_backend_collects_and_is_verified_honestly(echo, tmp_path):
    doc = tomllib.loads(PREREG)
    f = tmp_path / "prereg.toml"
    models = parse_models(doc, f)
    arms = parse_arms(doc, f, models, {})
    questions = [Question(f"q{i}", f"What is {i} plus {i}?", None, (), None, "set.jsonl") for i in range(6)]
    out = tmp_path / "answers.jsonl"
    stats = collect(arms, models, {}, questions, tmp_path, Runtime(), out, CallCache(tmp_path / "calls.sqlite"),
                    progress=False)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["question_id"]: r["text"] for r in rows} == {q.id: q.question for q in questions}
    assert stats["model_calls"] == 6 and stats["errors"] == 0
    eff = stats["effective"]["a/source"]
    # nothing was read back, so nothing is claimed to match: each sent sampling setting is "not verifiable"
    assert eff["read_back"] == {"temperature": NOT_VERIFIABLE, "top_p": NOT_VERIFIABLE, "seed": NOT_VERIFIABLE}
    assert eff["not_verifiable"] == ["temperature", "top_p", "seed"]
    assert all(r["effective"]["not_verifiable"] == ["temperature", "top_p", "seed"] for r in rows)
    assert len(OPENED) == 1  # not serial: up to the model's concurrency (3) in flight, on worker threads
    assert threading.get_ident() not in OPENED[0].threads


@pytest.mark.unit
def test_the_echo_backend_refuses_keys_and_settings_it_does_not_declare(echo, tmp_path):
    f = tmp_path / "prereg.toml"
    with pytest.raises(BadInput) as e:  # thinking_control is a model key of the openai backend only
        parse_models(tomllib.loads(PREREG.replace('source = "parrot"', 'source = "parrot"\n'
                                                  'thinking_control = "reasoning_effort"')), f)
    assert e.value.field == "thinking_control" and "openai" in str(e.value)
    doc = tomllib.loads(PREREG.replace("max_tokens = 8", 'max_tokens = 8, thinking = true, effort = "low"'))
    with pytest.raises(BadInput) as e:  # echo declares no way to send an effort
        parse_arms(doc, f, parse_models(doc, f), {})
    assert e.value.field == "effort"


@pytest.mark.unit
def test_a_serial_backend_gets_one_call_at_a_time(echo, monkeypatch, tmp_path):
    monkeypatch.setitem(REGISTRY, "echo", replace(ECHO, serial=True))
    doc = tomllib.loads(PREREG)
    f = tmp_path / "prereg.toml"
    models = parse_models(doc, f)
    questions = [Question(f"q{i}", f"Question {i}?", None, (), None, "set.jsonl") for i in range(4)]
    collect(parse_arms(doc, f, models, {}), models, {}, questions, tmp_path, Runtime(), tmp_path / "a.jsonl",
            CallCache(tmp_path / "calls.sqlite"), progress=False)
    assert OPENED[0].threads == {threading.get_ident()}  # in the caller's thread: no pool


class ParallelEcho(EchoBackend):
    """The echo backend declaring parallel decoding, which makes it implement ParallelDecoding.callers."""

    def __init__(self, model: str):
        super().__init__(model)
        self.joined, self.left = 0, 0
        self._lock = threading.Lock()

    def callers(self, n: int):
        self.joined += n

        def leave() -> None:
            with self._lock:
                self.left += 1

        return leave


def open_parallel_echo(spec, quant, adapters, exp_dir, runtime) -> ParallelEcho:
    OPENED.append(ParallelEcho(spec.source))
    return OPENED[-1]


@pytest.mark.unit
def test_a_parallel_decoding_backend_gets_the_registered_batch_in_flight_and_its_callers(echo, monkeypatch,
                                                                                         tmp_path):
    """`parallel_decoding` (llama.cpp's several sequences in one context): `[runtime] batch` calls at once, on
    worker threads, rows still in task order, and the backend told how many threads call it (each leaves once);
    at batch 1 the serial path (the caller's thread), which tells it nothing."""
    monkeypatch.setitem(REGISTRY, "echo", replace(ECHO, serial=True, parallel_decoding=True, open=open_parallel_echo))
    doc = tomllib.loads(PREREG)
    f = tmp_path / "prereg.toml"
    models = parse_models(doc, f)
    questions = [Question(f"q{i}", f"Question {i}?", None, (), None, "set.jsonl") for i in range(8)]
    for batch in (1, 4):
        out = tmp_path / f"a{batch}.jsonl"
        collect(parse_arms(doc, f, models, {}), models, {}, questions, tmp_path, Runtime(parallel_sequences=batch),
                out,
                CallCache(tmp_path / f"calls{batch}.sqlite"), progress=False)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["question_id"] for r in rows] == sorted(q.id for q in questions)  # by question text: q0..q7
    one, four = OPENED
    assert one.threads == {threading.get_ident()} and (one.joined, one.left) == (0, 0)
    assert threading.get_ident() not in four.threads and len(four.threads) <= 4  # worker threads, at most 4
    assert (four.joined, four.left) == (4, 4)
    assert REGISTRY["echo"].workers(concurrency=3, parallel_sequences=4) == 4
    assert ECHO.workers(concurrency=3, parallel_sequences=4) == 3


RUN = """[experiment]
name = "echoes"
seed = 1
sets = ["set.jsonl"]

[models.e]
backend = "echo"
source = "parrot"

[models.j]
backend = "echo"
source = "owl"

[[arms]]
name = "a"
model = "e"
quants = ["source"]
generation = { temperature = 0.0, top_p = 1.0, seed = 0, max_tokens = 8 }

[judge]
rubric = "correctness"

[judges.j]
model = "j"
"""


@pytest.mark.unit
def test_a_run_opens_each_judge_once(echo, tmp_path):
    """The judge's settings are read back before the first answer, and its verdicts come from that same backend:
    a local judge model is loaded once per run, not once to be verified and again to judge."""
    from pipeline.run import run
    from registration.seal import seal

    exp = tmp_path / "exp"
    exp.mkdir()
    (exp / "prereg.toml").write_text(RUN)
    (exp / "set.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} plus {i}?",
                                                       "reference": str(2 * i)}) + "\n" for i in range(3)))
    seal(exp)
    out = run(exp, out=tmp_path / "out", progress=False)
    verdicts = [json.loads(line) for line in (out / "judgments.jsonl").read_text().splitlines()]
    assert [v["judge"] for v in verdicts] == ["j"] * 3  # the echo judge replies no verdict: unscored, all the same
    assert sorted(b.model for b in OPENED) == ["owl", "parrot"]
    cache = CallCache()  # the call cache knows this folder used every call its records name (`judge cache`)
    try:
        used = {run: n for run, _, n in summary(cache).runs}
    finally:
        cache.close()
    assert used[str(out.resolve())] == 3 + 3 * 2  # three answers, three verdicts of two attempts (none parses)


PRODUCT = ("core", "models", "registration", "arms", "judge", "audit", "pipeline")
# a backend's name compared, or a set of names tested: the facts belong in the backend's BackendInfo
NAMES = r"""["'](llama-cpp|openai|anthropic)["']"""
NAME_TEST = re.compile(rf"""(==|!=)\s*{NAMES}|{NAMES}\s*(==|!=)|\bin\s*[({{\[]\s*{NAMES}|\b[A-Z_]*BACKENDS\b""")


@pytest.mark.unit
def test_no_product_module_outside_the_backends_compares_a_backend_name():
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.parent.name == "backends":
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if NAME_TEST.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.unit
def test_the_name_test_finds_the_comparisons_it_is_for():
    """The scan above would find each form the registry replaced (planted lines, not the code under test)."""
    for line in ('workers = 1 if model.backend == "llama-cpp" else model.concurrency',
                 'SERIAL_BACKENDS = {"llama-cpp"}', 'if spec.backend != "anthropic":',
                 'if eff.get("backend") == "llama-cpp":', "if name in ('openai', 'anthropic'):"):
        assert NAME_TEST.search(line), line
    assert not NAME_TEST.search("workers = backend_info(model.backend).workers(model.concurrency)")


# --- sampling read back from llama.cpp's own sampler chain ---------------------------------------------------



class IgnoresTemperature(LlamaCppBackend):
    """A backend that sends the registered temperature but samples greedily: what a read-back must catch."""

    def _generate(self, request: Request):
        return super()._generate(replace(request, generation=replace(request.generation, temperature=0.0)))


@pytest.fixture(scope="module")
def smollm2():
    return str(embedded_model("smollm2"))


def _verify(b, **gen):
    return verify_settings(b, "arm 'a'", Generation(max_tokens=8, **gen), "source",
                           ModelSpec("m", "llama-cpp", "x"), (), Runtime(n_ctx=512))


@pytest.mark.integration
def test_llama_cpp_reads_back_the_sampler_chain_and_seed(smollm2):
    b = LlamaCppBackend(LlamaConfig(model_path=smollm2, threads=1, n_ctx=512))
    try:
        sampled = _verify(b, temperature=0.7, top_p=0.9, seed=1234)
        rb = sampled["read_back"]
        assert rb["seed"] == 1234  # the dist sampler's own seed, read from llama.cpp
        assert {"temp", "top-p", "dist"} <= set(rb["sampler_chain"]) and "greedy" not in rb["sampler_chain"]
        assert (rb["temperature"], rb["top_p"]) == (NOT_VERIFIABLE, NOT_VERIFIABLE)  # llama.cpp has no getter
        assert sampled["not_verifiable"] == ["temperature", "top_p"]
        eff = _verify(b, temperature=0.0, top_p=1.0, seed=7)
        greedy = eff["read_back"]
        assert greedy["temperature"] == 0.0 and "greedy" in greedy["sampler_chain"] and eff["not_verifiable"] == []
        assert greedy["seed"] == greedy["top_p"] == NOT_USED  # greedy decoding draws nothing: nothing to verify
        full = _verify(b, temperature=0.5, top_p=1.0, seed=3)["read_back"]
        assert full["top_p"] == 1.0 and "?top-p" in full["sampler_chain"]  # llama.cpp marks an inactive sampler "?"
    finally:
        b.close()


@pytest.mark.integration
def test_a_backend_that_ignores_temperature_is_caught(smollm2):
    b = IgnoresTemperature(LlamaConfig(model_path=smollm2, threads=1, n_ctx=512))
    try:
        assert b.sent(Generation(temperature=0.7))["temperature"] == 0.7  # what it sends looks right
        with pytest.raises(CheckFailed, match=r"temperature: registered 0.7, llama.cpp sampled greedily"):
            _verify(b, temperature=0.7, top_p=0.9, seed=1)
        _verify(b, temperature=0.0, top_p=1.0, seed=1)  # where it is honoured, it passes
    finally:
        b.close()


@pytest.mark.unit
def test_sampler_chain_differences_by_hand():
    chain = ["?penalties", "?top-k", "?typical", "top-p", "?min-p", "temp", "dist"]
    assert sampler_differences(Generation(temperature=0.7, top_p=0.9), chain) == []
    assert len(sampler_differences(Generation(temperature=0.7, top_p=1.0), chain)) == 1  # top-p active, 1 registered
    assert len(sampler_differences(Generation(temperature=0.0, top_p=0.9), chain)) == 1  # sampled, 0 registered
    assert len(sampler_differences(Generation(temperature=0.0, top_p=1.0), chain)) == 2  # and top-p active too
    assert sampler_differences(Generation(temperature=0.0), ["?penalties", "greedy"]) == []
    assert "top-k" in sampler_differences(Generation(temperature=0.0), ["?penalties", "top-k", "greedy"])[0]


@pytest.mark.unit
def test_an_openai_compatible_server_reads_back_nothing():
    b = OpenAIBackend(OpenAIConfig(model="m", base_urls=("http://127.0.0.1:9/v1",)))
    try:
        assert b.read_back(Generation()) == {"temperature": NOT_VERIFIABLE, "top_p": NOT_VERIFIABLE,
                                             "seed": NOT_VERIFIABLE}
    finally:
        b.close()


# --- sampling read back from llama-server's /slots through the OpenAI backend ---------------------------------



class DropTemperature(BaseHTTPRequestHandler):
    """A proxy in front of llama-server that drops `temperature` from every request: a server ignoring it."""

    upstream = ""

    def _forward(self, body: bytes | None) -> None:
        req = urllib.request.Request(self.upstream + self.path, data=body, method=self.command,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, data = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, data = e.code, e.read()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._forward(None)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body.pop("temperature", None)
        self._forward(json.dumps(body).encode())

    def log_message(self, *args):
        pass


def _verify_openai(url: str, **gen):
    b = OpenAIBackend(OpenAIConfig(model="smollm2-q8", base_urls=(f"{url}/v1",)))
    try:
        return verify_settings(b, "arm 'a'", Generation(max_tokens=8, **gen), "source",
                               ModelSpec("m", "openai", "smollm2-q8", base_url=f"{url}/v1"), (), Runtime())
    finally:
        b.close()


@pytest.mark.integration
def test_llama_server_reads_back_the_sampling_it_used(llama_server):
    eff = _verify_openai(llama_server.url, temperature=0.7, top_p=0.9, seed=5)
    assert eff["read_back"] == {"temperature": 0.7, "top_p": 0.9, "seed": 5} and eff["not_verifiable"] == []


@pytest.mark.integration
def test_a_server_that_ignores_temperature_is_caught_over_http(llama_server):
    DropTemperature.upstream = llama_server.url
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), DropTemperature)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{proxy.server_address[1]}"
        with pytest.raises(CheckFailed, match=r"temperature: registered 0.7, the backend used (?!0\.7)"):
            _verify_openai(url, temperature=0.7, top_p=0.9, seed=5)
    finally:
        proxy.shutdown()
        proxy.server_close()


@pytest.mark.unit
def test_the_report_names_what_could_not_be_verified():
    numbers = contract(Numbers, {"comparisons": [], "amendments": [], "subsets": [], "cells": []})
    run = {"judge": {"warnings": [], "effective_settings": {"local/correctness": {"not_verifiable": []}}},
           "effective_settings": {"base/Q8_0": {"not_verifiable": ["temperature", "top_p"]}}, "audit_gate": "gate"}
    said = [line for line in owe_the_reader(numbers, contract(RunInfo, run)) if "not verifiable" in line]
    assert len(said) == 1 and "arm base/Q8_0 (temperature, top_p)" in said[0] and "judge" not in said[0]
    del run["effective_settings"]  # run.json written before read-back existed: no line
    assert not [line for line in owe_the_reader(numbers, contract(RunInfo, run)) if "not verifiable" in line]


@pytest.mark.integration
def test_llama_server_reads_back_over_the_messages_route_too(llama_server):
    b = AnthropicBackend(AnthropicConfig(model="smollm2-q8", base_url=llama_server.url, sampling_params=True))
    try:
        eff = verify_settings(b, "arm 'a'", Generation(max_tokens=8, temperature=0.6, top_p=0.8, seed=None), "api",
                              ModelSpec("m", "anthropic", "smollm2-q8", base_url=llama_server.url,
                                        sampling_params=True), (), Runtime())
    finally:
        b.close()
    assert (eff["read_back"]["temperature"], eff["read_back"]["top_p"]) == (0.6, 0.8)
    assert eff["not_verifiable"] == []  # the seed is not sent, so nothing is claimed for it
