"""`judge verify`'s second path through the judge's error (numbers.json's ``judge_validity`` and each comparison's
``judge_error``): plain loops over the raw verdicts and the run's gold scores, sharing no statistics with the main
path (judge.validity, judge.stats).

Recomputed: per judge the gold scores compared, exact agreement, quadratic-weighted kappa, Krippendorff's ordinal
alpha, the confusion matrix, the mean offset judge - gold overall and per arm, and per hypothesis the questions
and mean of the differential offset; per comparison the design, the PPI++ estimate (rule "guarded"), its standard
error, interval and tuned lambda per stratum, the gold-only estimate and the corrected verdict. Not recomputed: the
bootstrap intervals of agreement and offsets (resampling is the main path's; verify re-runs it). The gold scores
themselves are read by judge.gold, the one reader of gold (the program is run from its sealed source).
"""
from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any

from scipy import stats as sps

from . import decisions

STEP = 1.0  # one score point: the guarded rule's pseudo-residual


def alpha_ordinal(a: list[int], b: list[int]) -> float | None:
    """Krippendorff's alpha (ordinal metric) of two raters rating every unit."""
    return decisions.alpha_ordinal([list(a), list(b)])


def _mean(xs) -> float:
    return math.fsum(xs) / len(xs)


def _ss(xs: list[float]) -> float:
    m = _mean(xs)
    return math.fsum((x - m) ** 2 for x in xs)


def _lam(d: list[float], fl: list[float], fu: list[float]) -> float:
    n, m = len(d), len(fu)
    md, mf = _mean(d), _mean(fl)
    cov = math.fsum((x - md) * (y - mf) for x, y in zip(d, fl, strict=True)) / n
    both = fl + fu
    var = _ss(both) / (len(both) - 1)
    return 0.0 if var == 0 else min(1.0, max(0.0, cov / ((1 + n / m) * var)))


def guarded(strata: dict[Any, tuple[list[float], list[float], list[float]]], alpha: float,
            gold_only: bool) -> dict[str, Any]:
    """Stratified PPI++ (or the gold alone) with the guarded interval: ddof-1 spreads, two pseudo-residuals one
    score point either side of the rectifier's mean, t with Welch-Satterthwaite degrees of freedom."""
    total = sum(len(d) + len(fu) for d, _, fu in strata.values())
    theta, pieces, out = 0.0, [], []
    for name, (d, fl, fu) in strata.items():
        n, m = len(d), len(fu)
        w = (n + m) / total
        lam = None if m == 0 else 0.0 if gold_only else _lam(d, fl, fu)
        r = d if not lam else [x - lam * y for x, y in zip(d, fl, strict=True)]
        est = _mean(r) + (lam * _mean(fu) if lam else 0.0)
        v_rect = (_ss(r) + 2 * STEP * STEP) / (n + 1)
        pieces.append((w * w * v_rect / n, n + 1.0))
        if lam:
            pieces.append((w * w * lam * lam * _ss(fl + fu) / (n + m - 1) / m, n + m - 1.0))
        theta += w * est
        out.append({"id": "(rest)" if name is None else name, "questions": n + m, "labelled": n, "estimate": est,
                    "lam": lam})
    var = math.fsum(v for v, _ in pieces if v > 0)
    df = var * var / math.fsum(v * v / k for v, k in pieces if v > 0)
    se = math.sqrt(var)
    crit = float(sps.t.ppf(1 - alpha, df))
    return {"estimate": theta, "se": se, "df": df, "low": theta - crit * se, "high": theta + crit * se,
            "questions": total, "labelled": sum(len(d) for d, _, _ in strata.values()), "strata": out}


def verdict(kind: str, margin: float, low: float, high: float) -> str:
    if kind == "non_inferiority":
        return "superior" if low > 0 else "non-inferior" if low > -margin else "not shown"
    if kind == "superiority":
        return "superior" if low > 0 else "not shown"
    if -margin < low and high < margin:
        return "equivalent"
    return "not equivalent" if low >= margin or high <= -margin else "inconclusive"


