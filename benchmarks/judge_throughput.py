"""Judge throughput at concurrency 1, 4 and 16 against a local server with injected latency.

Every verdict is one HTTP call that the scripted server answers after `--latency` seconds, so at
concurrency c the ideal time is requests x latency / c; the figure reported is ideal / achieved
(1.0 = no overhead). The server runs in its own process (`tests/support/scripted_server.py`) so its
work does not share this process's GIL: what is measured is the judge client as `judge run` drives
it — official SDK, retry wrapper, call cache, fsynced judgments.jsonl. Goal: >= 0.8 at 16.

    python benchmarks/judge_throughput.py            # 320 verdicts (the demo's count), 0.2 s each
    python benchmarks/judge_throughput.py --quick    # CI: proves it runs (32 verdicts, 0.05 s each)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judge.judging.blinding import BlindItem
from judge.judging.calls import judge_all
from models.backends.anthropic import AnthropicBackend, AnthropicConfig
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache
from registration.rubric import load_rubric

GOAL = 0.8
SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "scripted_server.py"  # a test peer


def items(n: int, level: int) -> list[BlindItem]:
    """Distinct answers, so no verdict is a cache hit."""
    return [BlindItem(label=f"L{level}-{i:05d}", question_id=f"q{i:05d}", question=f"What is rule {i}?",
                      reference=f"Rule {i} says so.", answer=f"Rule {i} says so, I believe ({level}).")
            for i in range(n)]


def serve(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(SERVER), "--latency", str(latency),
                             "--models", "judge"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def stop(proc: subprocess.Popen) -> dict:
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    return json.loads(err.strip().splitlines()[-1])


def one_level(api: str, n: int, latency: float, concurrency: int, tmp: Path) -> dict:
    proc, url = serve(latency)  # a fresh server per level: its call count and peak concurrency are this level's
    try:
        backend = (OpenAIBackend(OpenAIConfig(model="judge", base_urls=(url + "/v1",))) if api == "openai" else
                   AnthropicBackend(AnthropicConfig(model="judge", base_url=url)))
        out = tmp / f"judgments-{concurrency}.jsonl"
        try:
            t0 = time.perf_counter()
            stats = judge_all("bench", backend, load_rubric("correctness"), items(n, concurrency),
                              CallCache(tmp / f"calls-{concurrency}.sqlite"), out, progress=False,
                              concurrency=concurrency)
            seconds = time.perf_counter() - t0
        finally:
            backend.close()
    finally:
        server = stop(proc)
    statuses = [json.loads(line)["status"] for line in out.read_text().splitlines()]
    ideal = n * latency / concurrency
    return {"concurrency": concurrency, "seconds": round(seconds, 3), "ideal_seconds": round(ideal, 3),
            "fraction_of_ideal": round(ideal / seconds, 3), "verdicts_per_s": round(n / seconds, 2),
            "scored": statuses.count("scored"), "server_calls": server["calls"],
            "server_max_inflight": server["max_inflight"], "model_calls": stats["model_calls"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=320)
    p.add_argument("--latency", type=float, default=0.2, help="seconds the server waits before each reply")
    p.add_argument("--concurrency", default="1,4,16")
    p.add_argument("--api", choices=("openai", "anthropic"), default="openai")
    p.add_argument("--quick", action="store_true", help="32 requests at 0.05 s: proves it runs")
    a = p.parse_args(argv)
    n, latency = (32, 0.05) if a.quick else (a.requests, a.latency)
    with tempfile.TemporaryDirectory(prefix="judge-throughput-") as tmp:
        levels = [one_level(a.api, n, latency, int(c), Path(tmp)) for c in a.concurrency.split(",")]
    top, complete = levels[-1], all(lv["scored"] == n for lv in levels)  # a throughput of failures is no throughput
    print(json.dumps({
        "benchmark": "judge_throughput", "api": a.api, "requests": n, "latency_s": latency, "levels": levels,
        "goal": f"fraction_of_ideal >= {GOAL} at concurrency {top['concurrency']}",
        "all_scored": complete, "goal_met": complete and top["fraction_of_ideal"] >= GOAL,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "command": " ".join(["python", "benchmarks/judge_throughput.py", *(sys.argv[1:] if argv is None else argv)]),
    }, indent=1))
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
