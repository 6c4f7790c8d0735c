"""numbers.json: every number the report prints, derived only from the raw files.

Scores are averaged over a question's samples first, then over questions. Unscored and errored
answers are counted, never scored; a comparison whose arms are too often unscored is
inconclusive (DESIGN principle 1). judge.verify recomputes all of this by a separate path.
"""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from arms import jsonl
from arms.errors import BadInput
from arms.questions import Question
from arms.records import AnswerRow

from . import stats
from .blinding import KeyRow
from .prereg import Experiment, Hypothesis
from .records import Judgment

RAW_FILES = ("answers.jsonl", "blinding.jsonl", "judgments.jsonl")


def raw_sha256(run_dir: Path) -> dict[str, str]:
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
            for name in RAW_FILES if (run_dir / name).exists()}


def load_raw(run_dir: Path) -> tuple[list[AnswerRow], list[KeyRow], list[Judgment]]:
    answers = [AnswerRow.from_dict(r) for _, r in jsonl.read(run_dir / "answers.jsonl", required=("row", "arm"))]
    keys = [KeyRow(**{k: r[k] for k in KeyRow.__dataclass_fields__})
            for _, r in jsonl.read(run_dir / "blinding.jsonl", required=("label", "arm", "quant"))]
    judgments = [Judgment.from_dict(r) for _, r in jsonl.read(run_dir / "judgments.jsonl", required=("judge", "label"))]
    return answers, keys, judgments


def per_question(keys: list[KeyRow], judgments: list[Judgment], judge: str) -> dict[tuple[str, str], dict[str, float]]:
    """(arm, quant) -> question id -> mean score over that question's scored samples."""
    by_label = {k.label: k for k in keys}
    acc: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in judgments:
        if j.judge != judge or j.status != "scored":
            continue
        k = by_label.get(j.label)
        if k is None:
            raise BadInput("judgments.jsonl", f"label {j.label} is not in blinding.jsonl", field="label")
        acc[(k.arm, k.quant)][k.question_id].append(j.score)
    return {cell: {q: sum(v) / len(v) for q, v in qs.items()} for cell, qs in acc.items()}


def _cells(exp: Experiment, arms: list[str], answers, keys, judgments, judge, scores) -> list[dict[str, Any]]:
    by_label = {k.label: k for k in keys}
    status = defaultdict(lambda: defaultdict(int))
    for j in judgments:
        if j.judge == judge and j.label in by_label:
            k = by_label[j.label]
            status[(k.arm, k.quant)][j.status] += 1
            if j.status == "scored" and (j.fields or {}).get("harmful") is True:
                status[(k.arm, k.quant)]["harmful"] += 1
    scrubbed = defaultdict(int)
    for k in keys:
        scrubbed[(k.arm, k.quant)] += k.scrubbed
    cells = []
    for arm in arms:
        for quant in exp.arm(arm).quants:
            rows = [a for a in answers if a.arm == arm and a.quant == quant]
            qs = scores.get((arm, quant), {})
            st = status[(arm, quant)]
            cells.append({
                "arm": arm, "quant": quant,
                "answers": len(rows),
                "answer_errors": sum(a.status == "error" for a in rows),
                "truncated": sum(a.truncated for a in rows),
                "scored": st["scored"], "unscored": st["unscored"], "judge_errors": st["error"],
                "questions_scored": len(qs),
                "mean": (sum(qs.values()) / len(qs)) if qs else None,
                "harmful": st["harmful"],
                "scrubbed": scrubbed[(arm, quant)],
            })
    return cells


def _unscored_rate(cell: dict[str, Any]) -> float:
    judged_or_failed = cell["answers"]
    missing = cell["answer_errors"] + cell["unscored"] + cell["judge_errors"]
    return missing / judged_or_failed if judged_or_failed else 1.0


