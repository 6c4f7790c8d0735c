"""verify's second path, its decisions: numbers.json's cells, comparisons and subsets recomputed from the raw files by
its own code (the raw files read by hand in raw_files, the judges in judges, the judge against gold in judge_error,
the judge biases in biases).

Written from the definitions (docs/explanation; docs/statistics-reference.md; BENCHMARKS.md, type-I grid), never
from the main path: it imports nothing of judge/ (judge.numbers.stats, judge.numbers.analysis; tests/test_layers.py
follows its imports, lazy and indirect ones included), only lower layers: the decision vocabulary
(registration.vocabulary), the rubric's scale, core.jsonl's line reader. Plain Python, one question at a time (no tally
of distinct values), exact Fractions wherever a decision compares, and its own distributions:

* every cell's counts and means, each comparison and subset decided again (``independent``);
* one comparison (``comparison``): the bootstrap on resamples drawn again by the documented scheme (bootstrap), then
  the bounds of the rule the registration names, by that rule's twin (decision_rules: the score test of score_test,
  the guard of rule "bootstrap_and_t" by hand); its verdict by the same rule (``verdict``); Miller's cluster-robust
  SE.

judge.verify.checks compares what this path gives with numbers.json. The calibration (thousands of simulated decisions)
is recomputed by the main path's function on this path's inputs (judge.verify.checks passes it in), and the power
figures by the main path only.
"""
from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from core import jsonl
from registration.rubric import load_rubric, rubric_dir
from registration.vocabulary import KINDS, METHODS, PASS_HAT_K, PASS_HAT_K_SCALE

from . import contamination
from .bootstrap import check_paired, draw
from .decision_rules import DECISION_RULES
from .decision_rules.interface import PairedDifferences
from .raw_files import Final, kind_of


def comparison(a: Sequence, b: Sequence, *, alpha: float, margin: float, rule: str, method: str, resamples: int,
               seed: int, scale: tuple[int, int, int], labels: Sequence | None = None) -> dict[str, Any]:
    """One comparison (b vs a, per-question means as Fractions) as numbers.json records its result, recomputed:
    the bootstrap on resamples drawn again from the registered seed, then the registered rule's bounds (and the
    score tests or the guard it records). ``scale``: the rubric's lowest and highest score and the samples per
    question; ``labels``: each question's resampling unit, or None when no question has a cluster."""
    decides = DECISION_RULES.named(rule)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    lo, hi, samples = scale
    d = [y - x for x, y in zip(a, b, strict=True)]
    units: list[tuple] = [(x, 1) for x in d]
    if labels is not None:
        grouped: dict[Any, list] = {}
        for x, c in zip(d, labels, strict=True):
            g = grouped.setdefault(c, [Fraction(0), 0])
            g[0] += x
            g[1] += 1
        units = [(s, m) for s, m in grouped.values()]
    out = check_paired(a, b, draw(units, resamples, seed), method, alpha, margin=margin, clusters=labels)
    out["rule"], out["scale"], out["tests"] = rule, [lo, hi, samples], None
    out.update(decides.bounds(PairedDifferences(d=d, labels=labels, alpha=alpha, margin=margin, scale=scale,
                                                result=out)))
    return out


def verdict(kind: str, margin: float, result: dict[str, Any]) -> str:
    """A comparison's verdict by its rule, before the registered guards (the rule's twin: the score tests', or the
    interval's, ``bound`` and ``upper``, against the margin)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return DECISION_RULES.named(result["rule"]).verdict(kind, margin, result)


def clustered_se(d: list[float], labels: list[str]) -> float | None:
    """Miller's cluster-robust SE of the mean difference; None with one cluster, where it is undefined."""
    if len(set(labels)) < 2:
        return None
    mean = math.fsum(d) / len(d)
    sums: dict[str, float] = defaultdict(float)
    for x, c in zip(d, labels, strict=False):
        sums[c] += x - mean
    return math.sqrt(math.fsum(v * v for v in sums.values())) / len(d)


def rubric_scale(exp) -> tuple[int, ...]:
    """The registered rubric's scale points: the scores a verdict can take, from the registration, never from the
    numbers being checked."""
    return tuple(load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)).scale)


def pass_hat_k(keys: dict[str, dict], verdicts, judge: str, exp) -> dict[tuple, dict[str, Fraction]]:
    """(arm, quant) -> question -> 1 when the lowest of its K registered samples' scores is >= [analysis] pass_score,
    else 0: what a ``statistic = "pass^k"`` hypothesis is decided on. A question missing a sample's score is left
    out (docs/statistics-reference.md, "Stability across samples")."""
    if exp.analysis.pass_score is None:  # no hypothesis can be registered on pass^k
        return {}
    got: dict[tuple, dict[int, int]] = defaultdict(dict)
    for j in verdicts:
        if j["judge"] == judge and kind_of(j) == "single" and j["status"] == "scored" and j["label"] in keys:
            k = keys[j["label"]]
            got[(k["arm"], k["quant"], k["question_id"])][k["sample"]] = j["score"]
    out: dict[tuple, dict[str, Fraction]] = defaultdict(dict)
    for (arm, quant, q), s in got.items():
        if len([i for i in range(exp.arm(arm).samples) if i in s]) == exp.arm(arm).samples:
            out[(arm, quant)][q] = Fraction(1 if min(s.values()) >= exp.analysis.pass_score else 0)
    return out


