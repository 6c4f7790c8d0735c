"""Pairwise mode: two answers to one question side by side, judged in both orders.

Position bias is real (MT-Bench: GPT-4 kept its verdict on only 65% of swapped pairs), so every
pair is shown both ways; a verdict that flips with the order counts as a tie, and the share of
pairs whose verdict survives the swap (position consistency) is reported.
"""
from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from core.records import AnswerRow, Judgment, PairKey
from registration.prereg import Hypothesis
from registration.questions import Question

from .blinding import scrub


@dataclass(frozen=True)
class PairItem:
    """All the judge may know about one ordered pair."""

    kind: ClassVar[str] = "pairwise"  # the judgment's kind (core.records.Judgment)
    label: str
    question_id: str
    question: str
    reference: str | None
    answer_1: str
    answer_2: str

    def prompt_fields(self) -> dict[str, str | None]:
        return {"question": self.question, "reference": self.reference, "answer_1": self.answer_1,
                "answer_2": self.answer_2}


def pair_label(secret: bytes, hypothesis: str, question_id: str, first: str) -> str:
    """The label of one ordered pair, keyed like a single answer's (judge.judging.blinding.folder_label_secret)."""
    return "P" + hmac.new(secret, f"{hypothesis}\x1f{question_id}\x1f{first}".encode(), hashlib.sha256).hexdigest()[:12]


def pair_items(hypotheses: list[Hypothesis], answers: list[AnswerRow], questions: dict[str, Question],
               secret: bytes, seed: int, patterns: tuple[str, ...],
               labels: Mapping[tuple[str, str, str], str] | None = None) -> tuple[list[PairItem], list[PairKey]]:
    """Both orders of (a, b) for every hypothesis and question where both answered (sample 0). `labels` ((hypothesis,
    question, first arm) -> label, as blinding.jsonl keys them) in place of deriving each from `secret`: read back
    without the folder's secret; an order it does not key is left out."""
    by = {(a.arm, a.quant, a.question_id): a for a in answers if a.status == "ok" and a.sample == 0}
    items, keys = [], []
    for h in hypotheses:
        for qid, q in questions.items():
            a, b = by.get((h.a, h.quant, qid)), by.get((h.b, h.quant, qid))
            if a is None or b is None:
                continue
            ta, tb = scrub(a.text or "", patterns)[0], scrub(b.text or "", patterns)[0]
            for first, second, t1, t2 in ((h.a, h.b, ta, tb), (h.b, h.a, tb, ta)):
                if labels is not None and (h.id, qid, first) not in labels:
                    continue
                label = labels[h.id, qid, first] if labels is not None else pair_label(secret, h.id, qid, first)
                items.append(PairItem(label, qid, q.question, q.reference, t1, t2))
                keys.append(PairKey(label, h.id, qid, h.quant, first, second))
    random.Random(seed).shuffle(items)
    return items, sorted(keys, key=lambda k: k.label)


def winner(key: PairKey, j: Judgment) -> str | None:
    """The arm the verdict preferred, "tie", or None when there is no verdict."""
    if j.status != "scored":
        return None
    return {0: "tie", 1: key.first, 2: key.second}[j.score]


def summarise(hypotheses: list[Hypothesis], keys: list[PairKey], judgments: list[Judgment],
              judge: str) -> list[dict[str, Any]]:
    by_label = {j.label: j for j in judgments if j.judge == judge and j.kind == "pairwise"}
    out = []
    for h in hypotheses:
        pairs: dict[str, list[str | None]] = {}
        first_pos = shown = 0
        for k in keys:
            if k.hypothesis != h.id or k.label not in by_label:
                continue
            w = winner(k, by_label[k.label])
            pairs.setdefault(k.question_id, []).append(w)
            if w is not None and w != "tie":
                shown += 1
                first_pos += w == k.first
        both = {q: ws for q, ws in pairs.items() if len(ws) == 2 and None not in ws}
        consistent = {q: ws[0] for q, ws in both.items() if ws[0] == ws[1]}
        final = {q: consistent.get(q, "tie") for q in both}
        out.append({
            "hypothesis": h.id, "a": h.a, "b": h.b, "quant": h.quant,
            "pairs": len(pairs), "both_orders_scored": len(both),
            "unscored_verdicts": sum(w is None for ws in pairs.values() for w in ws),
            "consistent": len(consistent),
            "consistency_rate": len(consistent) / len(both) if both else None,
            "first_position_share": first_pos / shown if shown else None,
            "wins_b": sum(v == h.b for v in final.values()), "wins_a": sum(v == h.a for v in final.values()),
            "ties": sum(v == "tie" for v in final.values()),
        })
    return out
