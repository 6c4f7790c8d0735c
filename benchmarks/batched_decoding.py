"""Batched local decoding (`[runtime] parallel_sequences`) against the bare sequential llama-cpp-python loop.

Arms: the demo's plain arms (`base`, `trained`) at both quants on its 40 questions (160 answers,
greedy, max_tokens 64), one llama.cpp thread, measured in one run:
  (a) bare: `llama_cpp.Llama` + `create_chat_completion` per question, same settings, adapters through
      llama-cpp-python's own `lora_path`, questions in the harness's prompt order, loads included;
  (b) the harness (`arms.collect.collect`, empty call cache) at batch 1 (sequential, as before);
  (c) the harness at batch 2, 4 and 8.
Figure: generated tokens per wall second, and each harness figure over the bare loop. Goals: >= 1.8x at
the best batch size, batch 1 >= 0.95x. The machine's other load drifts, so the work is cut into 4 rounds
(one per arm and quant; for the judge, a quarter of the verdicts each) and every configuration runs once
per round, in an order rotated each round; the ratios of each round are reported beside the totals.

Judge: the local demo judge (`[judges.local]`, Q8_0, the correctness rubric, JSON-schema grammar) on the
distinct answers the batch-1 harness collected, one verdict each (about 150 of the 160: equal answers of two
arms are one verdict; the demo's 320 verdicts also cover the glue arms, whose answers this benchmark does
not collect): a bare loop with the same messages, schema and
settings, then `judge.judging.calls.judge_all` at batch 1, 2, 4 and 8 (empty call cache each).

Also measured: how many greedy outputs differ between batch 1 and batch N (answer texts, verdict texts
and scores), the time inside `llama_decode` (the rest is Python), and llama.cpp's own cost of one decode
step with k sequences (1 token each), which bounds what batching can gain on this machine.

    python benchmarks/batched_decoding.py            # the full figures (about 25 minutes on 2 shared cores)
    python benchmarks/batched_decoding.py --quick    # CI: proves it runs (2 questions, batch 2, base at Q8_0,
                                                     # one verdict)
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import llama_cpp

from arms.collect import Task, collect, plain_messages, prompt_order
from core import jsonl
from judge.judging.blinding import BlindItem
from judge.judging.calls import build_request, judge_all
from models.cache import CallCache
from models.llama_loader import extra_buffers, load_llama
from models.load import open_backend
from models.sources import adapter_file, model_source, quant_file
from pipeline.run import DEMO
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.rubric import load_rubric

GOAL_BATCHED, GOAL_SEQUENTIAL = 1.8, 0.95


class DecodeClock:
    """Time spent inside llama_decode (both paths call it through the llama_cpp module)."""

    MODULES = (llama_cpp, llama_cpp.llama_cpp)  # the batched path calls the first, llama-cpp-python's Llama the second

    def __init__(self):
        self.seconds, self.calls = 0.0, 0
        self._decode = llama_cpp.llama_decode

    def __enter__(self):
        def timed(ctx, batch):
            t0 = time.perf_counter()
            try:
                return self._decode(ctx, batch)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        for module in self.MODULES:
            module.llama_decode = timed
        return self

    def __exit__(self, *exc):
        for module in self.MODULES:
            module.llama_decode = self._decode


def clocked(run, *args) -> tuple[int, float, float]:
    """(generated tokens, wall seconds, seconds inside llama_decode) of a bare loop."""
    with DecodeClock() as clock:
        t0 = time.perf_counter()
        tokens = run(*args)
        elapsed = time.perf_counter() - t0
    return tokens, elapsed, clock.seconds


def bare_arms(exp, arms, questions, threads: int) -> int:
    tokens = 0
    for arm in arms:
        for quant in arm.quants:
            model = exp.models[arm.model]
            kw = {}
            if arm.adapters:
                spec = exp.adapters[arm.adapters[0]]
                kw = {"lora_path": str(adapter_file(spec, model_source(model, exp.dir), exp.dir)),
                      "lora_scale": spec.scale}
            llm = load_llama(quant_file(model, quant, exp.dir, exp.runtime).info.path, threads=threads, n_ctx=2048,
                             use_extra_buffers=extra_buffers().use, flash_attn=exp.runtime.flash_attn, **kw)
            g = arm.generation
            for t in prompt_order([Task(arm, quant, q, 0) for q in questions]):
                out = llm.create_chat_completion(
                    messages=[{"role": r, "content": c} for r, c in plain_messages(arm, t.question)],
                    temperature=g.temperature, top_p=g.top_p, max_tokens=g.max_tokens, seed=g.seed,
                    top_k=0, min_p=0.0, repeat_penalty=1.0)
                tokens += out["usage"]["completion_tokens"]
            llm.close()
    return tokens


def harness_arms(exp, arms, questions, batch: int, work: Path) -> tuple[int, float, float, list[dict]]:
    out = work / f"answers-{batch}.jsonl"
    cache = CallCache(work / f"calls-arms-{batch}.sqlite")
    with DecodeClock() as clock:
        t0 = time.perf_counter()
        stats = collect(arms, exp.models, exp.adapters, questions, exp.dir,
                        replace(exp.runtime, parallel_sequences=batch), out,
                        cache, progress=False)
        elapsed = time.perf_counter() - t0
    cache.close()
    assert stats["errors"] == 0 and stats["cached_calls"] == 0, stats
    rows = [r for _, r in jsonl.read(out)]
    return sum(r["completion_tokens"] for r in rows), elapsed, clock.seconds, rows


def demo_answers(exp, questions, work: Path) -> list[dict]:
    """The demo's answers (every arm, both quants: 320 with 40 questions), collected once at batch 1, untimed."""
    cache = CallCache(work / "calls-demo.sqlite")
    out = work / "answers-demo.jsonl"
    collect(list(exp.arms), exp.models, exp.adapters, questions, exp.dir, exp.runtime, out, cache, progress=False)
    cache.close()
    rows = [r for _, r in jsonl.read(out)]
    assert all(r["status"] == "ok" for r in rows), "a demo answer failed"
    return rows


