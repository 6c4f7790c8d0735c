"""`[runtime] parallel_sequences = N`: several llama.cpp sequences decoded together in one context
(models.backends.llama_parallel).

The expected outputs come from the sequential path (`Llama.create_chat_completion` through llama-cpp-python's
chat handler, one request at a time), never from the batched code. What is guaranteed: the same prompt tokens,
sampler chain, seed, grammar and stopping rules, so any difference is llama.cpp's arithmetic on a batch of
another shape. That difference is measured, not assumed away (BENCHMARKS.md), so exact equality is asserted
where it is deterministic: requests decoded one at a time in the batched context (the same shapes as the
sequential path). In company, the plain greedy check allows one tipped near-tie in six; the schema, stop,
adapter, sampled and shared-prefix checks assert equality on requests that came out equal in every run here.
"""
from __future__ import annotations

import json
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from arms.collect import plain_messages
from core import jsonl
from judge.results.files import last_invocation
from models.backends.base import Request
from models.load import open_backend
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.seal import seal

from conftest import ROOT, cli

pytestmark = pytest.mark.integration

DEMO = ROOT / "sealed" / "demo"
SCHEMA = json.dumps({"type": "object", "required": ["answer", "confident"], "additionalProperties": False,
                     "properties": {"answer": {"type": "string", "maxLength": 40}, "confident": {"type": "boolean"}}},
                    sort_keys=True)


@pytest.fixture(scope="module")
def demo():
    exp = load_experiment(DEMO)
    return exp, load_questions(exp.set_paths())


def backend(demo, batch: int):
    exp, _ = demo
    return open_backend(exp.models["smollm2-135m"], "Q8_0", (), exp.dir, replace(exp.runtime, parallel_sequences=batch))


def answer_all(b, requests: list[Request], workers: int, call=None):
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(call or b.complete, requests))


def plain(demo, n: int, max_tokens: int = 24) -> list[Request]:
    exp, questions = demo
    arm = exp.arm("base")
    gen = replace(arm.generation, max_tokens=max_tokens)
    return [Request(tuple(plain_messages(arm, q)), gen) for q in questions[:n]]


def outcome(reply):
    return reply.text, reply.finish_reason, reply.prompt_tokens, reply.completion_tokens


def sequential_and_batched(demo, requests: list[Request], batch: int) -> tuple[list, list]:
    """The outcomes of `requests` one at a time at batch 1, and all in flight at `batch`."""
    seq = backend(demo, 1)
    try:
        expected = [outcome(seq.complete(r)) for r in requests]
    finally:
        seq.close()
    batched = backend(demo, batch)
    try:
        return expected, [outcome(r) for r in answer_all(batched, requests, batch)]
    finally:
        batched.close()


def test_one_at_a_time_the_batched_context_gives_the_sequential_text(demo, monkeypatch):
    """Each request alone in the batched context, steered into the emptiest slot so that all but the first copy
    their prompt's shared prefix (the chat template and system prompt) from another slot's cells: exactly the
    sequential text, every one. Deterministic: the same prompt tokens, sampler, stops and KV values, decoded in
    the same shapes as one at a time; a wrong copy, prompt, sampler or stop breaks it."""
    import llama_cpp

    from models.backends.llama_parallel import ParallelDecoder

    copies = []
    real_cp = llama_cpp.llama_memory_seq_cp
    monkeypatch.setattr(llama_cpp, "llama_memory_seq_cp", lambda mem, src, dst, p0, p1: (
        copies.append((src, dst)), real_cp(mem, src, dst, p0, p1))[1])
    monkeypatch.setattr(ParallelDecoder, "_choose_slot", staticmethod(lambda free, kept: min(free, key=kept)))
    requests = plain(demo, 6)
    seq = backend(demo, 1)
    try:
        expected = [outcome(seq.complete(r)) for r in requests]
    finally:
        seq.close()
    batched = backend(demo, 4)
    try:
        got = [outcome(batched.complete(r)) for r in requests]
        eff = batched.effective()
    finally:
        batched.close()
    assert got == expected
    assert copies == [(0, 1), (0, 2), (0, 3)]  # slots 1-3 took the prefix slot 0 decoded, then held it themselves
    assert any(finish == "length" for _, finish, _, n in got if n == 24)  # max_tokens ends a sequence as "length"
    assert (eff["batch"], eff["n_ctx"], eff["n_threads"], eff["n_threads_batch"]) == (4, 2048, 1, 1)


