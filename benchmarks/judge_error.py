"""Does prediction-powered inference keep its promise against a biased judge? Simulated at the boundary.

Data (one data set = one registered comparison; everything seeded and vectorised with numpy):

* 200 questions, arms a and b, one answer each, scored on the 0-2 rubric scale. The gold scores of a question
  are drawn as a pair from the joint table GOLD (rows gold a, columns gold b): ties on 67 % of questions, means
  1.32 and 1.22, so the true mean difference b - a is exactly -0.10 = -margin. Every "non-inferior" is false.
* The judge reads each answer through the confusion matrix of its accuracy (rows gold, columns judge; the same
  for both arms: a fair, noisy judge). A fair judge still misreads toward the middle of the scale, which
  shrinks differences (its implied mean difference is printed as ``judge_mean_difference``).
* The biased judge also favours b: on a random half of the questions (exactly 100) it raises b's score by one
  point with the probability that makes the expected raise exactly +0.3 (a score already at 2 cannot rise),
  so its mean difference is that of the fair judge + 0.15.
* Gold on 40 of the 200 questions, a simple random sample (design "random_sample").

Rules, all one-sided alpha = 0.025 against margin 0.10 (the demo's registration): judge only (paired's
registered ``bootstrap_and_t`` on the first ``--registered`` data sets; the like-for-like guarded t of
judge.numbers.stats.ppi on all), PPI++ with the small-sample guard (judge.numbers.stats.ppi's default) and with ppi_py's
normal interval, and the 40 gold labels alone. Reported: each rule's false "non-inferior" rate with its Monte Carlo SE
(goal for PPI: at most 1.2 alpha = 0.030), the mean width of each two-sided 95 % interval, and PPI's mean estimated SE
over the spread of its estimates across data sets (``ppi_se_over_spread``: 1 when the SE is right). Then the
biased judge again with 10, 20, 40 and 80 labelled questions (``by_labelled``): the rules on small gold samples.

    python benchmarks/judge_error.py             # 20,000 data sets per judge, 5,000 per sweep size (~3 minutes)
    python benchmarks/judge_error.py --quick     # 300 and 100 data sets (CI: proves it runs)
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
from judge.numbers.stats.paired import paired
from judge.numbers.stats.rule import Scale
from judge.numbers.stats.t_bounds import guard_step

ALPHA, MARGIN, SEED = 0.025, 0.10, 20261130
N, LABELLED, BIAS = 200, 40, 0.3
STEP = guard_step(Scale(0, 2))  # the guard's pseudo-residual: half the 0-2 range, one point
SIZES = (10, 20, 40, 80)  # labelled questions in the small-sample sweep (biased judge)
GOLD = np.array([[14, 4, 2],  # gold a = 0; columns gold b = 0, 1, 2 (per cent of questions)
                 [6, 16, 6],  # gold a = 1
                 [3, 12, 37]]) / 100  # gold a = 2
JUDGES = {  # rows gold 0, 1, 2; columns judge 0, 1, 2
    "fair (82 % exact)": np.array([[0.85, 0.13, 0.02], [0.10, 0.80, 0.10], [0.02, 0.13, 0.85]]),
    "fair (95 % exact)": np.array([[0.96, 0.04, 0.00], [0.025, 0.95, 0.025], [0.00, 0.04, 0.96]]),
}


def draw(sims: int, confusion: np.ndarray, biased: bool, rng: np.random.Generator, labelled: int = LABELLED):
    """(gold difference, judge difference, labelled mask), each (sims, N)."""
    pair = rng.choice(9, size=(sims, N), p=GOLD.ravel())
    gold_a, gold_b = pair // 3, pair % 3
    cum = np.cumsum(confusion, axis=1)

    def read(g: np.ndarray) -> np.ndarray:
        u = rng.random(g.shape)
        return (u >= cum[g, 0]).astype(int) + (u >= cum[g, 1]).astype(int)

    judge_a, judge_b = read(gold_a), read(gold_b)
    if biased:
        below_top = float(GOLD.sum(0) @ confusion[:, :2].sum(1))  # P(the fair judge scores b's answer < 2)
        half = np.argsort(rng.random((sims, N)), axis=1) < N // 2  # a random half of the questions
        judge_b = judge_b + (half & (judge_b < 2) & (rng.random((sims, N)) < BIAS / below_top))
    mask = np.argsort(rng.random((sims, N)), axis=1) < labelled
    return (gold_b - gold_a).astype(float), (judge_b - judge_a).astype(float), mask


def implied_difference(confusion: np.ndarray, biased: bool) -> float:
    """The judge's expected mean difference b - a (exact, from the tables)."""
    values = np.arange(3)
    mean_a = GOLD.sum(1) @ confusion @ values
    mean_b = GOLD.sum(0) @ confusion @ values
    return float(mean_b - mean_a + (BIAS / 2 if biased else 0.0))


