"""Does the calibration line withdraw the claims that break alpha? Measured at the boundary, where every claim is
false, and at a true difference of zero, where every claim is true (what a withdrawal there costs).

Each data set is decided by the registered rule through the public functions, and each claim is then calibrated
as the decision was calibrated when a calibration above its ceiling withdrew a claim (ceiling 2 alpha = 0.05,
``sims`` simulated data sets):

* score rule (the registered default), judge.numbers.stats.rule.claims on the differences b - a of a 0-2 rubric, K = 1,
  non-inferiority with margin 0.10 at one-sided alpha 0.025, calibrated by judge.numbers.stats.calibration.calibrate.
  Cells: differences -1 / 0 / +1 at 50 % and 86 % ties, and a skewed one (-2 / 0 / +1, 80 % ties), n = 20 and 40.
* gold-corrected interval (judge_error = "decide"): judge.numbers.stats.ppi.stratified_ppi_mean (rule "guarded") on 200
  questions, gold on a simple random sample of 20 or 40, calibrated by judge.numbers.stats.calibration.calibrate_ppi.
  Gold pairs from benchmarks/judge_error.py's table (true difference exactly -0.10); the judge reads them through its
  82 % confusion matrix and, biased, raises b on half of the questions (+0.15 on the mean difference). Scores 0-2,
  and the same scores times 5 (0/5/10 of a 0-10 rubric, margin 0.5).

Reported per cell: data sets, claims, the claims the calibration withdraws, the false-claim rate before and after
(with its Monte Carlo SE), and at a true difference of zero the share of true claims withdrawn.

    python benchmarks/calibration_withdrawal.py            # 4,000 data sets per cell, 200 sims (~3 minutes, 1 core)
    python benchmarks/calibration_withdrawal.py --quick    # 150 data sets, 40 sims (CI: proves it runs)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from fractions import Fraction

import numpy as np

from judge.numbers.stats import ppi
from judge.numbers.stats import rule as score_rule
from judge.numbers.stats.calibration import calibrate, calibrate_ppi
from judge.numbers.stats.decision_rules.interval import claims
from judge.numbers.stats.rule import Scale

ALPHA, CEILING, SEED = 0.025, 0.05, 20261204
SCORE_CELLS = {  # name -> {difference: probability}, mean exactly -0.10 (the boundary)
    "-1/0/+1, 50% ties": {-1: 0.30, 0: 0.50, 1: 0.20},
    "-1/0/+1, 86% ties": {-1: 0.12, 0: 0.86, 1: 0.02},
    "-2/0/+1, 80% ties (skewed)": {-2: 0.10, 0: 0.80, 1: 0.10},
}
NULL_SHIFT = {"-1/0/+1, 50% ties": {-1: 0.25, 0: 0.50, 1: 0.25}, "-1/0/+1, 86% ties": {-1: 0.07, 0: 0.86, 1: 0.07},
              "-2/0/+1, 80% ties (skewed)": {-2: 1 / 15, 0: 0.80, 1: 2 / 15}}  # mean 0: the claim is true
GOLD = np.array([[14, 4, 2], [6, 16, 6], [3, 12, 37]]) / 100  # benchmarks/judge_error.py: mean b - a = -0.10
JUDGE = np.array([[0.85, 0.13, 0.02], [0.10, 0.80, 0.10], [0.02, 0.13, 0.85]])
N_PPI, BIAS = 200, 0.3


def rate(x: int, n: int) -> dict[str, float]:
    p = x / n
    return {"rate": round(p, 4), "mc_se": round(math.sqrt(p * (1 - p) / n), 4)}


def score_cell(name: str, pmf: dict[int, float], n: int, sets: int, sims: int, rng) -> dict:
    values, probs = list(pmf), list(pmf.values())
    scale, out = Scale(0, 2), {}
    for world, m in (("boundary", Fraction(1, 10)), ("true difference 0", Fraction(1, 10))):
        p = probs if world == "boundary" else list(NULL_SHIFT[name].values())
        made = withdrawn = 0
        for _ in range(sets):
            d = rng.choice(values, size=n, p=p).tolist()
            if not score_rule.claims("non_inferiority", d, m, ALPHA, scale=scale):
                continue
            made += 1
            a = [2 if x < 0 else 0 if x > 0 else 1 for x in d]
            b = [x + y for x, y in zip(a, d, strict=True)]
            cal = calibrate(a, b, "non_inferiority", 0.1, alpha=ALPHA, method="percentile", resamples=1,
                            rule="score", sims=sims, seed=SEED, ceiling=CEILING, scale=scale)
            withdrawn += cal.rate > cal.ceiling
        out[world] = {"sets": sets, "claims": made, "withdrawn": withdrawn, "claim_rate": rate(made, sets),
                      "after_withdrawal": rate(made - withdrawn, sets)}
    return {"rule": "score", "cell": name, "n": n, **out}


def ppi_cell(labelled: int, biased: bool, points: int, sets: int, sims: int, rng) -> dict:
    factor = points // 2  # 0-2 scores times factor: the 0-10 rubric's 0/5/10
    margin = 0.1 * factor
    cum = np.cumsum(JUDGE, axis=1)
    made = withdrawn = 0
    for _ in range(sets):
        pair = rng.choice(9, size=N_PPI, p=GOLD.ravel())
        ga, gb = pair // 3, pair % 3
        ja = (rng.random(N_PPI)[:, None] >= cum[ga, :2]).sum(1)
        jb = (rng.random(N_PPI)[:, None] >= cum[gb, :2]).sum(1)
        if biased:
            below = float(GOLD.sum(0) @ JUDGE[:, :2].sum(1))
            half = rng.permutation(N_PPI) < N_PPI // 2
            jb = jb + (half & (jb < 2) & (rng.random(N_PPI) < BIAS / below))
        d, f = ((gb - ga) * factor).astype(float), ((jb - ja) * factor).astype(float)
        lab = rng.permutation(N_PPI) < labelled
        strata = {None: (d[lab], f[lab], f[~lab])}
        e = ppi.stratified_ppi_mean(strata, alpha=ALPHA, rule="guarded", step=1.0 * factor)
        if not claims("non_inferiority", margin, e.low, e.high):
            continue
        made += 1
        cal = calibrate_ppi(strata, "non_inferiority", margin, alpha=ALPHA, sims=sims, seed=SEED, ceiling=CEILING,
                            step=1.0 * factor)  # half the range, as judge.numbers.validity.step_of
        withdrawn += cal.rate > cal.ceiling
    return {"rule": "gold-corrected (decide)", "rubric": f"0-{points}", "labelled": labelled, "biased": biased,
            "boundary": {"sets": sets, "claims": made, "withdrawn": withdrawn, "claim_rate": rate(made, sets),
                         "after_withdrawal": rate(made - withdrawn, sets)}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sets", type=int, default=4000)
    ap.add_argument("--sims", type=int, default=200)
    args = ap.parse_args()
    sets, sims = (150, 40) if args.quick else (args.sets, args.sims)
    rng = np.random.default_rng(SEED)
    rows, t0 = [], time.perf_counter()
    for name, pmf in SCORE_CELLS.items():
        for n in (20, 40):
            rows.append(score_cell(name, pmf, n, sets, sims, rng))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    for points in (2, 10):
        for labelled in (20, 40):
            for biased in (False, True):
                rows.append(ppi_cell(labelled, biased, points, sets // 2, sims, rng))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    false = sum(r["boundary"]["claims"] for r in rows)
    gone = sum(r["boundary"]["withdrawn"] for r in rows)
    true = sum(r["true difference 0"]["claims"] for r in rows if "true difference 0" in r)
    lost = sum(r["true difference 0"]["withdrawn"] for r in rows if "true difference 0" in r)
    print(json.dumps({"sets": sets, "sims": sims, "ceiling": CEILING, "alpha": ALPHA, "cells": rows,
                      "false_claims": false, "false_claims_withdrawn": gone, "true_claims": true,
                      "true_claims_withdrawn": lost, "seconds": round(time.perf_counter() - t0, 1)}, indent=1))


if __name__ == "__main__":
    main()
