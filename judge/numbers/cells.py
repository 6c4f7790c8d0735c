"""numbers.json's counts: each (arm, quant) cell's answers, verdicts, causes of errors and mean score, and each
judge's verdicts by status (`judge_totals`). Every count is of the final state: each key's current record under the
retry rule (core.jsonl), so an error retried into an answer is not an error.
"""
from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from core.errors import BadInput
from core.records import Cell, JudgeTotal, Judgment, KeyRow
from registration.prereg import Experiment


def error_kind(error: Any) -> str:
    """The `kind` of an error dict from models.retry.describe(); rows written before it had one are `other`."""
    return (error.get("kind") if isinstance(error, dict) else None) or "other"


def _kinds(errors: list[Any]) -> dict[str, int]:
    """kind -> count, only the kinds that occur, sorted by kind."""
    out: dict[str, int] = defaultdict(int)
    for e in errors:
        out[error_kind(e)] += 1
    return dict(sorted(out.items()))


def exp_scale(exp: Experiment) -> tuple[int, ...]:
    """The points of the registered rubric's scale."""
    from registration.rubric import load_rubric, rubric_dir

    return load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)).scale


def cells(exp: Experiment, arms: list[str], answers, keys, judgments, judge, scores,
          qids: set[str], retried: frozenset[str]) -> list[Cell]:
    """One cell per (arm, quant) of the run: its answers and the primary judge's single verdicts on them, counted;
    `scores`: (arm, quant) -> question id -> its mean score (judge.numbers.analysis.per_question)."""
    by_label = {k.label: k for k in keys}
    status = defaultdict(lambda: defaultdict(int))
    judge_errors: dict[tuple, list[Any]] = defaultdict(list)  # the error of each error verdict's last attempt
    counts = defaultdict(lambda: defaultdict(int))
    words: dict[tuple, list[int]] = defaultdict(list)
    for a in answers:
        if a.status == "ok" and a.question_id in qids:
            words[(a.arm, a.quant)].append(len((a.text or "").split()))
    for j in judgments:
        if j.judge == judge and j.kind == "single" and j.label in by_label:
            k = by_label[j.label]
            status[(k.arm, k.quant)][j.status] += 1
            if j.status == "error":
                judge_errors[(k.arm, k.quant)].append(j.attempts[-1].get("error") if j.attempts else None)
            if j.status == "scored":
                counts[(k.arm, k.quant)][str(j.score)] += 1
            if j.status == "scored" and (j.fields or {}).get("harmful") is True:
                status[(k.arm, k.quant)]["harmful"] += 1
    scrubbed, injection = defaultdict(int), defaultdict(int)
    for k in keys:
        scrubbed[(k.arm, k.quant)] += k.scrubbed
        injection[(k.arm, k.quant)] += k.injection > 0
    out = []
    for arm in arms:
        for quant in exp.arm(arm).quants:
            rows = [a for a in answers if a.arm == arm and a.quant == quant and a.question_id in qids]
            qs = scores.get((arm, quant), {})
            st = status[(arm, quant)]
            out.append(Cell(
                arm=arm, quant=quant,
                answers=len(rows),
                answer_errors=sum(a.status == "error" for a in rows),
                answer_error_kinds=_kinds([a.error for a in rows if a.status == "error"]),
                answer_retries=sum(a.row in retried for a in rows),
                truncated=sum(a.truncated for a in rows),
                scored=st["scored"], unscored=st["unscored"], judge_errors=st["error"],
                judge_error_kinds=_kinds(judge_errors[(arm, quant)]),
                questions_scored=len(qs),
                mean=float(sum(qs.values()) / len(qs)) if qs else None,
                harmful=st["harmful"],
                scrubbed=scrubbed[(arm, quant)],
                injection_flagged=injection[(arm, quant)],
                mean_words=(sum(words[(arm, quant)]) / len(words[(arm, quant)])) if words[(arm, quant)] else None,
                score_counts={str(v): counts[(arm, quant)][str(v)] for v in exp_scale(exp)},
            ))
    return out


def unscored_rate(cell: Cell) -> float:
    """(answer errors + unscored + judge errors) / answers of the cell; 1 without an answer."""
    missing = cell.answer_errors + cell.unscored + cell.judge_errors
    return missing / cell.answers if cell.answers else 1.0


def judge_totals(judgments: list[Judgment]) -> dict[str, JudgeTotal]:
    """"judge/rubric" -> its verdicts by status, and how many were repaired."""
    out: dict[str, dict[str, int]] = {}
    for j in judgments:
        t = out.setdefault(f"{j.judge}/{j.rubric}", {"scored": 0, "unscored": 0, "error": 0, "repaired": 0})
        t[j.status] += 1
        t["repaired"] += bool(j.repaired)
    return {name: JudgeTotal(**t) for name, t in out.items()}


def per_question(keys: list[KeyRow], judgments: list[Judgment],
                 judge: str) -> dict[tuple[str, str], dict[str, Fraction]]:
    """(arm, quant) -> question id -> mean score over that question's scored samples, exact (a Fraction: with K
    samples a mean such as 1/3 must not round before the decision compares a bound with its margin). Only
    single-answer verdicts count, whatever their rubric is called."""
    by_label = {k.label: k for k in keys}
    acc: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in judgments:
        if j.judge != judge or j.kind != "single" or j.status != "scored":
            continue
        k = by_label.get(j.label)
        if k is None:
            raise BadInput("judgments.jsonl", f"label {j.label} is not in blinding.jsonl", field="label")
        acc[(k.arm, k.quant)][k.question_id].append(j.score)
    return {cell: {q: Fraction(sum(v), len(v)) for q, v in qs.items()} for cell, qs in acc.items()}
