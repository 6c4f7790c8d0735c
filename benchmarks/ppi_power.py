"""Does the stated power of the gold-corrected decision match its simulated power? (judge.numbers.stats.ppi_power)

Under ``judge_error = "decide"`` the PPI++ interval (judge.numbers.stats.ppi, rule "guarded") decides, and
judge.numbers.stats.ppi_power states its power before any label exists. Here each stated figure is set against the
decision itself, run on simulated data sets.

Data (seeded, one data set = one comparison): N questions, arms a and b, one answer each on the 0-2 rubric scale;
each question's gold pair drawn from the joint table GOLD (that of benchmarks/judge_error.py: true mean difference
b - a exactly -0.10); the judge reads each answer through a confusion matrix (rows gold, columns judge; the same for
both arms: an unbiased reader, at three levels of exact agreement); gold on a simple random sample of n questions.

Stated power: sd_gold, sd_judge and rho (the correlation of the gold and the judge's differences) computed exactly
from the tables, then judge.numbers.stats.ppi_power at alpha = 0.025 and the decision's step (one point). For each cell
the margin is set so that the stated power of "non-inferior" is 0.5 and then 0.8 (margin = -0.10's distance to the
boundary at the stated MDE), and the simulated power is the share of data sets whose corrected one-sided bound
clears -margin (judge.numbers.stats.decision_rules.interval.claims, strict). Reported with its Monte Carlo SE; the
check is |simulated - stated| <= 3 MC SE + 0.01 (the approximation's allowance) in every cell. Beside it,
``stated_assumed``: the power stated before any gold, as `judge label --sample` does, with the gold differences taken
to spread as the judge's and rho the default assumption 0.5: how far an assumption can be from the truth.

    python benchmarks/ppi_power.py             # 10,000 data sets per cell and target (~1 minute on one core)
    python benchmarks/ppi_power.py --quick     # 200 (CI: proves it runs)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from judge.numbers.stats import ppi
from judge.numbers.stats.decision_rules.interval import claims
from judge.numbers.stats.ppi_power import Design, mde, power

ALPHA, STEP, SEED = 0.025, 1.0, 20261204
ASSUMED_RHO = 0.5  # the registered default of assumed_gold_correlation
TRUE_DIFFERENCE = -0.10
GOLD = np.array([[14, 4, 2], [6, 16, 6], [3, 12, 37]]) / 100  # rows gold a, columns gold b (benchmarks/judge_error.py)
JUDGES = {  # rows gold 0, 1, 2; columns judge 0, 1, 2; exact agreement on GOLD's answers in the name
    "95 % exact": np.array([[0.96, 0.04, 0.00], [0.025, 0.95, 0.025], [0.00, 0.04, 0.96]]),
    "82 % exact": np.array([[0.85, 0.13, 0.02], [0.10, 0.80, 0.10], [0.02, 0.13, 0.85]]),
    "60 % exact": np.array([[0.62, 0.28, 0.10], [0.20, 0.60, 0.20], [0.10, 0.28, 0.62]]),
}
SIZES = ((40, 20), (40, 40), (400, 20), (400, 40), (400, 80))  # (N questions, n labelled)
TARGETS = (0.5, 0.8)


def moments(confusion: np.ndarray) -> dict[str, float]:
    """sd_gold, sd_judge, rho and both means, exactly from the tables (the judge reads a and b independently)."""
    values = np.arange(3.0)
    mean_j = confusion @ values  # E[judge | gold]
    var_j = confusion @ values ** 2 - mean_j ** 2
    e = {"d": 0.0, "f": 0.0, "dd": 0.0, "ff": 0.0, "df": 0.0}
    for ga in range(3):
        for gb in range(3):
            p, d = GOLD[ga, gb], gb - ga
            ef = mean_j[gb] - mean_j[ga]
            e["d"] += p * d
            e["f"] += p * ef
            e["dd"] += p * d * d
            e["ff"] += p * (var_j[ga] + var_j[gb] + ef * ef)
            e["df"] += p * d * ef
    sd_d, sd_f = math.sqrt(e["dd"] - e["d"] ** 2), math.sqrt(e["ff"] - e["f"] ** 2)
    return {"mean_gold": e["d"], "mean_judge": e["f"], "sd_gold": sd_d, "sd_judge": sd_f,
            "rho": (e["df"] - e["d"] * e["f"]) / (sd_d * sd_f)}


def draw(sims: int, confusion: np.ndarray, questions: int, labelled: int, rng: np.random.Generator):
    """(gold difference, judge difference, labelled mask), each (sims, questions)."""
    pair = rng.choice(9, size=(sims, questions), p=GOLD.ravel())
    gold_a, gold_b = pair // 3, pair % 3
    cum = np.cumsum(confusion, axis=1)

    def read(g: np.ndarray) -> np.ndarray:
        u = rng.random(g.shape)
        return (u >= cum[g, 0]).astype(int) + (u >= cum[g, 1]).astype(int)

    mask = np.argsort(rng.random((sims, questions)), axis=1) < labelled
    return (gold_b - gold_a).astype(float), (read(gold_b) - read(gold_a)).astype(float), mask


def cell(name: str, confusion: np.ndarray, questions: int, labelled: int, target: float, sims: int,
         seed: int) -> dict:
    t0 = time.perf_counter()
    mo = moments(confusion)
    design = Design(questions=questions, labelled=labelled, sd_judge=mo["sd_judge"], sd_gold=mo["sd_gold"],
                    correlation=mo["rho"], alpha=ALPHA, step=STEP)
    distance = mde(design, target, "non_inferiority")
    margin = distance - TRUE_DIFFERENCE  # the boundary -margin lies `distance` below the true difference
    stated = power(design, distance, "non_inferiority")
    # what `judge label --sample` states before any gold: the gold differences spread as the judge's, rho 0.5
    assumed = power(Design(questions, labelled, mo["sd_judge"], mo["sd_judge"], ASSUMED_RHO, ALPHA, STEP), distance,
                    "non_inferiority")
    d, f, mask = draw(sims, confusion, questions, labelled, np.random.default_rng(seed))
    hits = 0
    for s in range(sims):
        lab = mask[s]
        e = (ppi.ppi_mean(d[s][lab], f[s][lab], f[s][~lab], alpha=ALPHA, step=STEP) if labelled < questions else
             ppi.gold_only_mean({None: (d[s], f[s], f[s][:0])}, alpha=ALPHA, step=STEP))
        hits += claims("non_inferiority", margin, e.low, e.high)
    p = hits / sims
    mc = math.sqrt(max(p * (1 - p), 1e-12) / sims)
    out = {"judge": name, "rho": round(mo["rho"], 3), "questions": questions, "labelled": labelled,
           "target": target, "margin": round(margin, 4), "stated": round(stated, 4),
           "stated_assumed": round(assumed, 4), "simulated": round(p, 4),
           "mc_se": round(mc, 4), "within": abs(p - stated) <= 3 * mc + 0.01,
           "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out), file=sys.stderr, flush=True)  # progress
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sims", type=int, default=10_000, help="data sets per cell and target")
    args = ap.parse_args()
    sims = 200 if args.quick else args.sims
    sizes = SIZES[:3:2] if args.quick else SIZES
    judges = dict(list(JUDGES.items())[:2]) if args.quick else JUDGES
    rows = []
    for name, confusion in judges.items():
        for questions, labelled in sizes:
            for target in TARGETS:
                rows.append(cell(name, confusion, questions, labelled, target, sims, SEED + len(rows)))
    print(json.dumps({"alpha": ALPHA, "step": STEP, "true_difference": TRUE_DIFFERENCE, "sims": sims,
                      "all_within": all(r["within"] for r in rows), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