def compare(h: Hypothesis, exp: Experiment, questions: dict[str, Question], scores, cells) -> dict[str, Any]:
    a_scores, b_scores = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
    wanted = [q for q in questions.values() if all(t in q.tags for t in h.subset)]
    paired_ids = [q.id for q in wanted if q.id in a_scores and q.id in b_scores]
    cell = {(c["arm"], c["quant"]): c for c in cells}
    rates = {h.a: _unscored_rate(cell[(h.a, h.quant)]), h.b: _unscored_rate(cell[(h.b, h.quant)])}
    out: dict[str, Any] = {"id": h.id, "a": h.a, "b": h.b, "quant": h.quant, "kind": h.kind, "margin": h.margin,
                           "alpha": h.alpha, "subset": list(h.subset), "questions_in_subset": len(wanted),
                           "paired_questions": paired_ids, "unscored_rate": rates}
    if len(paired_ids) < 2:
        out.update(result=None, verdict="inconclusive",
                   reason=f"only {len(paired_ids)} question(s) scored in both arms")
        return out
    a = [a_scores[q] for q in paired_ids]
    b = [b_scores[q] for q in paired_ids]
    an = exp.analysis
    p = stats.paired(a, b, resamples=an.resamples, seed=an.seed, method=an.method, alpha=h.alpha, margin=h.margin)
    d = stats.decide(p, h.kind, h.margin)
    out["result"] = p.to_dict()
    worst = max(rates.values())
    if worst > an.max_unscored:
        who = ", ".join(f"{k} {v:.0%}" for k, v in rates.items())
        out.update(verdict="inconclusive",
                   reason=f"unscored or failed answers ({who}) exceed the registered {an.max_unscored:.0%}; "
                          f"the statistic alone would say: {d.verdict}")
    else:
        out.update(verdict=d.verdict, reason=d.reason)
    return out


def quant_check(exp: Experiment, arms: list[str], scores, comparisons: list[dict]) -> dict[str, Any]:
    """Each arm's own score change between its quants, and what it means for each comparison (seed 002)."""
    per_arm = {}
    for arm in arms:
        quants = exp.arm(arm).quants
        means = {}
        for q in quants:
            s = scores.get((arm, q), {})
            means[q] = sum(s.values()) / len(s) if s else None
        per_arm[arm] = means
    notes = {}
    for c in comparisons:
        if c["result"] is None:
            continue
        effect = c["result"]["diff"]
        others = [o for o in comparisons if o is not c and o["a"] == c["a"] and o["b"] == c["b"]
                  and o["subset"] == c["subset"] and o["result"] is not None]
        msgs = []
        for o in others:
            if (o["result"]["diff"] > 0) != (effect > 0) and effect != 0 and o["result"]["diff"] != 0:
                msgs.append(f"the effect changes sign at {o['quant']} ({o['result']['diff']:+.3f})")
            base = per_arm.get(c["a"], {})
            if base.get(c["quant"]) is not None and base.get(o["quant"]) is not None:
                loss = base[o["quant"]] - base[c["quant"]]
                if effect != 0 and abs(loss) >= abs(effect) / 2:
                    msgs.append(f"{c['a']}'s own score moves {loss:+.3f} between {c['quant']} and {o['quant']}, "
                                f"comparable to the effect {effect:+.3f}: quantisation may explain it")
        notes[c["id"]] = msgs
    return {"means": per_arm, "notes": notes}


def compute_numbers(exp: Experiment, questions: list[Question], run_dir: Path, run: dict[str, Any]) -> dict[str, Any]:
    answers, keys, judgments = load_raw(run_dir)
    judge = run["judge"]["primary"]
    arms = run["arms"]
    scores = per_question(keys, judgments, judge)
    qmap = {q.id: q for q in questions if q.id in set(run["question_ids"])}
    cells = _cells(exp, arms, answers, keys, judgments, judge, scores)
    comparisons = [compare(h, exp, qmap, scores, cells) for h in exp.hypotheses if h.a in arms and h.b in arms]
    qc = quant_check(exp, arms, scores, comparisons)
    for c in comparisons:
        if qc["notes"].get(c["id"]):
            c["reason"] += " — caution: " + "; ".join(qc["notes"][c["id"]])
    return {
        "schema": 1,
        "experiment": exp.name,
        "judge": judge,
        "questions": len(qmap),
        "raw_sha256": raw_sha256(run_dir),
        "cells": cells,
        "comparisons": comparisons,
        "quant_check": qc,
        "judge_totals": _judge_totals(judgments),
    }


def _judge_totals(judgments: list[Judgment]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for j in judgments:
        t = out.setdefault(j.judge, {"scored": 0, "unscored": 0, "error": 0, "repaired": 0})
        t[j.status] += 1
        t["repaired"] += bool(j.repaired)
    return out


def write_numbers(numbers: dict[str, Any], path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(numbers, indent=1) + "\n")
    tmp.replace(path)