def rate(claims: list[bool]) -> dict[str, float]:
    p = float(np.mean(claims))
    return {"rate": round(p, 4), "mc_se": round(math.sqrt(p * (1 - p) / len(claims)), 4)}


def scenario(name: str, confusion: np.ndarray, biased: bool, sims: int, registered: int, resamples: int,
             seed: int, labelled_n: int = LABELLED) -> dict:
    t0 = time.perf_counter()
    d, f, labelled = draw(sims, confusion, biased, np.random.default_rng(seed), labelled_n)
    claim: dict[str, list[bool]] = {k: [] for k in ("judge_only_registered", "judge_only", "ppi", "ppi_normal",
                                                    "gold_only")}
    width: dict[str, list[float]] = {k: [] for k in ("judge_only", "ppi", "ppi_normal", "gold_only")}
    lams, estimates = [], []
    ses: dict[str, list[float]] = {"ppi": [], "ppi_normal": []}
    for s in range(sims):
        lab = labelled[s]
        est = {
            "judge_only": ppi.judge_only_mean(f[s], alpha=ALPHA, step=STEP),
            "ppi": ppi.ppi_mean(d[s][lab], f[s][lab], f[s][~lab], alpha=ALPHA, step=STEP),
            "ppi_normal": ppi.ppi_mean(d[s][lab], f[s][lab], f[s][~lab], alpha=ALPHA, rule="normal"),
            "gold_only": ppi.gold_only_mean({None: (d[s][lab], f[s][lab], f[s][~lab])}, alpha=ALPHA, step=STEP),
        }
        for k, e in est.items():
            claim[k].append(claims("non_inferiority", MARGIN, e.low, e.high))
            width[k].append(e.width)
        lams.append(est["ppi"].lam)
        estimates.append(est["ppi"].estimate)
        for k in ses:
            ses[k].append(est[k].se)
        if s < registered:
            p = paired([0] * N, f[s].astype(int).tolist(), resamples=resamples, seed=SEED, alpha=ALPHA,
                             margin=MARGIN, rule="bootstrap_and_t", scale=Scale(0, 2))
            claim["judge_only_registered"].append(claims("non_inferiority", MARGIN, p.bound, p.upper))
    out = {"judge": name, "biased": biased, "labelled": labelled_n,
           "judge_mean_difference": round(implied_difference(confusion, biased), 4), "sims": sims,
           "registered_sims": min(registered, sims),
           "false_non_inferior": {k: rate(v) for k, v in claim.items() if v},
           "mean_width_95": {k: round(float(np.mean(v)), 4) for k, v in width.items()},
           "width_ppi_over_gold_only": round(float(np.mean(width["ppi"]) / np.mean(width["gold_only"])), 3),
           "width_ppi_over_judge_only": round(float(np.mean(width["ppi"]) / np.mean(width["judge_only"])), 3),
           "mean_lambda": round(float(np.mean(lams)), 3),
           "ppi_se_over_spread": {k: round(float(np.mean(v) / np.std(estimates, ddof=1)), 3) for k, v in ses.items()},
           "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out), file=sys.stderr, flush=True)  # progress
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sims", type=int, default=20_000, help="data sets per judge")
    ap.add_argument("--registered", type=int, default=2_000,
                    help="data sets also decided by paired's registered rule (10,000 resamples each)")
    ap.add_argument("--sweep-sims", type=int, default=5_000, help="data sets per size of the labelled sample")
    args = ap.parse_args()
    sims, registered, resamples, sweep = ((300, 30, 2_000, 100) if args.quick
                                          else (args.sims, args.registered, 10_000, args.sweep_sims))
    rows = []
    for i, (name, confusion) in enumerate(JUDGES.items()):
        for biased in (True, False):
            if biased and i > 0:
                continue  # the bias scenario once, with the noisier judge
            rows.append(scenario(name, confusion, biased, sims, registered, resamples, SEED + len(rows)))
    noisy = next(iter(JUDGES))
    by_size = [scenario(noisy, JUDGES[noisy], True, sweep, 0, resamples, SEED + 100 + k, k) for k in SIZES]
    print(json.dumps({"alpha": ALPHA, "margin": MARGIN, "true_difference": -MARGIN, "questions": N,
                      "labelled": LABELLED, "bias": BIAS, "goal_ppi_rate": 1.2 * ALPHA, "rows": rows,
                      "by_labelled": by_size}, indent=1))


if __name__ == "__main__":
    main()
