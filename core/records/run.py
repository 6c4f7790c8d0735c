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

    backend: str  # which backend served the calls, as its identity() names it


@dataclass(frozen=True, kw_only=True)
class RunJudge(Entry):
    """run.json's `judge`: the judges of the run (primary first) and what was read back from them. Its fields are in
    the order run.json holds them (keyword-only, so a required one may follow an optional one)."""

    WHAT: ClassVar[str] = "run.json's judges"

    primary: str  # the judge that decides; every reader of a judged folder reads it
    panel: list[str] | None = None  # absent in folders written before judge panels: [primary]
    mode: str | None = None  # single, pairwise or both; absent before pairwise judging: single
    model: str | None = None  # the primary judge's model source as registered (judge.results.runinfo.registered)
    quant: str | None = None  # the primary judge's registered quant; None when it names none
    rubric: str | None = None  # the name of the single-answer rubric the judges applied
    attempts: int | None = None  # registered tries per verdict before it is recorded unscored (`judge_attempts`)
    # the scrub patterns applied before judging: the defaults not dropped, then the registered ones
    scrub: list[str] = field(default_factory=list)
    # warnings on the panel shown in the report: a judge too small to grade, or of an arm's model family
    warnings: list[str] = field(default_factory=list)
    identity: BackendIdentity  # the primary judge's (models.cache: in every call key); the report shows its backend
    identities: dict[str, Any] | None = None  # each judge's backend identity, by judge name (pipeline.run)
    # what each judge's backend really uses, read back before judging, by "judge/rubric"
    effective_settings: dict[str, Any] | None = None


@dataclass(frozen=True)
class CostRow(Entry):
    """One arm's or judge's line of run.json's `cost` (judge.judging.cost): tokens as the rows record them, and USD at
    the registered prices (None without one)."""

    WHAT: ClassVar[str] = "a cost row of run.json"

    role: str  # "arm" or "judge"
    name: str  # the arm's or judge's name
    model: str  # its registered model's name
    rows: int  # current rows counted: its answers to the run's questions, or its verdicts
    input_tokens: int  # input tokens of those rows' calls, cached calls included (with an answer-first judge's own)
    output_tokens: int  # output tokens, counted as input_tokens is
    batch_input_tokens: int  # the part of input_tokens from rows whose every call a provider batch answered
    batch_output_tokens: int  # the part of output_tokens from rows whose every call a provider batch answered
    usd: float | None  # input and output tokens at the registered prices, batched ones at half; None without prices
    price_input: float | None = None  # registered USD per million input tokens; None when not registered
    price_output: float | None = None  # registered USD per million output tokens; None when not registered


@dataclass(frozen=True)
class RunRuntime(Entry):
    """run.json's `runtime`: the registered runtime settings (models.spec.Runtime) the run was made with."""

    WHAT: ClassVar[str] = "run.json's runtime"

    threads: int  # llama.cpp threads
    n_ctx: int  # llama.cpp context length, in tokens
    cpu_extra_buffers: str | bool = None  # llama.cpp weight repacking buffers: "auto", true or false
    gpu_layers: int = None  # llama.cpp layers offloaded to a GPU
    batch: int = None  # sequences decoded together ([runtime] parallel_sequences)
    flash_attn: bool = None  # llama.cpp's fused attention kernel


@dataclass(frozen=True)
class RunAnalysis(Entry):
    """run.json's `analysis`: the registered analysis settings the numbers were computed with."""

    WHAT: ClassVar[str] = "run.json's analysis"

    resamples: int  # bootstrap resamples ([analysis] resamples)
    method: str  # the bootstrap interval: "percentile" or "bca"
    seed: int  # the bootstrap's seed ([analysis] seed)
    max_unscored: float  # above this share of unscored answers in either arm a decision is inconclusive


@dataclass(frozen=True, kw_only=True)
class RunInfo(Document):
    """run.json (judge.results.runinfo builds it: the registered part from the registration and the binding, the rest
    as `judge run` read it back). Its fields are in the order run.json holds them. Required: what every reader reads
    (the report renders the judge's backend and the audit gate); fields that older folders lack are optional. Its
    version is `version` (VERSION): version 1 wrote none, and is migrated by core.records.migrate."""

    WHAT: ClassVar[str] = "a run record (run.json)"
    VERSION: ClassVar[int] = 2  # what this blindeval writes; raise it with a step in core.records.migrate

    version: int = None  # this document's version, first in the file (absent: version 1)
    name: str  # the run's name: the experiment's, + "-" and the arms when a subset, + "-limitN" with --limit
    experiment: str | None = None  # the experiment's name in prereg.toml
    seed: int | None = None  # the experiment's registered seed
    limit: int | None = None  # the bound --limit; None for all questions
    arms: list[str]  # the arms the folder binds, by name
    question_ids: list[str]  # the ids of the questions in scope (the first --limit of the registered sets)
    hashes: dict[str, str] | None = None  # sha256 of prereg.toml, of the MANIFEST and of the rubric, by name
    label_key: str | None = None  # binding.json's label key: with the blinding secret, what the labels derive from
    runtime: RunRuntime | None = None  # the registered runtime settings
    analysis: RunAnalysis | None = None  # the registered analysis settings
    judge: RunJudge  # the judges of the run and what was read back from them
    # where the folder was bound (binding.json), so a resume from elsewhere writes the same
    experiment_dir: str | None = None
    # each arm/quant's effective settings as its first answer row records them
    effective_settings: dict[str, Any] | None = None
    # per model/quant: which quantiser made which file, its sha256 and the types read back
    quant_files: dict[str, Any] | None = None
    audit_gate: str  # the report's audit gate line (pipeline.run.check_audit_gate)
    # the report's contamination gate line (pipeline.run.check_contamination): absent when none is registered, and in
    # folders written before the gate existed
    contamination: str = None
    cost: list[CostRow] = None  # absent in folders written before costs were kept
    # what a run that can cost money planned to pay, before its first call (judge.judging.budget): absent in older
    # folders and in runs of in-process models only
    cost_estimate: dict[str, Any] = None
