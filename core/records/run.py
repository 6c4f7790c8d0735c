"""run.json's contract: what the run registered and read back, its judges and its cost."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .check import Document, Entry


@dataclass(frozen=True)
class BackendIdentity(Entry):
    """What a backend reports of itself (models.cache.call_key's identity): the report names `backend`; the rest is
    kept as written."""

    WHAT: ClassVar[str] = "a backend identity of run.json"

    backend: str


@dataclass(frozen=True)
class RunJudge(Entry):
    """run.json's `judge`: the judges of the run (primary first) and what was read back from them."""

    WHAT: ClassVar[str] = "run.json's judges"

    primary: str  # the judge that decides; every reader of a judged folder reads it
    identity: BackendIdentity  # the primary judge's (models.cache: in every call key); the report shows its backend
    panel: list[str] | None = None  # absent in folders written before judge panels: [primary]
    mode: str | None = None  # single, pairwise or both; absent before pairwise judging: single
    model: str | None = None
    quant: str | None = None
    rubric: str | None = None
    attempts: int | None = None
    scrub: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    identities: dict[str, Any] | None = None
    effective_settings: dict[str, Any] | None = None


@dataclass(frozen=True)
class CostRow(Entry):
    """One arm's or judge's line of run.json's `cost` (judge.judging.cost): tokens as the rows record them, and USD at
    the registered prices (None without one)."""

    WHAT: ClassVar[str] = "a cost row of run.json"

    role: str
    name: str
    model: str
    rows: int
    input_tokens: int
    output_tokens: int
    batch_input_tokens: int
    batch_output_tokens: int
    usd: float | None
    price_input: float | None = None
    price_output: float | None = None


@dataclass(frozen=True)
class RunInfo(Document):
    """run.json (judge.results.runinfo builds its registered part, pipeline.run the rest). Required: what every reader
    reads (the report renders the judge's backend and the audit gate); fields that older folders lack are optional;
    run.json carries no `version` key yet (absent is version 1), so its bytes, part of the anchor,
    are those earlier versions wrote."""

    WHAT: ClassVar[str] = "a run record (run.json)"

    name: str
    arms: list[str]
    question_ids: list[str]
    judge: RunJudge
    audit_gate: str  # the report's audit gate line (pipeline.run.check_audit_gate)
    experiment: str | None = None
    seed: int | None = None
    limit: int | None = None
    hashes: dict[str, Any] | None = None
    label_key: str | None = None
    runtime: dict[str, Any] | None = None
    analysis: dict[str, Any] | None = None
    experiment_dir: str | None = None
    effective_settings: dict[str, Any] | None = None
    quant_files: dict[str, Any] | None = None
    cost: list[CostRow] = None  # absent in folders written before costs were kept
    # what a run that can cost money planned to pay, before its first call (judge.judging.budget): absent in older
    # folders and in runs of in-process models only
    cost_estimate: dict[str, Any] | None = None
    # the report's contamination gate line (pipeline.run.check_contamination): absent when none is registered, and in
    # folders written before the gate existed
    contamination: str | None = None
