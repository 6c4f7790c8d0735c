"""What the native-crash safety costs: CPU extra buffers on vs off, the probe, the crash supervisor.

1. Extra buffers: the demo's `base` arm prompts (system prompt, greedy, max_tokens 64) on the first N
   demo questions, at the demo's Q8_0 and at Q4_0 (which x86 builds repack; Q8_0 they may not), one
   llama.cpp thread, through `models.llama_loader.load_llama` with
   `use_extra_buffers` on and off, alternating which goes first; tokens/s of each and the ratio
   off / on, per repeat and median. Both must generate text; the tokens may differ (repacked
   weights round differently), so tokens/s is the figure, not wall time.
   On a CPU whose build and CPU report AMX, "on" is not measured (it crashes): the script says so.
2. Probe: wall time of one uncached `models.llama_loader.probe` (a child process that loads the model
   and decodes a ~90-token prompt), against a cached one.
3. Supervisor: wall time of `python -m judge --help` (parent + child, as users run it) against the
   same command run as the child alone (BLINDEVAL_CRASH_CONTEXT set: no supervisor), median of repeats.

    python benchmarks/native_safety.py            # 12 questions, 3 repeats
    python benchmarks/native_safety.py --quick    # CI: proves it runs (2 questions, 1 repeat)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from arms.collect import plain_messages
from models.files import sha256_file
from models.llama_loader import extra_buffers, load_llama, probe, system_info
from models.sources import quant_file
from pipeline.run import DEMO
from registration.prereg import load_experiment
from registration.questions import load_questions

ROOT = Path(__file__).resolve().parent.parent


def tokens_per_s(model: str, arm, questions, use: bool) -> tuple[float, list[str]]:
    g = arm.generation
    llm = load_llama(model, threads=1, n_ctx=2048, use_extra_buffers=use)
    tokens, spent = 0, 0.0
    try:
        for q in questions:
            t0 = time.perf_counter()
            out = llm.create_chat_completion(messages=[{"role": r, "content": c} for r, c in plain_messages(arm, q)],
                                             temperature=g.temperature, top_p=g.top_p, max_tokens=g.max_tokens,
                                             seed=g.seed, top_k=0, min_p=0.0, repeat_penalty=1.0)
            spent += time.perf_counter() - t0
            tokens += out["usage"]["completion_tokens"]
        buffers = llm.weight_buffers
    finally:
        llm.close()
    assert tokens > 0
    return tokens / spent, buffers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    n, repeats = (2, 1) if args.quick else (args.questions, args.repeats)
    exp = load_experiment(DEMO)
    arm = next(a for a in exp.arms if a.name == "base")
    questions = load_questions(exp.set_paths())[:n]
    decision = extra_buffers("auto")
    result: dict = {"machine": platform.processor() or platform.machine(), "llama_cpp_system_info": system_info(),
                    "decision": decision.to_dict(), "questions": n, "repeats": repeats, "extra_buffers": {}}
    for quant in ("Q8_0", "Q4_0"):
        model = quant_file(exp.models[arm.model], quant, exp.dir, exp.runtime).info.path
        runs, buffers = [], {}
        for i in range(repeats):
            order = (True, False) if i % 2 == 0 else (False, True)
            got = {}
            for use in order:
                if use and not decision.use:
                    continue  # the AMX crash: extra buffers on would kill this process
                got[use], buffers[use] = tokens_per_s(model, arm, questions, use)
            runs.append({"on": got.get(True), "off": got[False]})
        row: dict = {"weight_buffers_on": buffers.get(True), "weight_buffers_off": buffers[False],
                     "tokens_per_s_off": round(statistics.median(r["off"] for r in runs), 1)}
        if decision.use:
            ratios = [r["off"] / r["on"] for r in runs]
            row.update(tokens_per_s_on=round(statistics.median(r["on"] for r in runs), 1),
                       ratio_off_over_on=round(statistics.median(ratios), 3), ratios=[round(x, 3) for x in ratios])
        else:
            row["on"] = "not measured: extra buffers crash on this CPU"
        result["extra_buffers"][quant] = row

    with tempfile.TemporaryDirectory() as d:
        os.environ["BLINDEVAL_CACHE"] = d  # an empty probe cache
        sha = sha256_file(Path(model))
        t0 = time.perf_counter()
        first = probe(model, sha, threads=1, n_ctx=2048, use_extra_buffers=decision.use)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        second = probe(model, sha, threads=1, n_ctx=2048, use_extra_buffers=decision.use)
        warm = time.perf_counter() - t0
        assert first.ok and second.detail == "cached"
    result["probe_s"] = {"uncached": round(cold, 3), "cached": round(warm, 5)}

    def wall(env: dict) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "judge", "--help"], cwd=ROOT, env=env, check=True, capture_output=True)
        return time.perf_counter() - t0

    base_env = {k: v for k, v in os.environ.items() if k != "BLINDEVAL_CRASH_CONTEXT"}
    with tempfile.NamedTemporaryFile() as ctx:
        child_env = {**base_env, "BLINDEVAL_CRASH_CONTEXT": ctx.name}
        supervised, alone = [], []
        for _ in range(max(3, repeats * 3)):
            supervised.append(wall(base_env))
            alone.append(wall(child_env))
    result["supervisor_s"] = {"supervised": round(statistics.median(supervised), 3),
                              "child_alone": round(statistics.median(alone), 3),
                              "added": round(statistics.median(supervised) - statistics.median(alone), 3)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
