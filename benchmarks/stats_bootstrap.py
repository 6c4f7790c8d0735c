"""Paired bootstrap speed: judge.numbers.stats.paired vs scipy.stats.bootstrap on the same data.

8 arm/quant cells x N questions (scores 0/1/2), 10,000 resamples, percentile and BCa.
The speed-up is timed several times, each of ours next to scipy's, and given as a range (the machine
is shared: a single ratio moves with its load). Also checks that both give equal intervals when given
the same resample indices (scipy's own random_state=0 resamples are RandomState(0).randint(0, n, (B, n))).

    python benchmarks/stats_bootstrap.py            # full: 8 x 1000 questions, 10,000 resamples, 7 repeats
    python benchmarks/stats_bootstrap.py --quick    # CI: proves it runs
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from scipy import stats as sps

from judge.numbers.stats.bootstrap import bca_interval, bootstrap_means, percentile_interval
from judge.numbers.stats.paired import paired


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=7, help="interleaved timings; the speed-up is given as a range")
    args = ap.parse_args()
    cells, n, B = (8, 1000, 10_000) if not args.quick else (2, 100, 500)
    repeats = args.repeats if not args.quick else 2
    rng = np.random.default_rng(1)
    data = [(rng.integers(0, 3, n), rng.integers(0, 3, n)) for _ in range(cells)]  # integer scores: exact
    out = {"cells": cells, "questions": n, "resamples": B, "repeats": repeats}
    for method in ("percentile", "bca"):
        ratios, t_ours, t_scipy = [], [], []
        for _ in range(repeats):  # ours then scipy, back to back, so both see the same load
            t0 = time.perf_counter()
            ours = [paired(a, b, resamples=B, seed=0, method=method, alpha=0.025) for a, b in data]
            t_ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ref = [sps.bootstrap((b - a,), np.mean, n_resamples=B, method=method, confidence_level=0.95,
                                 random_state=0, vectorized=True) for a, b in data]
            t_scipy.append(time.perf_counter() - t0)
            ratios.append(t_scipy[-1] / t_ours[-1])
        # equal intervals on scipy's own resamples
        worst = 0.0
        for (a, b), r in zip(data, ref, strict=False):
            d = b - a
            idx = np.random.RandomState(0).randint(0, n, (B, n))
            boot = bootstrap_means(d, idx)
            lo, hi = (percentile_interval(boot, 0.95) if method == "percentile"
                      else bca_interval(d, boot, 0.95))
            worst = max(worst, abs(lo - r.confidence_interval.low), abs(hi - r.confidence_interval.high))
        out[method] = {"ours_s_median": round(float(np.median(t_ours)), 3),
                       "scipy_s_median": round(float(np.median(t_scipy)), 3),
                       "speedup_min": round(min(ratios), 1), "speedup_median": round(float(np.median(ratios)), 1),
                       "speedup_max": round(max(ratios), 1), "max_interval_difference_same_indices": worst}
        assert len(ours) == cells
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