def test_in_company_greedy_texts_differ_only_in_rare_near_ties(demo):
    """Six requests in flight together at batch 4: the same prompts, and the sequential text for all but at most
    one. A token's logits come from matrix products whose shape depends on what else is in the step, so a near-tie
    can tip (measured in BENCHMARKS.md); the second demo question does so here at Q8_0."""
    requests = plain(demo, 6)
    expected, got = sequential_and_batched(demo, requests, 4)
    assert [g[2] for g in got] == [e[2] for e in expected]  # prompt tokens: exactly the sequential prompts
    assert sum(g != e for g, e in zip(got, expected, strict=True)) <= 1, (got, expected)


def test_requests_arriving_together_decode_their_shared_prefix_once(demo, monkeypatch):
    """Four requests with one long system prompt (as a judge's rubric) arrive together at batch 4: the first decodes
    it, the other three wait one step and copy its cells, so llama.cpp decodes the shared part once, not four
    times. Planted: a shared system prompt of well over 150 tokens; each request stops after its first token."""
    import llama_cpp

    exp, questions = demo
    decoded = []
    real = llama_cpp.llama_decode
    monkeypatch.setattr(llama_cpp, "llama_decode", lambda ctx, b: (decoded.append(b.n_tokens), real(ctx, b))[1])
    system = " ".join(f"Rule {i}: answer the member's question about the bicycle scheme briefly." for i in range(20))
    gen = replace(exp.arm("base").generation, max_tokens=1)
    requests = [Request((("system", system), ("user", q.question)), gen) for q in questions[:4]]
    expected, got = sequential_and_batched(demo, requests, 4)
    total = sum(g[2] for g in got)  # every request's prompt tokens
    assert got == expected
    assert min(g[2] for g in got) > 200
    assert sum(decoded) < total - 3 * 150, (decoded, total)  # (only the batched context's decodes are counted)


def test_adapters_apply_in_the_batched_context(demo):
    """The trained arm's LoRA is set on the batched context too: its text is the sequential trained text, which the
    adapter makes differ from the base model's."""
    exp, _ = demo
    trained = exp.arm("trained")
    adapters = tuple(exp.adapters[a] for a in trained.adapters)
    requests = plain(demo, 3)
    texts = {}
    for name, batch, specs in (("base", 1, ()), ("trained", 1, adapters), ("trained-batched", 2, adapters)):
        b = open_backend(exp.models[trained.model], "Q8_0", specs, exp.dir,
                         replace(exp.runtime, parallel_sequences=batch))
        try:
            texts[name] = [outcome(r) for r in answer_all(b, requests, batch)]
        finally:
            b.close()
    assert texts["trained-batched"] == texts["trained"] != texts["base"]


def test_a_sampled_request_keeps_its_own_sampler_and_seed_in_company(demo):
    """Temperature 0.9 with seed 7: the same text alone in the batched context, among three other sampled requests
    with other seeds, and on the sequential path."""
    requests = plain(demo, 4, max_tokens=20)
    sampled = [replace(r, generation=replace(r.generation, temperature=0.9, top_p=0.95, seed=7 + i))
               for i, r in enumerate(requests)]
    seq = backend(demo, 1)
    try:
        expected = outcome(seq.complete(sampled[0]))
        greedy = outcome(seq.complete(requests[0]))
    finally:
        seq.close()
    batched = backend(demo, 4)
    try:
        read_back = batched.read_back(sampled[0].generation)  # the chain the batched path builds for it
        alone = outcome(batched.complete(sampled[0]))
        together = [outcome(r) for r in answer_all(batched, sampled, 4)]
    finally:
        batched.close()
    assert alone == together[0] == expected
    assert read_back["seed"] == 7 and read_back["sampler_chain"][-2:] == ["temp", "dist"]
    assert "top-p" in read_back["sampler_chain"]  # 0.95 < 1: active
    assert expected != greedy  # the seed really sampled (not a greedy text in disguise)
    assert len({t for t, *_ in together}) == 4  # other seeds, other prompts: other texts


