"""The judgment row: one current row per (judge, blinded label) in judgments.jsonl.

Defined once; written by judge.judging, read by judge.analysis and judge.verify. An `error`
verdict is retried by the next run (arms.jsonl's retry rule): the key's last record is its verdict.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


JUDGMENT_KEY = ("judge", "label")  # the key of the retry rule (single labels start L, pair labels P)


@dataclass(frozen=True)
class Judgment:
    judge: str
    label: str
    question_id: str
    status: str  # "scored" | "unscored" (no parseable verdict) | "error" (the judge call itself failed)
    score: int | None  # None unless scored: a parse failure is never a zero
    fields: dict[str, Any] | None
    repaired: bool
    error: str | None
    prompt_sha256: str
    attempts: list[dict[str, Any]]  # every raw judge output with its parse error
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    calls: list[str] = field(default_factory=list)
    cached_calls: int = 0
    time: str | None = None  # UTC time the verdict was recorded: amendments must predate the first one
    rubric: str = "correctness"  # which rubric (single-answer grading or pairwise) produced it

    def to_dict(self) -> dict[str, Any]:
        return {"type": "judgment", **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Judgment":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
