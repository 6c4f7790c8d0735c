"""`judge verify`'s own recomputation of numbers.json's `stability`, from blinding.jsonl and the verdicts read by hand,
written from the definitions (docs/statistics-reference.md, "Stability across samples"), importing nothing of the
main path (judge.numbers.stats.stability, judge.numbers.stability).

For each (arm, quant), over the questions whose K registered samples the primary judge all scored, with t the
registered pass score (the rubric's highest score when none is registered):
  pass^k = share of questions whose lowest sample score is >= t; pass@k = share whose highest is >= t;
  pass rate = mean over questions of (samples >= t) / K;
  unanimous = share whose lowest and highest sample scores are equal (K >= 2);
  agreement = mean over questions of sum over score values of C(n_v, 2) / C(K, 2), n_v its samples scoring v (K >= 2).
A question with a sample lacking a score is counted as incomplete, never as a pass or a fail. Each interval is the
95% percentile bootstrap of the mean, on resamples drawn again by the documented scheme (bootstrap.draw: counts per
distinct unit from the registered seed, whole clusters when the questions have them), each resample's mean taken by
bootstrap.check_paired's own loop, exactly.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

from core import jsonl

from . import bootstrap, decisions


def _interval(values: list[Fraction], ids: list[str], clusters: dict[str, str | None], resamples: int,
              seed: int) -> dict[str, float]:
    chk = bootstrap.mean_interval(values, bootstrap.unit_labels(ids, clusters), resamples, seed)
    return {"estimate": chk["mean_b"], "ci_low": chk["ci_low"], "ci_high": chk["ci_high"]}


def recompute(run: dict, run_dir: Path, exp, questions: dict[str, list[str]], clusters: dict[str, str | None],
              verdicts: list[dict]) -> dict[str, Any]:
    """numbers.json's `stability` as this path computes it (`questions`: the run's question ids in registered
    order; `verdicts`: each verdict's current record, read by hand)."""
    keys = {r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
    judge = run["judge"]["primary"]
    got: dict[tuple, dict[int, int]] = defaultdict(dict)
    for j in verdicts:
        kind = j.get("kind") or ("pairwise" if str(j["label"]).startswith("P") else "single")
        if j["judge"] == judge and kind == "single" and j["status"] == "scored" and j["label"] in keys:
            k = keys[j["label"]]
            got[(k["arm"], k["quant"], k["question_id"])][k["sample"]] = j["score"]
    an = exp.analysis
    t = an.pass_score if an.pass_score is not None else max(decisions.rubric_scale(exp))
    cells = []
    for arm in run["arms"]:
        spec = exp.arm(arm)
        K = spec.samples
        for quant in spec.quants:
            rows = {}
            for q in questions:
                s = got.get((arm, quant, q), {})
                if all(i in s for i in range(K)):
                    rows[q] = [s[i] for i in range(K)]
            ids = list(rows)
            per = {
                "pass_hat_k": [Fraction(1 if min(v) >= t else 0) for v in rows.values()],
                "pass_at_k": [Fraction(1 if max(v) >= t else 0) for v in rows.values()],
                "pass_rate": [Fraction(len([x for x in v if x >= t]), K) for v in rows.values()],
                "unanimous": [Fraction(1 if min(v) == max(v) else 0) for v in rows.values()] if K > 1 else [],
                "agreement": [Fraction(sum(math.comb(n, 2) for n in Counter(v).values()), math.comb(K, 2))
                              for v in rows.values()] if K > 1 else [],
            }
            grouped = any(clusters.get(q) for q in ids)
            cells.append({"arm": arm, "quant": quant, "k": K, "questions": len(ids),
                          "incomplete": len(questions) - len(ids),
                          "resampling": "clusters" if grouped else "questions",
                          "units": len({clusters[q] if clusters.get(q) else ("q", q) for q in ids}),
                          **{name: _interval(v, ids, clusters, an.resamples, an.seed) if v else None
                             for name, v in per.items()}})
    return {"pass_score": t, "confidence": 0.95, "method": "percentile", "resamples": an.resamples, "seed": an.seed,
            "cells": cells}
