"""The registration: an experiment's prereg.toml parsed into one typed record.

Everything a run does is read from here — arms, models, judges, rubric, hypotheses, bootstrap
settings, the audit gate — so a report can always point to what was registered before scoring.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from arms.errors import BadInput
from arms.spec import (AdapterSpec, ArmSpec, ModelSpec, Runtime, check_keys, parse_adapters, parse_arms,
                       parse_generation, parse_models, parse_runtime)

from .blinding import DEFAULT_SCRUB
from .judging import JudgeSpec

KINDS = ("non_inferiority", "superiority", "equivalence")
TABLES = ("experiment", "runtime", "models", "adapters", "arms", "judge", "judges", "analysis", "hypotheses", "audit")
MODES = ("single", "pairwise", "both")
PANELS = ("first-available", "all-available")


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
    rule: str = "bootstrap_and_t"  # the decision interval (judge.stats.RULES)
    min_clusters: int = 10  # a set that declares clusters: fewer clusters than this in a comparison is inconclusive
    calibration_sims: int = 200  # data sets simulated at the boundary to measure each decision's false-claim rate
    calibration_ceiling: float | None = None  # above this simulated rate a claim is inconclusive; None: 2 * alpha


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
    judge_mode: str  # "single" | "pairwise" | "both"
    judge_panel: str  # "first-available" (primary only) | "all-available"
    scrub: tuple[str, ...]
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

    def panel(self, names: str | None = None) -> list[JudgeSpec]:
        """The judges of this run, primary first: named on the command line, or as registered."""
        available = self.available_judges()
        if names:
            by = {j.name: j for j in self.judges}
            chosen = []
            for n in (x.strip() for x in names.split(",") if x.strip()):
                if n not in by:
                    raise BadInput(self.dir / "prereg.toml", f"--judges names unregistered judge {n!r}", field="judges")
                if by[n] not in available:
                    raise BadInput(self.dir / "prereg.toml", f"judge {n!r} needs {by[n].requires_env} to be set",
                                   field="requires_env")
                chosen.append(by[n])
            return chosen
        return available if self.judge_panel == "all-available" else available[:1]


def load_experiment(exp_dir: Path) -> Experiment:
    exp_dir = Path(exp_dir)
    file = exp_dir / "prereg.toml"
    if not file.exists():
        raise BadInput(file, "no prereg.toml in the experiment folder")
    try:
        doc = tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as e:
        raise BadInput(file, f"not valid TOML: {e}", line=getattr(e, "lineno", None)) from None
    check_keys(doc, TABLES, file, "prereg.toml")
    exp = doc.get("experiment")
    if not isinstance(exp, dict):
        raise BadInput(file, "missing [experiment] table", field="experiment")
    check_keys(exp, ("name", "description", "seed", "sets"), file, "[experiment]")
    check_keys(doc.get("runtime") or {}, ("threads", "n_ctx", "seed"), file, "[runtime]")
    check_keys(doc.get("judge") or {}, ("rubric", "attempts", "mode", "panel", "scrub"), file, "[judge]")
    check_keys(doc.get("analysis") or {}, ("resamples", "method", "seed", "max_unscored", "rule", "min_clusters",
                                           "calibration_sims", "calibration_ceiling"), file, "[analysis]")
    if "audit" in doc:
        check_keys(doc["audit"], ("log", "arms", "gate", "k", "max_gamed", "gate_on_detectors", "override"), file,
                   "[audit]")
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
        check_keys(t, ("model", "quant", "requires_env", "generation"), file, f"[judges.{name}]")
        if t.get("model") not in models:
            raise BadInput(file, f"[judges.{name}] names unknown model {t.get('model')!r}", field="model")
        overrides = t.get("generation", {})
        if not isinstance(overrides, dict):
            raise BadInput(file, f"[judges.{name}] generation must be a table of settings", field="generation")
        parsed = parse_generation(overrides, file, f"[judges.{name}] generation")
        judges.append(JudgeSpec(name=name, model=t["model"], quant=t.get("quant"), requires_env=t.get("requires_env"),
                                generation=tuple((k, getattr(parsed, k)) for k in sorted(overrides))))
    if not judges:
        raise BadInput(file, "no [judges.*] registered", field="judges")

    mode = jt.get("mode", "single")
    if mode not in MODES:
        raise BadInput(file, f"[judge] mode must be one of {MODES}", field="mode")
    panel = jt.get("panel", "first-available")
    if panel not in PANELS:
        raise BadInput(file, f"[judge] panel must be one of {PANELS}", field="panel")
    scrub = jt.get("scrub", list(DEFAULT_SCRUB))
    for i, pattern in enumerate(scrub):
        try:
            re.compile(pattern)
        except (re.error, TypeError) as e:
            raise BadInput(file, f"[judge] scrub pattern #{i + 1} is not a regular expression: {e}", field="scrub") from None

    hyps = []
    for i, t in enumerate(doc.get("hypotheses") or []):
        where = f"[[hypotheses]] #{i + 1}"
        check_keys(t, ("id", "text", "a", "b", "quant", "kind", "margin", "alpha", "subset"), file, where)
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
                        seed=int(at.get("seed", exp["seed"])), max_unscored=float(at.get("max_unscored", 0.10)),
                        rule=at.get("rule", "bootstrap_and_t"), min_clusters=at.get("min_clusters", 10),
                        calibration_sims=at.get("calibration_sims", 200),
                        calibration_ceiling=at.get("calibration_ceiling"))
    if analysis.method not in ("percentile", "bca"):
        raise BadInput(file, "[analysis] method must be 'percentile' or 'bca'", field="method")
    if analysis.rule not in ("bootstrap", "bootstrap_and_t"):
        raise BadInput(file, "[analysis] rule must be 'bootstrap' or 'bootstrap_and_t'", field="rule")
    for key in ("min_clusters", "calibration_sims"):
        value = getattr(analysis, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BadInput(file, f"[analysis] {key} must be an integer >= 1, not {value!r}", field=key)
    ceiling = analysis.calibration_ceiling
    if ceiling is not None and (isinstance(ceiling, bool) or not isinstance(ceiling, (int, float))
                                or not 0 < ceiling < 1):
        raise BadInput(file, f"[analysis] calibration_ceiling must be a number in (0, 1), not {ceiling!r}",
                       field="calibration_ceiling")
    audit = None
    if "audit" in doc:
        a = doc["audit"]
        if "log" not in a:
            raise BadInput(file, "missing in [audit]", field="log")
        gated = tuple(a.get("arms", []))
        for name in gated:
            if name not in arm_names:
                raise BadInput(file, f"[audit] names unknown arm {name!r}", field="arms")
        override = a.get("override")
        if override is not None and (not isinstance(override, str) or not override.strip()):
            raise BadInput(file, "[audit] override must state its reason", field="override")
        audit = AuditGate(log=a["log"], arms=gated, gate=a.get("gate", f"results/audit-{Path(a['log']).stem}/gate.json"),
                          k=int(a.get("k", 40)), max_gamed=int(a.get("max_gamed", 4)),
                          gate_on_detectors=bool(a.get("gate_on_detectors", False)), override=override)
    return Experiment(
        dir=exp_dir, name=exp["name"], seed=int(exp["seed"]), sets=tuple(exp["sets"]), models=models,
        adapters=adapters, arms=arms, rubric=jt["rubric"], judges=judges, judge_attempts=int(jt.get("attempts", 2)),
        judge_mode=mode, judge_panel=panel, scrub=tuple(scrub),
        hypotheses=hyps, analysis=analysis, audit=audit,
        runtime=parse_runtime(doc, file),
    )