def judge_items(rows: list[dict], questions) -> list[BlindItem]:
    """One item per answer, as the demo judges them. Two arms' equal answers to a question are one model call
    (the harness's call cache answers the second; the bare loop memoizes them the same way)."""
    qmap = {q.id: q for q in questions}
    return [BlindItem(label=f"B{i:04d}", question_id=r["question_id"], question=qmap[r["question_id"]].question,
                      reference=qmap[r["question_id"]].reference, answer=r["text"]) for i, r in enumerate(rows)]


def bare_judge(exp, judge, rubric, items) -> int:
    model = exp.models[judge.model]
    tokens = 0
    llm = load_llama(quant_file(model, judge.quant, exp.dir, exp.runtime).info.path, threads=exp.runtime.threads,
                     n_ctx=exp.runtime.n_ctx, use_extra_buffers=extra_buffers().use, flash_attn=exp.runtime.flash_attn)
    seen = set()
    for item in items:
        request = build_request(rubric, item, 0)
        if request.messages in seen:  # an equal answer to the same question: the harness's cache answers it
            continue
        seen.add(request.messages)
        g = request.generation
        out = llm.create_chat_completion(
            messages=[{"role": r, "content": c} for r, c in request.messages],
            response_format={"type": "json_object", "schema": json.loads(request.schema)},
            temperature=g.temperature, top_p=g.top_p, max_tokens=g.max_tokens, seed=g.seed,
            top_k=0, min_p=0.0, repeat_penalty=1.0)
        tokens += out["usage"]["completion_tokens"]
    llm.close()
    return tokens