def recompute(run: dict, exp, gold, keys: dict[str, dict], verdicts: list[dict],
              questions: dict[str, list[str]], alphas: dict[str, float]) -> dict[str, Any]:
    """The recomputed fields, shaped as numbers.json holds them (for verify's diff). `keys`: blinding.jsonl's
    records by label; `verdicts`: each verdict's current record; `questions`: the run's question ids -> tags;
    `alphas`: the level the family tests each hypothesis at (verify recomputes the family by its own path)."""
    scored = [s for s in gold.scores if s.status == "scored"]
    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    scale = list(gold.scale)
    judges = []
    by_cell: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for k in keys.values():
        by_cell[(k["arm"], k["quant"], k["question_id"])].append(k["label"])
    for name in run["judge"].get("panel", [run["judge"]["primary"]]):
        mine = {j["label"]: j["score"] for j in verdicts if j["judge"] == name and j.get("status") == "scored"
                and j["label"] in keys and (j.get("kind") or "single") == "single"}
        rows = [(s, mine[s.label]) for s in scored if s.label in mine]
        entry: dict[str, Any] = {"id": name, "gold_scores": len(rows)}
        if rows:
            g, j = [s.score for s, _ in rows], [x for _, x in rows]
            confusion = [[sum(1 for x, y in zip(g, j, strict=True) if (x, y) == (a, b)) for b in scale] for a in scale]
            per_arm = []
            for arm in sorted({s.arm for s, _ in rows}):
                diffs = [x - s.score for s, x in rows if s.arm == arm]
                per_arm.append({"id": arm, "offset": {"mean": _mean(diffs)} if len(diffs) > 1 else None})
            exact = sum(x == y for x, y in zip(g, j, strict=True)) / len(g)
            entry["agreement"] = {"answers": len(rows), "exact": exact, "kappa": decisions.kappa_quadratic(g, j, scale),
                                  "krippendorff_alpha": alpha_ordinal(g, j), "confusion": confusion,
                                  "offset": {"mean": _mean([y - x for x, y in zip(g, j, strict=True)])}
                                  if len(g) > 1 else None, "per_arm": per_arm}
            golden: dict[tuple, list[int]] = defaultdict(list)
            for s, _ in rows:
                golden[(s.arm, s.quant, s.question_id)].append(s.score)
            have = {s.label for s, _ in rows}
            pairs = [_pair(h, mine, golden, have, by_cell, questions) for h in hyps]
            entry["pairs"] = pairs
        judges.append(entry)
    comparisons = [{"id": h.id, "judge_error": _correction(h, run, gold, scored, keys, by_cell, verdicts, questions,
                                                                alphas.get(h.id) or h.alpha)}
                   for h in hyps]
    return {"judge_validity": {"judges": judges}, "comparisons": comparisons}


def _mean_of(values: list[int]) -> Fraction:
    return Fraction(sum(values), len(values))


def _whole(h, q: str, have: set[str], by_cell) -> bool:
    """Every answer of both arms to question q (at the hypothesis's quant) is in ``have``."""
    return all(by_cell.get((arm, h.quant, q)) and all(lab in have for lab in by_cell[(arm, h.quant, q)])
               for arm in (h.a, h.b))


def _pair(h, mine: dict[str, int], golden, have: set[str], by_cell, questions) -> dict[str, Any]:
    ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and _whole(h, q, have, by_cell)]
    diffs = []
    for q in ids:
        judged = {arm: _mean_of([mine[lab] for lab in by_cell[(arm, h.quant, q)]]) for arm in (h.a, h.b)}
        diffs.append((judged[h.b] - _mean_of(golden[(h.b, h.quant, q)]))
                     - (judged[h.a] - _mean_of(golden[(h.a, h.quant, q)])))
    return {"id": h.id, "questions": len(ids),
            "offset_difference": {"mean": float(sum(diffs) / len(diffs))} if len(ids) > 1 else None}


def _correction(h, run: dict, gold, scored, keys, by_cell, verdicts, questions, alpha: float) -> dict[str, Any]:
    primary = run["judge"]["primary"]
    per: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in verdicts:
        if j["judge"] == primary and j.get("status") == "scored" and (j.get("kind") or "single") == "single" \
                and j["label"] in keys:
            k = keys[j["label"]]
            per[(k["arm"], k["quant"])][k["question_id"]].append(j["score"])
    a, b = per[(h.a, h.quant)], per[(h.b, h.quant)]
    ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a and q in b]
    if len(ids) < 2:
        return {}
    usable = [s for s in scored if s.design != "convenience"]
    have = {s.label for s in usable}
    values: dict[tuple, list[int]] = defaultdict(list)
    designs_of: dict[tuple, set[str]] = defaultdict(set)
    for s in usable:
        values[(s.arm, s.quant, s.question_id)].append(s.score)
        designs_of[(s.arm, s.quant, s.question_id)].add(s.design)
    complete = [t.name for t in gold.strata if t.complete]
    groups: dict[Any, list[tuple[float, float | None]]] = defaultdict(list)
    designs: set[str] = set()
    for q in ids:
        f = float(Fraction(sum(b[q]), len(b[q])) - Fraction(sum(a[q]), len(a[q])))
        g = None
        if _whole(h, q, have, by_cell):
            gb, ga = (Fraction(sum(values[(arm, h.quant, q)]), len(values[(arm, h.quant, q)])) for arm in (h.b, h.a))
            g = float(gb - ga)
            designs |= designs_of[(h.a, h.quant, q)] | designs_of[(h.b, h.quant, q)]
        groups[next((t for t in questions[q] if t in complete), None)].append((f, g))
    if not designs:
        return {"design": "convenience" if any(s.design == "convenience" and s.question_id in ids for s in scored)
                else None, "ppi": None}
    design = "random_sample" if "random_sample" in designs else "complete_strata"
    split = {}
    for name, rows in groups.items():
        labelled = [(f, g) for f, g in rows if g is not None]
        if not labelled or (len(labelled) < len(rows) and (design == "complete_strata" or len(labelled) < 2)):
            return {"design": design, "ppi": None}
        split[name] = ([g for _, g in labelled], [f for f, _ in labelled], [f for f, g in rows if g is None])
    p = guarded(split, alpha, gold_only=False)
    return {"design": design, "ppi": p, "gold_only": guarded(split, alpha, gold_only=True),
            "verdict": verdict(h.kind, h.margin, p["low"], p["high"])}
