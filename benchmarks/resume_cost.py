"""Resume cost: re-running a finished `judge run` must make 0 model calls; how long does it take?

Runs the demo once into a fresh results folder with a fresh call cache, then again, and reports
both wall times and the model calls the second run made (from invocations.jsonl, the log of each run).

    python benchmarks/resume_cost.py                  # the whole demo: 320 answers + 320 verdicts
    python benchmarks/resume_cost.py --limit 5        # a quicker look
    python benchmarks/resume_cost.py --quick          # CI: 1 question of one arm, proves it runs

The call cache always starts empty. With --quick, the quant files, adapters and passed load probes already in
the current cache (BLINDEVAL_CACHE) are hard-linked into it: deriving them again is not what CI checks here.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from judge.results.files import last_invocation

ROOT = Path(__file__).resolve().parent.parent
DERIVED = ("quants", "adapters", "probes")  # derived from the model files, never a model call


def _link_derived(cache: Path) -> None:
    """Hard-link the current cache's derived model files into the empty cache `cache` (copy across devices)."""
    from models.cache import cache_dir

    def link(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    for name in DERIVED:
        if (cache_dir() / name).is_dir():
            shutil.copytree(cache_dir() / name, cache / name, copy_function=link)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    arms = "base" if args.quick else ""
    limit = 1 if args.quick else args.limit
    with tempfile.TemporaryDirectory() as t:
        env = {**os.environ, "BLINDEVAL_CACHE": str(Path(t) / "cache")}
        if args.quick:
            _link_derived(Path(t) / "cache")
        out = Path(t) / "run"
        cmd = [sys.executable, "-m", "judge", "run", "--arms", arms, "--out", str(out), "--quiet"]
        if limit:
            cmd += ["--limit", str(limit)]
        times, calls = [], []
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
            inv = last_invocation(out)
            calls.append(inv["answers"]["model_calls"] + sum(j["model_calls"] for j in inv["judging"].values()))
        print(json.dumps({"limit": limit, "arms": arms or "all", "first_run_s": round(times[0], 1),
                          "first_run_model_calls": calls[0], "rerun_s": round(times[1], 1),
                          "rerun_model_calls": calls[1]}, indent=1))
        assert calls[1] == 0, "a finished run was re-run and made model calls"


if __name__ == "__main__":
    main()
