"""The registration: an experiment's prereg.toml parsed into one typed record.

Everything a run does is read from here — arms, models, judges, rubric, hypotheses, bootstrap
settings, the audit gate — so a report can always point to what was registered before scoring.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from arms.errors import BadInput
from arms.load import Runtime
from arms.spec import AdapterSpec, ArmSpec, ModelSpec, parse_adapters, parse_arms, parse_models

from .judging import JudgeSpec

KINDS = ("non_inferiority", "superiority", "equivalence")


@dataclass(frozen=True)
class Hypothesis:
    id: str
    a: str  # reference arm
    b: str  # arm under test: the estimate is mean(b) - mean(a)
    quant: str
    kind: str
    margin: float
    alpha: float
    subset: tuple[str, ...] = ()  # question tags; empty = all questions
    text: str = ""


@dataclass(frozen=True)
class Analysis:
    resamples: int = 10000
    method: str = "percentile"
    seed: int = 0
    max_unscored: float = 0.10  # above this share of unscored answers in either arm: inconclusive


@dataclass(frozen=True)
class AuditGate:
    log: str
    arm: str
    k: int = 40
    max_gamed: int = 4


@dataclass(frozen=True)
class Experiment:
    dir: Path
    name: str
    seed: int
    sets: tuple[str, ...]
    models: dict[str, ModelSpec]
    adapters: dict[str, AdapterSpec]
    arms: list[ArmSpec]
    rubric: str
    judges: list[JudgeSpec]
    judge_attempts: int
    hypotheses: list[Hypothesis]
    analysis: Analysis
    audit: AuditGate | None
    runtime: Runtime

    def arm(self, name: str) -> ArmSpec:
        return next(a for a in self.arms if a.name == name)

    def set_paths(self) -> list[Path]:
        return [self.dir / s for s in self.sets]

    def available_judges(self) -> list[JudgeSpec]:
        """Registered judges whose credentials are present, in registered order; the first is primary."""
        return [j for j in self.judges if not j.requires_env or os.environ.get(j.requires_env)]


def load_experiment(exp_dir: Path) -> Experiment:
    exp_dir = Path(exp_dir)
    file = exp_dir / "prereg.toml"
    if not file.exists():
        raise BadInput(file, "no prereg.toml in the experiment folder")
    try:
        doc = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise BadInput(file, f"not valid TOML: {e}", line=getattr(e, "lineno", None)) from None
    exp = doc.get("experiment")
    if not isinstance(exp, dict):
        raise BadInput(file, "missing [experiment] table", field="experiment")
    for key in ("name", "seed", "sets"):
        if key not in exp:
            raise BadInput(file, "missing in [experiment]", field=key)
    models = parse_models(doc, file)
    adapters = parse_adapters(doc, file)
    arms = parse_arms(doc, file, models, adapters)
    arm_names = {a.name: a for a in arms}

    jt = doc.get("judge") or {}
    if "rubric" not in jt:
        raise BadInput(file, "missing in [judge]", field="rubric")
    judges = []
    for name, t in (doc.get("judges") or {}).items():
        if t.get("model") not in models:
            raise BadInput(file, f"[judges.{name}] names unknown model {t.get('model')!r}", field="model")
        judges.append(JudgeSpec(name=name, model=t["model"], quant=t.get("quant"), requires_env=t.get("requires_env")))
    if not judges:
        raise BadInput(file, "no [judges.*] registered", field="judges")

    hyps = []
    for i, t in enumerate(doc.get("hypotheses") or []):
        where = f"[[hypotheses]] #{i + 1}"
        for key in ("id", "a", "b", "quant", "kind", "margin", "alpha"):
            if key not in t:
                raise BadInput(file, f"missing in {where}", field=key)
        for side in ("a", "b"):
            if t[side] not in arm_names:
                raise BadInput(file, f"{where} names unknown arm {t[side]!r}", field=side)
            if t["quant"] not in arm_names[t[side]].quants:
                raise BadInput(file, f"{where}: arm {t[side]!r} has no quant {t['quant']!r}", field="quant")
        if t["kind"] not in KINDS:
            raise BadInput(file, f"{where} kind must be one of {KINDS}", field="kind")
        if not 0 < float(t["alpha"]) < 0.5:
            raise BadInput(file, f"{where} alpha must be in (0, 0.5)", field="alpha")
        hyps.append(Hypothesis(id=t["id"], a=t["a"], b=t["b"], quant=t["quant"], kind=t["kind"],
                               margin=float(t["margin"]), alpha=float(t["alpha"]), subset=tuple(t.get("subset", [])),
                               text=t.get("text", "")))
    at = doc.get("analysis") or {}
    analysis = Analysis(resamples=int(at.get("resamples", 10000)), method=at.get("method", "percentile"),
                        seed=int(at.get("seed", exp["seed"])), max_unscored=float(at.get("max_unscored", 0.10)))
    if analysis.method not in ("percentile", "bca"):
        raise BadInput(file, "[analysis] method must be 'percentile' or 'bca'", field="method")
    audit = None
    if "audit" in doc:
        a = doc["audit"]
        audit = AuditGate(log=a["log"], arm=a.get("arm", "trained"), k=int(a.get("k", 40)),
                          max_gamed=int(a.get("max_gamed", 4)))
    rt = doc.get("runtime") or {}
    return Experiment(
        dir=exp_dir, name=exp["name"], seed=int(exp["seed"]), sets=tuple(exp["sets"]), models=models,
        adapters=adapters, arms=arms, rubric=jt["rubric"], judges=judges, judge_attempts=int(jt.get("attempts", 2)),
        hypotheses=hyps, analysis=analysis, audit=audit,
        runtime=Runtime(threads=int(rt.get("threads", 1)), n_ctx=int(rt.get("n_ctx", 2048))),
    )
