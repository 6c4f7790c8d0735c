"""The judge-against-gold intervals, simulated: does each keep its promise on every rubric scale and when the
answers to a question share the judge's error? Every decision is made by the public functions
(judge.numbers.stats.ppi.ppi_mean, judge.numbers.stats.decision_rules.interval.claims,
judge.numbers.stats.judge_error.agreement_intervals).

Part 1, the gold-corrected (PPI++) interval at the boundary, on 0-1, 0-2 and 0-10 rubrics:

* N questions, arms a and b, one answer each. The gold scores of a question come as a pair from a fixed table on
  the rubric's points (0-2: the table of benchmarks/judge_error.py, ties on 67 %; 0-10: the same table on the
  points 0/5/10; 0-1: [[0.20, 0.10], [0.15, 0.55]], ties on 75 %), whose true mean difference b - a is exactly
  -margin, the margin 5 % of the range (0.05, 0.1, 0.5). Every "non-inferior" is false.
* A biased judge: it reads each answer through a confusion matrix shared by both arms (82 % exact on three points,
  88 % on two) and, on a random half of the questions, raises b's score by one point of the rubric's grid with the
  probability that makes the expected raise there 15 % of the range.
* Gold on a simple random sample of n of the N questions. One-sided alpha = 0.025.
* Rules: rule "guarded" with the guard anchored to the rubric (step = half the range, stats.t_bounds.guard_step)
  and, for comparison, with the fixed one-point step it had before. Goal: at most 1.2 alpha = 0.030 in every cell.

Part 2, the agreement intervals (exact agreement, quadratic kappa, ordinal alpha) when the judge's error is shared
by the answers of a question:

* G questions, m answers each (both arms, K samples: m = 4 is 2 arms x K = 2). A question has a level (0, 1, 2
  with probabilities 0.3, 0.4, 0.3); each answer's gold is the level moved by -1/0/+1 (0.2, 0.6, 0.2), clipped to
  0-2. The judge's error is the question's: -1/0/+1 (0.2, 0.6, 0.2) for every answer to it, plus a point either
  way on 10 % of answers, clipped. m = 1 (one answer per question) is the independent contrast.
* The true values: each statistic of the population table (4,000,000 questions of the same process).
* Each data set's 95 % intervals (2,000 resamples, as numbers.json's), on the same data sets, by rule
  (``--agreement-rules``): "question", BCa over whole questions (the current rule); "question percentile", the
  percentile interval over questions (the rule before); "answer", the percentile interval over answers (the rule
  before that); "question studentized", a contrast computed here for kappa only: the bootstrap-t over questions,
  each resample's standard error the jackknife over its drawn questions. Coverage: the share of data sets whose
  interval contains the true value (goal: at least 0.93 resampling questions), and the share whose lower end lies
  above it (``low_above_truth``: where a ``min_gold_agreement`` floor is passed too easily; 0.025 promised).

    python benchmarks/gold_intervals.py           # 2,000 data sets per cell (part 1), 400 (part 2)
    python benchmarks/gold_intervals.py --quick   # 40 and 10 (CI: proves it runs)
    python benchmarks/gold_intervals.py --rubric 0-1 --sims 10000   # part 1 on one rubric, more data sets
    python benchmarks/gold_intervals.py --agreement-cells 20x4,100x4 --agreement-sims 2000   # part 2 on two cells
    python benchmarks/gold_intervals.py --agreement-cells 20x4,100x4 --agreement-sims 2000 \
        --agreement-rules "question,question percentile"   # BCa against the percentile interval only
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from judge.numbers.stats import ppi
from judge.numbers.stats.agreement import kappa_from_tables, kappa_weights, ordinal_alpha_from_tables, unit_draws
from judge.numbers.stats.decision_rules.interval import claims
from judge.numbers.stats.judge_error import agreement_intervals
from judge.numbers.stats.rule import Scale
from judge.numbers.stats.t_bounds import guard_step

ALPHA, SEED, BIAS = 0.025, 20261204, 0.15
GOLD3 = np.array([[14, 4, 2], [6, 16, 6], [3, 12, 37]]) / 100  # rows gold a, columns gold b (point index)
GOLD2 = np.array([[0.20, 0.10], [0.15, 0.55]])
CONFUSION3 = np.array([[0.85, 0.13, 0.02], [0.10, 0.80, 0.10], [0.02, 0.13, 0.85]])
CONFUSION2 = np.array([[0.88, 0.12], [0.12, 0.88]])
RUBRICS = {"0-1": ((0, 1), GOLD2, CONFUSION2), "0-2": ((0, 1, 2), GOLD3, CONFUSION3),
           "0-10": ((0, 5, 10), GOLD3, CONFUSION3)}
CELLS = [(N, n) for N in (40, 100, 400) for n in (10, 20, 40, 80) if n < N]
AGREEMENT_CELLS = [(G, m) for G in (20, 50, 100) for m in (4, 2)] + [(100, 1)]


def rate(hits: list[bool]) -> dict[str, float]:
    p = float(np.mean(hits))
    return {"rate": round(p, 4), "mc_se": round(math.sqrt(p * (1 - p) / len(hits)), 4)}


def draw_comparison(points, gold, confusion, sims: int, N: int, n: int, rng: np.random.Generator):
    """(gold difference, judge difference, labelled mask), each (sims, N), in score units."""
    k = len(points)
    pair = rng.choice(k * k, size=(sims, N), p=gold.ravel())
    ga, gb = pair // k, pair % k
    cum = np.cumsum(confusion, axis=1)

    def read(g: np.ndarray) -> np.ndarray:
        u = rng.random(g.shape)
        return sum((u >= cum[g, c]).astype(int) for c in range(k - 1))

    ja, jb = read(ga), read(gb)
    below_top = float(gold.sum(0) @ confusion[:, :k - 1].sum(1))
    half = np.argsort(rng.random((sims, N)), axis=1) < N // 2
    jb = jb + (half & (jb < k - 1) & (rng.random((sims, N)) < BIAS * (k - 1) / below_top))
    value = np.array(points, dtype=float)
    mask = np.argsort(rng.random((sims, N)), axis=1) < n
    return value[gb] - value[ga], value[jb] - value[ja], mask


def corrected_cell(name: str, N: int, n: int, sims: int, seed: int) -> dict:
    points, gold, confusion = RUBRICS[name]
    scale = Scale(min(points), max(points))
    margin = 0.05 * scale.range
    d, f, labelled = draw_comparison(points, gold, confusion, sims, N, n, np.random.default_rng(seed))
    hits: dict[str, list[bool]] = {"anchored": [], "one_point": []}
    for s in range(sims):
        lab = labelled[s]
        for rule, step in (("anchored", guard_step(scale)), ("one_point", 1.0)):
            e = ppi.ppi_mean(d[s][lab], f[s][lab], f[s][~lab], alpha=ALPHA, step=step)
            hits[rule].append(claims("non_inferiority", margin, e.low, e.high))
    return {"rubric": name, "questions": N, "labelled": n, "margin": margin, "step": guard_step(scale), "sims": sims,
            "false_non_inferior": {k: rate(v) for k, v in hits.items()}}


def draw_answers(G: int, m: int, rng: np.random.Generator):
    """Gold and judge scores (G * m answers on 0-2) and each answer's question: the judge's error is the question's."""
    level = rng.choice(3, size=G, p=[0.3, 0.4, 0.3])
    gold = np.clip(np.repeat(level, m) + rng.choice([-1, 0, 1], size=G * m, p=[0.2, 0.6, 0.2]), 0, 2)
    shared = np.repeat(rng.choice([-1, 0, 1], size=G, p=[0.2, 0.6, 0.2]), m)
    own = rng.choice([-1, 0, 1], size=G * m, p=[0.05, 0.9, 0.05])
    return gold, np.clip(gold + shared + own, 0, 2), np.repeat(np.arange(G), m)


