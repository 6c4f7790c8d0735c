"""The answer row: one current row per (arm, quant, question, sample) in answers.jsonl.

Defined once and used by the collector that writes it, the analysis that reads it and the
verifier that recomputes from it. An `error` row is retried by the next run (arms.jsonl's retry
rule): the key's last row is its current one.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

ANSWER_KEY = ("row",)  # the key of the retry rule: `row` is the hash of (arm, quant, question, sample)


def row_id(*parts: object) -> str:
    """Stable identity of a row from its coordinates (used for resume and joins)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class AnswerRow:
    row: str
    arm: str
    quant: str
    question_id: str
    sample: int
    status: str  # "ok" | "error"
    text: str | None  # the final answer (after glue); None on error
    raw_output: str | None  # what the model itself wrote (last call)
    finish_reason: str | None
    truncated: bool
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    model_sha256: str | None
    lora_sha256: str | None  # comma-separated when several adapters are applied
    settings: dict[str, Any]  # registered generation settings, with this sample's seed
    calls: list[str] = field(default_factory=list)  # cache keys of the model calls made
    cached_calls: int = 0  # how many of them came from the cache (0 new cost)
    trace: dict[str, Any] | None = None  # glue trace: retrieved ids, prompt, raw output
    error: dict[str, Any] | None = None
    effective: dict[str, Any] | None = None  # read back from the backend: file, template, adapters, sampling as sent
    thinking: bool = False  # the model's (last) reply showed thinking: compare with settings["thinking"]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "answer", **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "AnswerRow":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
