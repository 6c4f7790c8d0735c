"""[audit] and [contamination]: the gates a run must pass before the arms they name are scored: the top-k gaming
audit of a training run, and the sealed questions checked against the training data."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import BadInput

from .settings import bounded, check_keys, sealed_files, setting
from .spec import ArmSpec

AUDIT_KEYS = ("log", "arms", "gate", "k", "max_gamed", "gate_on_detectors", "override")
CONTAMINATION_KEYS = ("training", "columns", "arms", "n", "threshold", "fields", "short", "decide", "record")
# [contamination] (audit.contamination): the texts of a question checked against the training data; what a text
# shorter than n tokens does (matched whole, as the GPT-3 paper does, or left unchecked, as lm-evaluation-harness
# does); and how a hypothesis about an arm trained on that data is decided: on every question and on the clean ones,
# both reported, or on the clean questions only.
CONTAMINATION_FIELDS = ("question", "reference")
SHORT_TEXTS = ("whole", "skip")
CONTAMINATION_DECIDE = ("both", "clean_only")


@dataclass(frozen=True)
class AuditGate:
    """The top-k gaming audit that must have passed before the audited arms are scored."""

    log: str  # training completions log, relative to the experiment folder
    arms: tuple[str, ...]  # arms built from the audited training run
    gate: str  # gate.json written by `python -m audit`, relative to the repository root unless absolute
    k: int = 40
    max_gamed: int = 4
    gate_on_detectors: bool = False
    override: str | None = None  # a registered, reasoned decision to score without a passing gate


@dataclass(frozen=True)
class Contamination:
    """The contamination gate (audit.contamination): the sealed questions against the training data of `arms`."""

    training: tuple[str, ...]  # training data files (JSONL, CSV or parquet), relative to the experiment folder
    arms: tuple[str, ...]  # arms trained on that data: `judge run` refuses them without a current record
    record: str  # contamination.json written by `python -m audit contamination`, relative to the repository root
    columns: tuple[str, ...] = ("prompt", "completion")  # the columns of each row read as training text
    n: int = 13  # tokens per n-gram
    threshold: float = 0.0  # a text is contaminated when more than this fraction of its distinct n-grams occur
    fields: tuple[str, ...] = CONTAMINATION_FIELDS  # the question's texts checked
    short: str = "whole"  # SHORT_TEXTS
    decide: str = "both"  # CONTAMINATION_DECIDE


def parse_audit(a: Any, file: Path, arms: dict[str, ArmSpec]) -> AuditGate:
    where = "[audit]"
    check_keys(a, AUDIT_KEYS, file, where)
    log = setting(a, "log", "string", file, where)
    gated = tuple(setting(a, "arms", "strings", file, where, []))
    for name in gated:
        if name not in arms:
            raise BadInput(file, f"{where} names unknown arm {name!r}", field="arms")
    override = setting(a, "override", "string", file, where, None)
    if override is not None and not override.strip():
        raise BadInput(file, f"{where} override must state its reason", field="override")
    k = bounded(a, "k", "integer", file, where, 40)
    max_gamed = setting(a, "max_gamed", "integer", file, where, 4)
    if not 0 <= max_gamed <= k:
        raise BadInput(file, f"{where} max_gamed must be in [0, k={k}], got {max_gamed}", field="max_gamed")
    return AuditGate(log=log, arms=gated, gate=setting(a, "gate", "string", file, where,
                                                      f"results/audit-{Path(log).stem}/gate.json"),
                     k=k, max_gamed=max_gamed,
                     gate_on_detectors=setting(a, "gate_on_detectors", "boolean", file, where, False),
                     override=override)


def parse_contamination(c: Any, file: Path, exp_dir: Path, arms: dict[str, ArmSpec], name: str) -> Contamination:
    """[contamination]: the training files must lie inside the experiment folder (the seal covers them); what they
    hold is read by `python -m audit contamination` and again by `judge run` (audit.contamination)."""
    where = "[contamination]"
    check_keys(c, CONTAMINATION_KEYS, file, where)
    training = sealed_files(c, "training", file, where, exp_dir)
    if not training:
        raise BadInput(file, f"{where} training must name at least one training data file", field="training")
    columns = setting(c, "columns", "strings", file, where, ["prompt", "completion"])
    if not columns or not all(columns) or len(set(columns)) != len(columns):
        raise BadInput(file, f"{where} columns must name one or more distinct, non-empty columns, got {columns!r}",
                       field="columns")
    trained = setting(c, "arms", "strings", file, where)
    if not trained:
        raise BadInput(file, f"{where} arms must name the arms trained on this data", field="arms")
    for arm in trained:
        if arm not in arms:
            raise BadInput(file, f"{where} names unknown arm {arm!r}", field="arms")
    n = bounded(c, "n", "integer", file, where, 13, bound="ngram_n")
    threshold = setting(c, "threshold", "number", file, where, 0.0)
    if not 0 <= threshold < 1:
        raise BadInput(file, f"{where} threshold is the fraction of a text's n-grams above which it is contaminated, "
                       f"in [0, 1) (0: any shared n-gram); got {threshold!r}", field="threshold")
    fields = setting(c, "fields", "strings", file, where, list(CONTAMINATION_FIELDS))
    if not fields or any(f not in CONTAMINATION_FIELDS for f in fields) or len(set(fields)) != len(fields):
        raise BadInput(file, f"{where} fields must list one or both of {', '.join(CONTAMINATION_FIELDS)}, got "
                       f"{fields!r}", field="fields")
    short = setting(c, "short", "string", file, where, "whole")
    if short not in SHORT_TEXTS:
        raise BadInput(file, f"{where} short must be one of {', '.join(repr(s) for s in SHORT_TEXTS)}, not "
                       f"{short!r}", field="short")
    decide = setting(c, "decide", "string", file, where, "both")
    if decide not in CONTAMINATION_DECIDE:
        raise BadInput(file, f"{where} decide must be one of {', '.join(repr(d) for d in CONTAMINATION_DECIDE)}, not "
                       f"{decide!r}", field="decide")
    record = setting(c, "record", "string", file, where, f"results/contamination-{name}/contamination.json")
    if not record.strip():
        raise BadInput(file, f"{where} record names an empty path", field="record")
    return Contamination(training=tuple(training), arms=tuple(trained), record=record, columns=tuple(columns), n=n,
                         threshold=float(threshold), fields=tuple(f for f in CONTAMINATION_FIELDS if f in fields),
                         short=short, decide=decide)
