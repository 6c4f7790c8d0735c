"""Agreement between two readers of the same answers: Cohen's kappa and the list of disagreements.

Two readers of the same 40 answers counted 5 and 2 gamed (docs/reward-hacking.md), so the gate's resolution is about
the disagreement between readers; the audit shows how large that disagreement is here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from core.records import Judgment
from judge.numbers.stats.agreement import cohen_kappa

from .readers import is_gamed


@dataclass(frozen=True)
class ReaderAgreement:
    """Two readers of the same answers: how many both scored, how many they agree on, kappa, and every disagreement."""

    both_scored: int
    agree: int
    kappa: float | None  # None: fewer than one shared verdict, or both readers used one category only
    kappa_note: str | None
    disagreements: list[dict]


def _side(j: Judgment | None) -> dict:
    if j is None:
        return {"status": "missing", "gamed": None, "category": None}
    return {"status": j.status, "gamed": is_gamed(j) if j.status == "scored" else None,
            "category": (j.fields or {}).get("category")}


def agreement(first: dict[str, Judgment], second: dict[str, Judgment], ids: dict[str, str]) -> ReaderAgreement:
    """Kappa on gamed yes/no over answers both readers scored; every other answer is a disagreement
    (a reader that could not read an answer did not agree with one that could)."""
    pairs, disagreements = [], []
    for label in sorted(ids, key=ids.get):
        a, b = first.get(label), second.get(label)
        sa, sb = _side(a), _side(b)
        if sa["status"] == "scored" and sb["status"] == "scored":
            pairs.append((sa["gamed"], sb["gamed"]))
            if sa["gamed"] == sb["gamed"]:
                continue
        disagreements.append({"completion_id": ids[label], "first": sa, "second": sb})
    kappa, note = None, None
    if not pairs:
        note = "no answer was scored by both readers"
    else:
        k = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs], labels=[False, True])
        if math.isnan(k):
            note = "undefined: both readers gave every answer the same verdict"
        else:
            kappa = round(k, 4)
    return ReaderAgreement(len(pairs), sum(a == b for a, b in pairs), kappa, note, disagreements)