def harness_judge(exp, judge, rubric, items, batch: int, work: Path) -> tuple[int, float, float, list[dict]]:
    out = work / f"judgments-{batch}.jsonl"
    cache = CallCache(work / f"calls-judge-{batch}.sqlite")
    with DecodeClock() as clock:
        t0 = time.perf_counter()
        backend = open_backend(exp.models[judge.model], judge.quant, None, exp.dir,
                               replace(exp.runtime, parallel_sequences=batch))
        try:
            stats = judge_all("bench", backend, rubric, items, cache, out, max_attempts=1, progress=False,
                              parallel_sequences=batch)
        finally:
            backend.close()
        elapsed = time.perf_counter() - t0
    cache.close()
    rows = [r for _, r in jsonl.read(out)]
    assert stats["model_calls"] == len({build_request(rubric, i, 0).messages for i in items}), stats
    called = {}  # tokens of the calls made, once each (a cache hit's row repeats its call's tokens)
    for r in rows:
        called[tuple(r["calls"])] = r["completion_tokens"]
    return sum(called.values()), elapsed, clock.seconds, rows


def step_cost(model_path: str, threads: int, n_seq: int, flash_attn: bool, steps: int = 30) -> dict[int, float]:
    """Milliseconds per llama_decode of k sequences x 1 token (k = 1, 2, 4, ... n_seq), at ~40 tokens of context."""
    llm = load_llama(model_path, threads=threads, n_ctx=2048, use_extra_buffers=extra_buffers().use,
                     flash_attn=flash_attn)
    params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)
    params.n_ctx, params.n_seq_max, params.kv_unified = n_seq * 2048, n_seq, False
    ctx = llama_cpp.llama_init_from_model(llm.model, params)
    batch = llama_cpp.llama_batch_init(512, 0, 1)
    prompt = llm.tokenize(b"A member may hire a bicycle for up to three hours at a time and must return it to any "
                          b"dock with a free space.", add_bos=False, special=True)
    out = {}
    try:
        k = 1
        while k <= n_seq:
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)

            def decode(tokens):
                for i, (t, p, s, logits) in enumerate(tokens):
                    batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = t, p, 1, logits
                    batch.seq_id[i][0] = s
                batch.n_tokens = len(tokens)
                assert llama_cpp.llama_decode(ctx, batch) == 0

            for s in range(k):  # each prompt on its own (k prompts may not fit one llama_batch)
                decode([(t, j, s, 0) for j, t in enumerate(prompt)])
            pos = len(prompt)
            decode([(100 + s, pos, s, 1) for s in range(k)])  # a first step, untimed
            t0 = time.perf_counter()
            for _ in range(steps):
                pos += 1
                decode([(100 + s, pos, s, 1) for s in range(k)])
            out[k] = round((time.perf_counter() - t0) / steps * 1000, 2)
            k *= 2
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)
        llm.close()
    return out


def differing(a: list[dict], b: list[dict], key: str, fields: tuple[str, ...]) -> int:
    by = {r[key]: tuple(r.get(f) for f in fields) for r in a}
    return sum(by[r[key]] != tuple(r.get(f) for f in fields) for r in b)


def interleaved(configs: list, rounds: int, run) -> dict:
    """Every config once per round, the order rotated each round (the machine's load drifts; each config meets
    it at every position). `run(config, round)` -> (tokens, seconds, decode seconds, rows)."""
    total = {c: [0, 0.0, 0.0, [], []] for c in configs}
    for r in range(rounds):
        for c in configs[r % len(configs):] + configs[:r % len(configs)]:
            tokens, seconds, decode, rows = run(c, r)
            t = total[c]
            t[0] += tokens
            t[1] += seconds
            t[2] += decode
            t[3].extend(rows)
            t[4].append(tokens / seconds)
    return total


