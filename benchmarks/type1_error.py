"""Type-I error of the registered non-inferiority rule at the boundary, by sample size.

Per-question differences are -1, 0, +1 with probabilities 0.2, 0.7, 0.1: the true mean difference is -0.1,
exactly the margin, so every "non-inferior" (or "superior") is a false claim. The rate is computed exactly
rather than simulated: a data set's decision depends only on how many -1, 0 and +1 it holds, so every such
composition with probability above 1e-9 is decided once (the registered 10,000 resamples, seed 20261130,
one-sided alpha 0.025) and weighted by its multinomial probability; the neglected mass is printed. Rules:

* bootstrap: the percentile bootstrap bound alone;
* bootstrap_and_t: the lower of that bound and the small-sample t bound (the registered default);
* "+ calibration": a claim is withdrawn when the decision's own calibration (its false-claim rate simulated at
  the boundary from the observed differences, 200 data sets) exceeds the ceiling 2 alpha.
The power columns decide data with no true difference (-1, 0, +1 with 0.15, 0.7, 0.15): the claim is true there.

    python benchmarks/type1_error.py             # n = 5, 12, 40, 150 (claims calibrated up to n = 40)
    python benchmarks/type1_error.py --quick     # n = 5, 12 with 2,000 resamples (CI: proves it runs)
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

from judge.numbers.stats.calibration import calibrate
from judge.numbers.stats.decision_rules.interval import claims
from judge.numbers.stats.paired import paired
from judge.numbers.stats.rule import Scale

RULES = ("bootstrap", "bootstrap_and_t")  # the bootstrap rules this benchmark measured (the score rule: type1_grid.py)
SCALE = Scale(0, 2)  # differences -1 / 0 / +1 of the 0-2 rubric

P = {-1: 0.2, 0: 0.7, 1: 0.1}  # mean -0.1: the boundary
POWER_P = {-1: 0.15, 0: 0.7, 1: 0.15}  # mean 0: no difference, the claim is true (its rate is the power)
ALPHA, MARGIN, SEED, CEILING = 0.025, 0.1, 20261130, 0.05


def compositions(n: int, floor: float = 1e-9, p: dict[int, float] = P):
    """(differences, probability) for every composition of n draws with probability above `floor`."""
    for down in range(n + 1):
        for up in range(n + 1 - down):
            ties = n - down - up
            logp = (math.lgamma(n + 1) - math.lgamma(down + 1) - math.lgamma(up + 1) - math.lgamma(ties + 1)
                    + down * math.log(p[-1]) + ties * math.log(p[0]) + up * math.log(p[1]))
            if math.exp(logp) > floor:
                yield [-1] * down + [0] * ties + [1] * up, math.exp(logp)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, nargs="*", help="sample sizes (default 5 12 40 150)")
    ap.add_argument("--calibrate-up-to", type=int, default=40,
                    help="largest n whose claims are also calibrated (calibration can only withdraw claims, so "
                         "above it the rule's own rate bounds the calibrated one)")
    args = ap.parse_args()
    ns, resamples, sims = ((5, 12), 2000, 100) if args.quick else (tuple(args.n or (5, 12, 40, 150)), 10_000, 200)
    table = []
    for n in ns:
        t0 = time.perf_counter()
        rate: dict[str, float | None] = {r: 0.0 for r in RULES}
        for r in RULES:
            rate[f"{r} + calibration"] = 0.0 if n <= args.calibrate_up_to else None
        mass = 0.0
        for d, prob in compositions(n):
            mass += prob
            a = [0] * n
            p = paired(a, d, resamples=resamples, seed=SEED, alpha=ALPHA, margin=MARGIN, rule="bootstrap_and_t",
                             scale=SCALE)
            bounds = {"bootstrap": p.ci_low, "bootstrap_and_t": p.bound}  # the same resamples decide both rules
            for rule, bound in bounds.items():
                if not claims("non_inferiority", MARGIN, bound, p.upper):
                    continue
                rate[rule] += prob
                if rate[f"{rule} + calibration"] is None:
                    continue
                cal = calibrate(a, d, "non_inferiority", MARGIN, alpha=ALPHA, method="percentile",
                                      resamples=resamples, rule=rule, sims=sims, seed=SEED, ceiling=CEILING,
                                      scale=SCALE)
                if cal.rate <= cal.ceiling:
                    rate[f"{rule} + calibration"] += prob
        power = {r: 0.0 for r in RULES}
        for d, prob in compositions(n, p=POWER_P):
            p = paired([0] * n, d, resamples=resamples, seed=SEED, alpha=ALPHA, margin=MARGIN,
                             rule="bootstrap_and_t",
                             scale=SCALE)
            for rule, bound in (("bootstrap", p.ci_low), ("bootstrap_and_t", p.bound)):
                power[rule] += prob * claims("non_inferiority", MARGIN, bound, p.upper)
        table.append({"n": n, **{k: None if v is None else round(v, 4) for k, v in rate.items()},
                      **{f"power {r}": round(v, 4) for r, v in power.items()},
                      "neglected_mass": f"{max(0.0, 1 - mass):.1e}", "seconds": round(time.perf_counter() - t0, 1)})
        print(json.dumps(table[-1]), file=sys.stderr, flush=True)  # progress
    print(json.dumps({"alpha": ALPHA, "goal_n_ge_12": 1.2 * ALPHA, "resamples": resamples,
                      "calibration_sims": sims, "rows": table}, indent=1))


if __name__ == "__main__":
    main()
