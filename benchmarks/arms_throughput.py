"""Arm-runner throughput against a bare llama-cpp-python loop, and the gain of prompt-cache-aware ordering.

1. Harness vs bare: the demo's `base` arm at Q8_0 (system prompt, greedy, max_tokens 64) on the
   first N demo questions, one llama.cpp thread. "Harness" is `arms.collect.collect` end to end —
   model load, settings verification (LoRA/template probes), call cache, fsynced answers.jsonl —
   with an empty call cache, so every call is real. "Bare" is `llama_cpp.Llama` plus
   `create_chat_completion` on the same file, messages and settings, load included. Figure:
   generated tokens per second of each; goal harness / bare >= 0.95. Runs alternate (which goes
   first alternates too) and the median of the repeats is reported. Other processes share the 2
   cores, so the ratio is noisy; `harness_overhead` (harness wall time outside the llama.cpp calls,
   over the wall time; it includes the model load, which the bare loop pays too) bounds the
   harness's own cost and varies much less.
2. Ordering: the glue arm over the same questions with K samples at temperature 0.7 (the glue's
   retrieved context makes prompts ~300 tokens). `prompt_order` (the harness's: the K samples of
   a question back to back, so llama.cpp reuses the whole prompt from its KV cache) against
   sample-major order (every question once, then again: what a loop over K passes does). Figure:
   wall time ratio.

    python benchmarks/arms_throughput.py            # 12 questions, 3 repeats; ordering: 6 questions x K=3
    python benchmarks/arms_throughput.py --quick    # CI: proves it runs (2 questions, 1 repeat, max_tokens 16)
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from arms.collect import collect, plain_messages, prompt_order
from core import jsonl
from models.cache import CallCache
from models.sources import quant_file
from pipeline.run import DEMO
from registration.prereg import load_experiment
from registration.questions import load_questions

GOAL = 0.95
QUANT = "Q8_0"
QUICK_MAX_TOKENS = 16


def bare(model: str, arm, questions, threads: int) -> tuple[int, float]:
    from models.llama_loader import extra_buffers, load_llama

    g = arm.generation
    t0 = time.perf_counter()
    llm = load_llama(model, n_ctx=2048, threads=threads, use_extra_buffers=extra_buffers().use)
    tokens = 0
    for q in questions:
        out = llm.create_chat_completion(messages=[{"role": r, "content": c} for r, c in plain_messages(arm, q)],
                                         temperature=g.temperature, top_p=g.top_p, max_tokens=g.max_tokens, seed=g.seed)
        tokens += out["usage"]["completion_tokens"]
    llm.close()
    return tokens, time.perf_counter() - t0


def harness(exp, arms, questions, work: Path, order=prompt_order) -> tuple[int, float, float]:
    out = work / f"answers-{time.perf_counter_ns()}.jsonl"
    cache = CallCache(work / f"calls-{time.perf_counter_ns()}.sqlite")  # empty: every call is real
    t0 = time.perf_counter()
    stats = collect(arms, exp.models, exp.adapters, questions, exp.dir, exp.runtime, out, cache, progress=False,
                    order=order)
    elapsed = time.perf_counter() - t0
    cache.close()
    assert stats["errors"] == 0 and stats["cached_calls"] == 0, stats
    rows = [r for _, r in jsonl.read(out)]
    return sum(r["completion_tokens"] for r in rows), elapsed, sum(r["latency_s"] for r in rows)


def sample_major(tasks):
    """Every question once, then every question again: K passes over the set."""
    return sorted(tasks, key=lambda t: (t.sample, t.question.id, t.arm.name))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="CI: 2 questions, one repeat, max_tokens 16")
    args = p.parse_args(argv)
    n, repeats, n_order, k = (2, 1, 2, 2) if args.quick else (12, 5, 6, 3)
    short = {"max_tokens": QUICK_MAX_TOKENS} if args.quick else {}  # CI checks that it runs, not the figures
    exp = load_experiment(DEMO)
    threads = exp.runtime.threads
    questions = load_questions(exp.set_paths())
    base = replace(exp.arm("base"), quants=(QUANT,), generation=replace(exp.arm("base").generation, **short))
    model = quant_file(exp.models[base.model], QUANT, exp.dir, exp.runtime).info.path
    result: dict = {"machine": f"{platform.machine()}, {platform.python_version()}", "threads": threads,
                    "model": Path(model).name, "questions": n, "max_tokens": base.generation.max_tokens}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        harness(exp, [base], questions[:1], work)  # warm the OS page cache and the quant/hash memos
        bare(model, base, questions[:1], threads)
        pairs, overhead = [], []
        for i in range(repeats):
            if i % 2:
                ht, hs, calls = harness(exp, [base], questions[:n], work)
                bt, bs = bare(model, base, questions[:n], threads)
            else:
                bt, bs = bare(model, base, questions[:n], threads)
                ht, hs, calls = harness(exp, [base], questions[:n], work)
            assert bt == ht, f"different outputs: bare {bt} tokens, harness {ht}"
            pairs.append((bt / bs, ht / hs))
            overhead.append((hs - calls) / hs)
        bare_tps = statistics.median(b for b, _ in pairs)
        harness_tps = statistics.median(h for _, h in pairs)
        result.update(bare_tokens_per_s=round(bare_tps, 2), harness_tokens_per_s=round(harness_tps, 2),
                      ratio=round(harness_tps / bare_tps, 3), goal=GOAL,
                      ratios=[round(h / b, 3) for b, h in pairs],
                      harness_overhead=round(statistics.median(overhead), 4))

        glue = replace(exp.arm("glue-base"), quants=(QUANT,), samples=k,
                       generation=replace(exp.arm("glue-base").generation, temperature=0.7, **short))
        times = {}
        for name, order in (("sample_major", sample_major), ("prompt_order", prompt_order)):
            runs = [harness(exp, [glue], questions[:n_order], work, order=order)[1] for _ in range(min(repeats, 3))]
            times[name] = statistics.median(runs)
        result.update(ordering={"arm": "glue-base, temperature 0.7", "questions": n_order, "samples": k,
                                "sample_major_s": round(times["sample_major"], 2),
                                "prompt_order_s": round(times["prompt_order"], 2),
                                "speedup": round(times["sample_major"] / times["prompt_order"], 3)})
    print(json.dumps(result, indent=1))
    return 0 if args.quick or result["ratio"] >= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