def population(m: int, rng: np.random.Generator) -> dict[str, float]:
    """Kappa, alpha and exact agreement of the process's population table (4,000,000 questions)."""
    gold, judge, _ = draw_answers(4_000_000 // m, m, rng)
    table = np.bincount(gold * 3 + judge, minlength=9).reshape(1, 3, 3).astype(float)
    return {"kappa": float(kappa_from_tables(table, kappa_weights(3, "quadratic"))[0]),
            "alpha": float(ordinal_alpha_from_tables(table)[0]), "exact": float(np.trace(table[0]) / table.sum())}


RULES = {"question": ("question", "bca"), "question percentile": ("question", "percentile"),
         "answer": ("answer", "percentile"),  # the current rule, the one before it, and the one before that
         "question studentized": ("question", "studentized")}  # a contrast, computed here, kappa only


def agreement_cell(G: int, m: int, sims: int, resamples: int, seed: int, truth: dict[str, float],
                   rules: list[str]) -> dict:
    rng = np.random.default_rng(seed)
    covered: dict[str, dict[str, list[bool]]] = {rule: {k: [] for k in truth} for rule in rules}
    above: dict[str, dict[str, list[bool]]] = {rule: {k: [] for k in truth} for rule in rules}
    for s in range(sims):
        gold, judge, question = draw_answers(G, m, rng)
        for rule in rules:
            unit, interval = RULES[rule]
            if interval == "studentized":
                low, high = _studentized_kappa(gold, judge, question, resamples, SEED + s)
                covered[rule]["kappa"].append(low <= truth["kappa"] <= high)
                above[rule]["kappa"].append(low > truth["kappa"])
                continue
            k, a, e = agreement_intervals(judge.tolist(), gold.tolist(), (0, 1, 2), alpha=ALPHA, resamples=resamples,
                                          seed=SEED + s, clusters=question.tolist(), resampling=unit,
                                          interval=interval)
            if unit == "answer":  # the rule before gave exact agreement no interval: its own answer bootstrap here
                e = _answer_exact(gold, judge, resamples, SEED + s)
            for stat, (low, high) in (("kappa", k), ("alpha", a), ("exact", e)):
                covered[rule][stat].append(low is not None and low <= truth[stat] <= high)
                above[rule][stat].append(low is not None and low > truth[stat])
    return {"questions": G, "answers_per_question": m, "sims": sims,
            "coverage": {rule: {stat: rate(v) for stat, v in c.items() if v} for rule, c in covered.items()},
            "low_above_truth": {rule: {stat: rate(v) for stat, v in c.items() if v} for rule, c in above.items()}}


def _jackknife_kappa(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kappa's jackknife over the last-but-one axis of ``tables`` (..., G, 9): its standard error and its values."""
    g = tables.shape[-2]
    loo = tables.sum(-2, keepdims=True) - tables
    kap = kappa_from_tables(loo.reshape(-1, 3, 3), kappa_weights(3, "quadratic")).reshape(loo.shape[:-1])
    with np.errstate(all="ignore"):
        dev = kap - np.nanmean(kap, -1, keepdims=True)
    return np.sqrt((g - 1) / g * np.nansum(dev ** 2, -1)), kap


def _studentized_kappa(gold: np.ndarray, judge: np.ndarray, question: np.ndarray, resamples: int,
                       seed: int) -> tuple[float, float]:
    """Bootstrap-t of kappa over questions (the contrast to BCa): on the same draws, t* = (kappa* - kappa) / se*, se*
    the jackknife over the resample's drawn questions; kappa -/+ the t* quantiles times the data's jackknife se."""
    g = int(question.max()) + 1
    tables = np.zeros((g, 9))
    np.add.at(tables, (question, gold * 3 + judge), 1)
    w = kappa_weights(3, "quadratic")
    theta = float(kappa_from_tables(tables.sum(0).reshape(1, 3, 3), w)[0])
    se, _ = _jackknife_kappa(tables)
    drawn = tables[next(unit_draws(g, resamples, seed, block=resamples))]
    boots = kappa_from_tables(drawn.sum(1).reshape(-1, 3, 3), w)
    ses, _ = _jackknife_kappa(drawn)
    ok = np.isfinite(boots) & (ses > 0)
    t_lo, t_hi = np.percentile((boots[ok] - theta) / ses[ok], [100 * ALPHA, 100 * (1 - ALPHA)])
    return float(theta - t_hi * se), float(theta - t_lo * se)


def _answer_exact(gold: np.ndarray, judge: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    rng, n = np.random.default_rng(seed), gold.size
    same = (gold == judge).astype(float)
    boots = [same[rng.integers(0, n, n)].mean() for _ in range(resamples)]
    lo, hi = np.percentile(boots, [100 * ALPHA, 100 * (1 - ALPHA)])
    return float(lo), float(hi)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sims", type=int, default=2_000, help="data sets per cell of part 1")
    ap.add_argument("--agreement-sims", type=int, default=400, help="data sets per cell of part 2")
    ap.add_argument("--resamples", type=int, default=2_000, help="bootstrap resamples per agreement interval")
    ap.add_argument("--rubric", choices=list(RUBRICS), help="part 1 on this rubric only, and no part 2")
    ap.add_argument("--agreement-cells", help="part 2 only, on these cells (questions x answers each: 20x4,100x4)")
    ap.add_argument("--agreement-rules", default="question,question percentile,answer",
                    help=f"part 2's interval rules, of {', '.join(RULES)} (the same data sets whichever are run)")
    args = ap.parse_args()
    cells = (AGREEMENT_CELLS if args.agreement_cells is None else
             [tuple(int(x) for x in c.split("x")) for c in args.agreement_cells.split(",")])
    sims, agreement_sims = (40, 10) if args.quick else (args.sims, args.agreement_sims)
    t0 = time.perf_counter()
    corrected = []
    for i, name in enumerate(RUBRICS):
        if args.rubric not in (None, name) or args.agreement_cells:
            continue
        for j, (N, n) in enumerate(CELLS):
            corrected.append(corrected_cell(name, N, n, sims, SEED + 100 * i + j))
            print(json.dumps(corrected[-1]), file=sys.stderr, flush=True)
    per_question = [] if args.rubric else sorted({m for _, m in cells})
    truths = {m: population(m, np.random.default_rng(SEED + m)) for m in per_question}
    agreement = []
    for G, m in cells if args.rubric is None else []:
        j = AGREEMENT_CELLS.index((G, m)) if (G, m) in AGREEMENT_CELLS else 100 * G + m
        agreement.append(agreement_cell(G, m, agreement_sims, args.resamples, SEED + 1000 + j,
                                        truths[m], args.agreement_rules.split(",")) |
                         {"truth": {k: round(v, 4) for k, v in truths[m].items()}})
        print(json.dumps(agreement[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"alpha": ALPHA, "goal_false_claims": 1.2 * ALPHA, "goal_coverage": 0.93,
                      "corrected": corrected, "agreement": agreement,
                      "seconds": round(time.perf_counter() - t0, 1)}, indent=1))


if __name__ == "__main__":
    main()