def test_schema_requests_parse_and_match_the_sequential_path(demo):
    requests = [replace(r, schema=SCHEMA, generation=replace(r.generation, max_tokens=48)) for r in plain(demo, 3)]
    expected, got = sequential_and_batched(demo, requests, 4)
    for text, finish, *_ in got:
        parsed = json.loads(text)
        assert finish == "stop" and set(parsed) == {"answer", "confident"} and isinstance(parsed["confident"], bool)
    assert got == expected


def test_stop_strings_end_a_sequence_as_on_the_sequential_path(demo):
    requests = [replace(r, generation=replace(r.generation, stop=("e",))) for r in plain(demo, 3)]
    expected, got = sequential_and_batched(demo, requests, 2)
    assert got == expected and all("e" not in text and finish == "stop" for text, finish, *_ in got)


def test_the_batch_size_is_in_the_call_key_only_above_1(demo):
    one, four = backend(demo, 1), backend(demo, 4)
    assert "batch" not in one.identity()  # keys made before the setting existed still match
    assert four.identity() == {**one.identity(), "batch": 4}


def registered(tmp_path: Path, batch: str) -> Path:
    exp = tmp_path / ("exp-" + re.sub(r"\W", "", batch))
    shutil.copytree(DEMO, exp)
    toml = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(toml.replace("n_ctx = 2048\n", f"n_ctx = 2048\nparallel_sequences = {batch}\n", 1))
    seal(exp)
    return exp


@pytest.mark.parametrize("value", ["0", '"4"', "2.5", "true"])
def test_a_bad_batch_exits_2_naming_the_line_and_field(tmp_path, value):
    exp = registered(tmp_path, value)
    line = (exp / "prereg.toml").read_text().splitlines().index(f"parallel_sequences = {value}") + 1
    r = cli("judge", "run", "--exp", str(exp), "--arms", "base", "--limit", "1", "--out", str(tmp_path / "out"),
            "--quiet", timeout=120)
    assert r.returncode == 2 and f"prereg.toml:{line}" in r.stderr, r.stderr
    assert "field 'parallel_sequences'" in r.stderr
    assert "Traceback" not in r.stderr


def rows(path: Path) -> list[dict]:
    return [r for _, r in jsonl.read(path)]


