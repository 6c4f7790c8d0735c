"""The family under judge_error = "decide": the chance of any false claim among 2-4 hypotheses, all at the boundary.

Data (one data set = one registration of m non-inferiority hypotheses, margin 0.10, one-sided alpha 0.025 each,
family "holm" or "fixed-sequence"; seeded and drawn with numpy):

* m hypotheses, each its own pair of arms on 400 questions scored 0-2. A question's gold pair is drawn from
  benchmarks/judge_error.py's table (true difference b - a exactly -0.10 = -margin): every claim is false, and
  the family promises that the chance of any is at most alpha.
* The judge reads every answer through its 82 % confusion matrix. "biased": on the first hypothesis it also raises
  b on a random half of the questions (+0.15 on its mean difference), so the judge alone claims it almost always;
  "unbiased": no raise anywhere.
* Gold on a simple random sample of 20, 40 or 80 of the 400 questions (design "random_sample").

Procedures, both judge.numbers.biases.family_decisions (the procedure judge.numbers.bias_checks.apply_family runs):

* "decide" (this version, judge.numbers.validity.decide_family): every test at level a is the gold-corrected interval
  (judge.numbers.stats.ppi.stratified_ppi_mean, rule "guarded") computed at a, claimed by
  judge.numbers.stats.decision_rules.interval.claims;
* "before": the family stepped down on the judge-only verdicts (the like-for-like guarded t on the judge's
  differences, judge.numbers.stats.ppi.judge_only_mean) and each corrected interval then decided at the level that step
  gave it (the earlier version, shown for contrast).

Reported per cell: the family-wise false-claim rate with its Monte Carlo SE (goal for "decide": at most 1.2 alpha
= 0.030 in every cell).

    python benchmarks/family_decide.py            # 4,000 data sets per cell, 36 cells (~3 minutes on one core)
    python benchmarks/family_decide.py --quick    # 60 data sets, 4 cells (CI: proves it runs)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from judge.numbers.biases import family_decisions
from judge.numbers.stats import ppi
from judge.numbers.stats.decision_rules.interval import claims

ALPHA, MARGIN, N, BIAS, SEED = 0.025, 0.10, 400, 0.3, 20261204
STEP = 1.0  # the guard's pseudo-residual: half the 0-2 rubric's range (judge.numbers.validity.step_of)
GOLD = np.array([[14, 4, 2], [6, 16, 6], [3, 12, 37]]) / 100  # rows gold a, columns gold b: mean b - a = -0.10
JUDGE = np.array([[0.85, 0.13, 0.02], [0.10, 0.80, 0.10], [0.02, 0.13, 0.85]])  # rows gold, columns judge


def draw(rng, biased: bool) -> tuple[np.ndarray, np.ndarray]:
    """One hypothesis: (gold difference, judge difference) per question."""
    pair = rng.choice(9, size=N, p=GOLD.ravel())
    ga, gb = pair // 3, pair % 3
    cum = np.cumsum(JUDGE, axis=1)
    ja = (rng.random(N)[:, None] >= cum[ga, :2]).sum(1)
    jb = (rng.random(N)[:, None] >= cum[gb, :2]).sum(1)
    if biased:
        below = float(GOLD.sum(0) @ JUDGE[:, :2].sum(1))  # P(the fair judge scores b's answer < 2)
        half = rng.permutation(N) < N // 2
        jb = jb + (half & (jb < 2) & (rng.random(N) < BIAS / below))
    return (gb - ga).astype(float), (jb - ja).astype(float)


def one_set(rng, m: int, labelled: int, biased: bool, method: str) -> dict[str, bool]:
    data = [draw(rng, biased and i == 0) for i in range(m)]
    lab = rng.permutation(N) < labelled
    ids, alphas = [f"H{i + 1}" for i in range(m)], [ALPHA] * m
    corrected: dict[tuple[int, float], bool] = {}

    def by_gold(i: int, a: float) -> bool:
        if (i, a) not in corrected:
            d, f = data[i]
            e = ppi.stratified_ppi_mean({None: (d[lab], f[lab], f[~lab])}, alpha=a, rule="guarded", step=STEP)
            corrected[(i, a)] = claims("non_inferiority", MARGIN, e.low, e.high)
        return corrected[(i, a)]

    def by_judge(i: int, a: float) -> bool:
        e = ppi.judge_only_mean(data[i][1], alpha=a, step=STEP)
        return claims("non_inferiority", MARGIN, e.low, e.high)

    now = family_decisions(method, ids, alphas, by_gold)
    before = family_decisions(method, ids, alphas, by_judge)
    return {"decide": any(s.claimed for s in now.steps),
            "before": any(s.tested_at is not None and by_gold(i, s.tested_at) for i, s in enumerate(before.steps))}


def rate(hits: int, n: int) -> dict[str, float]:
    p = hits / n
    return {"rate": round(p, 4), "mc_se": round(math.sqrt(p * (1 - p) / n), 4)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sets", type=int, default=4000)
    args = ap.parse_args()
    sets = 60 if args.quick else args.sets
    grid = ([("holm", 2, 20, True), ("holm", 3, 40, False), ("fixed-sequence", 2, 80, True),
             ("fixed-sequence", 4, 20, False)] if args.quick else
            [(method, m, labelled, biased) for method in ("holm", "fixed-sequence") for m in (2, 3, 4)
             for labelled in (20, 40, 80) for biased in (True, False)])
    rng = np.random.default_rng(SEED)
    rows, t0 = [], time.perf_counter()
    for method, m, labelled, biased in grid:
        hits = {"decide": 0, "before": 0}
        for _ in range(sets):
            for k, v in one_set(rng, m, labelled, biased, method).items():
                hits[k] += v
        rows.append({"family": method, "hypotheses": m, "labelled": labelled,
                     "judge": "biased on H1" if biased else "unbiased", "sets": sets,
                     **{k: rate(v, sets) for k, v in hits.items()}})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    worst = max(r["decide"]["rate"] for r in rows)
    print(json.dumps({"alpha": ALPHA, "goal": 1.2 * ALPHA, "sets_per_cell": sets, "cells": rows,
                      "worst_decide": worst, "seconds": round(time.perf_counter() - t0, 1)}, indent=1))


if __name__ == "__main__":
    main()