def independent(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                clusters: dict[str, str | None], answer_rows: Final, verdicts: Final, calibration: Callable) -> dict:
    """Recompute the numeric heart of numbers.json with plain loops (no judge.numbers.analysis code). ``calibration`` is
    the one recomputation this path does not do by its own code (thousands of simulated decisions): judge.verify.checks
    passes the main path's judge.numbers.stats.calibration.calibrate, called here on this path's own inputs. The
    calibration is a diagnostic: it withdraws no claim."""
    keys = {r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
    judge = run["judge"]["primary"]
    per: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    status: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    kinds: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # (cell, "answer"/"judge") -> kind -> n
    for j in verdicts.last.values():
        if j["judge"] != judge or kind_of(j) != "single" or j["label"] not in keys:
            continue  # a label blinding.jsonl does not hold: the main path refuses the raw files, a finding
        k = keys[j["label"]]
        cell = (k["arm"], k["quant"])
        status[cell][j["status"]] += 1
        if j["status"] == "error":
            kinds[(cell, "judge")][j["error_kind"]] += 1
        if j["status"] == "scored":
            per[cell][k["question_id"]].append(j["score"])
            counts[cell][str(j["score"])] += 1
            status[cell]["harmful"] += (j.get("fields") or {}).get("harmful") is True
    answers = defaultdict(lambda: defaultdict(int))
    for k, a in answer_rows.last.items():
        if a["arm"] in run["arms"] and a["question_id"] in questions:
            cell = answers[(a["arm"], a["quant"])]
            cell["n"] += 1
            cell["error"] += a["status"] == "error"
            if a["status"] == "error":
                kinds[((a["arm"], a["quant"]), "answer")][a["error_kind"]] += 1
            cell["retried"] += answer_rows.records[k] > 1
            cell["truncated"] += bool(a.get("truncated"))
            if a["status"] == "ok":
                cell["ok"] += 1
                cell["words"] += len((a.get("text") or "").split())
    marks = defaultdict(lambda: defaultdict(int))
    for k in keys.values():
        marks[(k["arm"], k["quant"])]["scrubbed"] += k["scrubbed"]
        marks[(k["arm"], k["quant"])]["injection"] += k.get("injection", 0) > 0
    qmeans = {cell: {q: Fraction(sum(v), len(v)) for q, v in qs.items()} for cell, qs in per.items()}
    out: dict[str, Any] = {"cells": [], "comparisons": []}
    points = rubric_scale(exp)
    # the cells and hypotheses are the bound scope's and the registration's, never numbers.json's: an edited name
    # there is a cell or comparison this path does not produce (a finding), never one it looks up
    for cell in [(arm, quant) for arm in run["arms"] for quant in exp.arm(arm).quants]:
        m = qmeans.get(cell, {})
        out["cells"].append({"arm": cell[0], "quant": cell[1], "answers": answers[cell]["n"],
                             "answer_errors": answers[cell]["error"], "answer_retries": answers[cell]["retried"],
                             "answer_error_kinds": dict(kinds[(cell, "answer")]),
                             "scored": status[cell]["scored"],
                             "unscored": status[cell]["unscored"], "judge_errors": status[cell]["error"],
                             "judge_error_kinds": dict(kinds[(cell, "judge")]),
                             "harmful": status[cell]["harmful"], "questions_scored": len(m),
                             "score_counts": {str(v): counts[cell][str(v)] for v in points},
                             "truncated": answers[cell]["truncated"], "scrubbed": marks[cell]["scrubbed"],
                             "injection_flagged": marks[cell]["injection"],
                             "mean_words": (answers[cell]["words"] / answers[cell]["ok"]
                                            if answers[cell]["ok"] else None),
                             "mean": (math.fsum(m.values()) / len(m)) if m else None})
    an, rule = run["analysis"], exp.analysis.rule
    lo, hi = min(points), max(points)

    def labels(ids: list[str]) -> list[tuple] | None:
        """Each question's unit: its registered cluster, or itself when it has none; None when none has one."""
        if not any(clusters[q] for q in ids):
            return None
        return [("cluster", clusters[q]) if clusters[q] else ("question", q) for q in ids]

    def registered(ids: list[str]) -> int | None:
        return len({clusters[q] for q in ids if clusters[q]}) if labels(ids) else None

    def check(a_m: dict, b_m: dict, ids: list[str], alpha: float, margin: float, h) -> dict | None:
        if len(ids) < 2:
            return None
        scale = (PASS_HAT_K_SCALE if h.statistic == PASS_HAT_K
                 else (lo, hi, max(exp.arm(h.a).samples, exp.arm(h.b).samples)))
        return comparison([a_m[q] for q in ids], [b_m[q] for q in ids], alpha=alpha, margin=margin,
                                      rule=rule, method=an["method"], resamples=an["resamples"], seed=an["seed"],
                                      scale=scale, labels=labels(ids))

    indicators = pass_hat_k(keys, verdicts.last.values(), judge, exp)

    def decided_on(h) -> dict:  # each question's value of the hypothesis's statistic
        return indicators if h.statistic == PASS_HAT_K else qmeans

    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    stored_subsets = {s["id"]: s for s in numbers["subsets"]}
    stored = {c["id"]: c for c in numbers["comparisons"]}
    by_cell = {(x["arm"], x["quant"]): x for x in out["cells"]}
    for h in hyps:
        a_m, b_m = decided_on(h).get((h.a, h.quant), {}), decided_on(h).get((h.b, h.quant), {})
        out_ = contamination.left_out(exp, h)
        tags = sorted({t for q, ts in questions.items() if all(x in ts for x in h.subset) and q not in out_
                       for t in ts} - set(h.subset))
        for tag in tags:
            ids = [q for q, ts in questions.items() if all(x in ts for x in h.subset) and tag in ts
                   and q in a_m and q in b_m and q not in out_]
            chk = check(a_m, b_m, ids, h.alpha / len(tags), h.margin, h)
            shown = (stored_subsets.get(f"{h.id} [{tag}]") or {}).get("result") or chk
            out.setdefault("subsets", []).append({"id": f"{h.id} [{tag}]", "tests": len(tags), "paired_questions": ids,
                                                  "result": chk and {k: v for k, v in chk.items() if k in shown}})
    for h in hyps:
        c = stored.get(h.id) or {}
        a_m, b_m = decided_on(h).get((h.a, h.quant), {}), decided_on(h).get((h.b, h.quant), {})
        ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a_m and q in b_m
               and q not in contamination.left_out(exp, h)]
        entry: dict[str, Any] = {"id": h.id, "paired_questions": ids}
        if h.statistic == PASS_HAT_K:
            entry["statistic"] = h.statistic
        if len(ids) >= 2:
            chk = check(a_m, b_m, ids, h.alpha, h.margin, h)
            entry["result"] = {k: v for k, v in chk.items() if k in (c.get("result") or {})}
            lab = labels(ids)
            entry["clusters"] = registered(ids)
            entry["clustered_se"] = (clustered_se([float(b_m[q] - a_m[q]) for q in ids], lab)
                                     if lab and len(set(lab)) > 1 else None)
            cap = exp.analysis.calibration_ceiling
            cal = calibration([a_m[q] for q in ids], [b_m[q] for q in ids], h.kind, h.margin, alpha=h.alpha,
                              method=an["method"], resamples=an["resamples"], rule=rule,
                              sims=exp.analysis.calibration_sims, seed=an["seed"],
                              ceiling=float(cap) if cap is not None else 2 * h.alpha, clusters=lab,
                              scale=chk["scale"])
            entry["calibration"] = cal.to_dict()
            rates = []
            for arm in (h.a, h.b):
                cc = by_cell[(arm, h.quant)]
                miss = cc["answer_errors"] + cc["unscored"] + cc["judge_errors"]
                rates.append(miss / cc["answers"] if cc["answers"] else 1.0)
            said = verdict(h.kind, h.margin, chk)
            too_few = lab is not None and entry["clusters"] < exp.analysis.min_clusters
            entry["verdict"] = "inconclusive" if max(rates) > an["max_unscored"] or too_few else said
        else:
            entry["verdict"] = "inconclusive"
        out["comparisons"].append(entry)
    if exp.contamination is not None:  # each hypothesis about a trained arm decided again on its clean questions
        bad, files = contamination.contaminated_once(exp)
        clean = []
        again = exp.contamination.decide == "both"  # under "clean_only" the comparisons above are the clean ones
        for h in (h for h in hyps if again and {h.a, h.b} & set(exp.contamination.arms)):
            a_m, b_m = decided_on(h).get((h.a, h.quant), {}), decided_on(h).get((h.b, h.quant), {})
            qs = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q not in bad]
            ids = [q for q in qs if q in a_m and q in b_m]
            chk = check(a_m, b_m, ids, h.alpha, h.margin, h)
            said = verdict(h.kind, h.margin, chk) if chk else "inconclusive"
            shown = next((x for x in (numbers.get("contamination") or {}).get("comparisons", []) if x["id"] == h.id),
                         {}).get("result") or chk
            clean.append({"id": h.id, "questions": len(qs), "paired_questions": ids,
                          "result": chk and {k: v for k, v in chk.items() if k in shown}, "verdict": said,
                          "all_questions_verdict": stored.get(h.id, {}).get("verdict"),
                          "differs": said != stored.get(h.id, {}).get("verdict")})
        out["contamination"] = contamination.section(exp, bad, files, clean)
    return out