def test_judge_run_with_batch_4_writes_in_order_resumes_and_records_the_batch(small_run, tmp_path):
    """Batch 1 is the reference. It asks what the session's `small_run` asked already (a call key names the batch
    only above 1), so run after it, in its worker (tests/conftest.py), it is answered from the session's call
    cache; every call at batch 4 is a new one."""
    runs = {}
    for batch in ("1", "4"):
        out = tmp_path / f"out-{batch}"
        r = cli("judge", "run", "--exp", str(registered(tmp_path, batch)), "--arms", "base", "--limit", "3",
                "--out", str(out), "--quiet", timeout=600)
        assert r.returncode == 0, r.stderr
        runs[batch] = out
    one, four = runs["1"], runs["4"]
    # rows in task order: the same order as one call at a time, the answers the same at Q8_0
    assert [a["row"] for a in rows(four / "answers.jsonl")] == [a["row"] for a in rows(one / "answers.jsonl")]
    # verdicts in the same question order, of the same answers (each folder blinds them under labels of its own secret)
    def judged(out: Path) -> tuple[list[str], list[str]]:
        row_of = {k["label"]: k["row"] for k in rows(out / "blinding.jsonl") if k.get("type", "blinding") == "blinding"}
        verdicts = rows(out / "judgments.jsonl")
        return [j["question_id"] for j in verdicts], sorted(row_of[j["label"]] for j in verdicts)
    assert judged(four) == judged(one)
    q8 = {a["row"]: a["text"] for a in rows(one / "answers.jsonl") if a["quant"] == "Q8_0"}
    assert {a["row"]: a["text"] for a in rows(four / "answers.jsonl") if a["quant"] == "Q8_0"} == q8
    # the batch is recorded: run.json, each arm's and the judge's effective settings, every row
    run = json.loads((four / "run.json").read_text())
    assert run["runtime"]["batch"] == 4
    assert all(eff["batch"] == 4 for eff in run["effective_settings"].values())
    assert all(a["effective"]["batch"] == 4 for a in rows(four / "answers.jsonl"))
    assert json.loads((one / "run.json").read_text())["runtime"]["batch"] == 1
    assert [eff["batch"] for eff in run["judge"]["effective_settings"].values()] == [4]
    assert run["judge"]["identity"]["batch"] == 4
    assert last_invocation(four)["judging"]["local/correctness"]["concurrency"] == 4
    # other call keys than batch 1 (batching may change outputs numerically), so nothing is answered across them
    keys = {k for a in rows(one / "answers.jsonl") for k in a["calls"]}
    assert keys.isdisjoint(k for a in rows(four / "answers.jsonl") for k in a["calls"])
    # resume: nothing to do, no model call
    r = cli("judge", "run", "--exp", str(tmp_path / "exp-4"), "--arms", "base", "--limit", "3", "--out", str(four),
            "--quiet", timeout=300)
    assert r.returncode == 0, r.stderr
    last = last_invocation(four)
    assert last["answers"]["model_calls"] == 0 and last["answers"]["rows_already_done"] == 6
    assert all(s["model_calls"] == 0 for s in last["judging"].values())
    assert cli("judge", "verify", str(four)).returncode == 0


def test_first_calls_from_several_threads_load_the_model_once(demo, monkeypatch):
    """With batch > 1 the first calls can arrive together (nothing loaded the model before them, e.g. a resumed
    run whose settings probe was cached): one thread loads, the others wait. Two concurrent loads of one model
    and its batched context crashed the process (SIGSEGV) before the load was locked."""
    import threading

    from models.backends.llama_cpp import LlamaCppBackend

    loads = []
    real = LlamaCppBackend._load

    def counted(self):
        loads.append(threading.get_ident())
        return real(self)

    monkeypatch.setattr(LlamaCppBackend, "_load", counted)
    b = backend(demo, 4)
    start = threading.Barrier(4)
    requests = plain(demo, 4, max_tokens=4)

    def go(r):
        start.wait()
        return b.complete(r)

    try:
        replies = answer_all(b, requests, 4, call=go)
    finally:
        b.close()
    assert len(loads) == 1 and all(r.completion_tokens > 0 for r in replies)


def test_a_batched_collection_gives_the_same_answers_every_time(demo, tmp_path):
    """Which requests share a decode step changes their numbers, so it must not be thread timing: `collect` tells
    the backend its threads and every step waits for all of them. Two collections of 16 answers at Q4_K_M (the
    quant where a step's company tips near-ties most often: 8 of 16 answers differed between two runs before)
    with empty caches give the same 16 texts."""
    from arms.collect import collect
    from models.cache import CallCache

    exp, questions = demo
    arm = replace(exp.arm("base"), quants=("Q4_K_M",), generation=replace(exp.arm("base").generation, max_tokens=48))
    texts = []
    for run in range(2):
        out = tmp_path / f"answers-{run}.jsonl"
        cache = CallCache(tmp_path / f"calls-{run}.sqlite")
        try:
            stats = collect([arm], exp.models, exp.adapters, questions[:16], exp.dir,
                            replace(exp.runtime, parallel_sequences=8), out, cache, progress=False)
        finally:
            cache.close()
        assert stats["model_calls"] == 16 and stats["errors"] == 0
        texts.append([r["text"] for _, r in jsonl.read(out)])
    assert texts[0] == texts[1]