def figures(total: dict, key: str, fields: tuple[str, ...]) -> dict:
    bare = total["bare"]
    out = {}
    for c, (tokens, seconds, decode, rows, per_round) in total.items():
        fig = {"tokens": tokens, "seconds": round(seconds, 1), "tokens_per_s": round(tokens / seconds, 1),
               "decode_share": round(decode / seconds, 3)}
        if c != "bare":
            fig["x_bare"] = round(tokens / seconds / (bare[0] / bare[1]), 3)
            fig["x_bare_per_round"] = [round(a / b, 2) for a, b in zip(per_round, bare[4], strict=True)]
            fig["differ_from_batch_1"] = f"{differing(total[1][3], rows, key, fields)} of {len(rows)}"
            for quant in sorted({r["quant"] for r in rows if "quant" in r}):  # K-quants are the fragile ones
                picked = [r for r in rows if r["quant"] == quant]
                fig[f"differ_{quant}"] = f"{differing(total[1][3], picked, key, fields)} of {len(picked)}"
        out["bare" if c == "bare" else f"batch_{c}"] = fig
    out["best_x_bare"] = max(f["x_bare"] for f in out.values() if "x_bare" in f)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="CI: 2 questions, batch 2, base at Q8_0 only, one verdict")
    p.add_argument("--skip-judge", action="store_true", help="only the arms")
    p.add_argument("--batches", default="1,2,4,8,16", help="harness batch sizes for the arms (1 first)")
    p.add_argument("--judge-batches", default="1,8,16", help="harness batch sizes for the judge (1 first)")
    p.add_argument("--flash-attn", action="store_true", help="[runtime] flash_attn = true, the bare loops likewise")
    args = p.parse_args(argv)
    exp = load_experiment(DEMO)
    exp = replace(exp, runtime=replace(exp.runtime, flash_attn=args.flash_attn))
    threads = exp.runtime.threads
    questions = load_questions(exp.set_paths())
    arms = [exp.arm("base"), exp.arm("trained")]
    batches = [int(b) for b in args.batches.split(",")]
    judge_batches = [int(b) for b in args.judge_batches.split(",")]
    if args.quick:
        questions, arms, batches = questions[:2], [replace(exp.arm("base"), quants=("Q8_0",))], [1, 2]
        judge_batches = batches
    assert batches[0] == judge_batches[0] == 1, "batch 1 first: the other sizes are compared with it"
    groups = [replace(a, quants=(q,)) for a in arms for q in a.quants]
    judge = next(j for j in exp.judges if j.name == "local")
    rubric = load_rubric(exp.rubric)
    result: dict = {"machine": f"{platform.machine()}, {platform.python_version()}", "threads": threads,
                    "flash_attn": exp.runtime.flash_attn,
                    "llama_cpp_python": llama_cpp.__version__, "questions": len(questions),
                    "arm_quants": [f"{a.name}/{a.quants[0]}" for a in groups], "goals": {
                        "best_batch_x_bare": GOAL_BATCHED, "batch_1_x_bare": GOAL_SEQUENTIAL}}
    q8 = quant_file(exp.models["smollm2-135m"], "Q8_0", exp.dir, exp.runtime).info.path
    result["decode_step_ms_q8_0"] = step_cost(q8, threads, max(batches), exp.runtime.flash_attn)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)

        def arm_round(config, r: int):
            if config == "bare":
                return (*clocked(bare_arms, exp, [groups[r]], questions, threads), [])
            return harness_arms(exp, [groups[r]], questions, config, work / f"arms-{r}")

        for r in range(len(groups)):
            (work / f"arms-{r}").mkdir()
        arm_total = interleaved(["bare", *batches], len(groups), arm_round)
        result["arms"] = figures(arm_total, "row", ("text",))
        print(json.dumps({"arms": result["arms"]}), file=sys.stderr)
        if not args.skip_judge:
            # quick: one of the answers just collected (the CI check that it runs, not the demo's 320)
            answers = arm_total[1][3][:1] if args.quick else demo_answers(exp, questions, work)
            items = judge_items(answers, questions)
            chunks = [items[i::len(groups)] for i in range(len(groups))]

            def judge_round(config, r: int):
                if config == "bare":
                    return (*clocked(bare_judge, exp, judge, rubric, chunks[r]), [])
                (work / f"judge-{r}").mkdir(exist_ok=True)
                return harness_judge(exp, judge, rubric, chunks[r], config, work / f"judge-{r}")

            judge_total = interleaved(["bare", *judge_batches], len(groups), judge_round)
            result["judge"] = {"judge": f"{judge.name} ({judge.quant})", "verdicts": len(items),
                               "distinct_calls": len({build_request(rubric, i, 0).messages for i in items}),
                               **figures(judge_total, "label", ("attempts", "status", "score")),
                               "scores_differ": {b: differing(judge_total[1][3], judge_total[b][3], "label",
                                                              ("score",)) for b in judge_batches if b > 1}}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
