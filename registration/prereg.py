"""The registration: an experiment's prereg.toml parsed into one typed record.

Everything a run does is read from here — arms, models, judges, rubric, hypotheses, bootstrap
settings, the audit gate — so a report can always point to what was registered before scoring.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.errors import BadInput
from models.spec import AdapterSpec, ModelSpec, Runtime

from . import renamed, toml_lines, vocabulary
from .questions import DEFAULT_TAG_SEPARATOR, FIELDS, TABULAR, SetFormat
from .rubric import RUBRICS_DIR, Rubric, rubric_dir
from .scrub import DEFAULT_SCRUB, refusal, scrub_patterns
from .seal import inside
from .spec import (
    BOUNDS,
    CODE_TIMEOUT_S,
    ArmSpec,
    bounded,
    check_keys,
    parse_adapters,
    parse_arms,
    parse_generation,
    parse_models,
    parse_runtime,
    plain_name,
    setting,
)
from .toml_lines import table
from .vocabulary import DEFAULT_METHOD, DEFAULT_RULE, KINDS, METHODS


@dataclass(frozen=True)
class JudgeSpec:
    name: str
    model: str  # key into [models]
    quant: str | None
    requires_env: str | None = None
    generation: tuple[tuple[str, Any], ...] = ()  # registered overrides of the rubric's generation settings

    def rubric(self, rubric: Rubric) -> Rubric:
        """The rubric as this judge runs it: e.g. a Claude judge registers temperature "provider-default"
        because the API accepts none, and settings verification then expects nothing to be sent."""
        if not self.generation:
            return rubric
        return replace(rubric, generation=replace(rubric.generation, **dict(self.generation)))


# The keys each table accepts (docs/reference/registration.md is generated from them; tests/test_docs_site.py
# checks it).
EXPERIMENT_KEYS = ("name", "description", "seed", "sets")
RUNTIME_KEYS = ("threads", "n_ctx", "seed", "cpu_extra_buffers", "gpu_layers", "parallel_sequences", "flash_attn",
                "max_cost_usd")
JUDGE_KEYS = ("rubric", "verdict_attempts", "mode", "panel", "scrub", "scrub_drop", "panel_rule", "retest",
              "min_gold_agreement")
JUDGE_TABLE_KEYS = ("model", "quant", "requires_env", "generation")
ANALYSIS_KEYS = ("resamples", "method", "seed", "max_unscored", "decision_rule", "min_clusters", "calibration_sims",
                 "calibration_ceiling", "family", "style", "judge_error", "target_power", "assumed_gold_correlation",
                 "pass_score")
HYPOTHESIS_KEYS = ("id", "text", "a", "b", "quant", "kind", "margin", "alpha", "subset")
AUDIT_KEYS = ("log", "arms", "gate", "k", "max_gamed", "gate_on_detectors", "override")
GOLD_KEYS = ("labels", "program", "timeout_s")
CONTAMINATION_KEYS = ("training", "columns", "arms", "n", "threshold", "fields", "short", "decide", "record")
SET_KEYS = ("columns", "tag_separator")  # [sets."FILE"]: how a CSV or parquet set's columns are read
GOLD_PROGRAM = re.compile(r"^(?P<file>[^:]+\.py):(?P<function>[A-Za-z_][A-Za-z0-9_]*)$")  # "file.py:function"
# What each top-level key must be: a table, a table of tables ([models.NAME]) or an array of tables ([[arms]]).
SHAPES = {"experiment": "table", "runtime": "table", "models": "tables", "adapters": "tables", "arms": "array",
          "judge": "table", "judges": "tables", "analysis": "table", "hypotheses": "array", "audit": "table",
          "gold": "table", "sets": "tables", "contamination": "table"}
TABLES = tuple(SHAPES)
MODES = ("single", "pairwise", "both")
PANELS = ("first-available", "all-available")
# Who decides when several judges scored: the primary judge alone (the default, as before panel rules existed), a
# verdict every judge of the panel reaches on its own scores, or the judges that share a model family with neither
# arm of the hypothesis, on the per-question mean of their scores.
PANEL_RULES = ("primary", "all-agree", "unrelated-mean")
# How the registered hypotheses are controlled as one family (judge.numbers.biases.family_decisions): Holm's step-down
# (the default: no order needed, uniformly more powerful than Bonferroni), a fixed sequence in the registered order of
# [[hypotheses]], or no adjustment (each hypothesis at its own alpha).
FAMILIES = ("holm", "fixed-sequence", "none")
# Style covariates a paired difference may be adjusted for, over a hypothesis's own pairs
# (judge.numbers.biases.style_counts): answer length is always one of them.
STYLES = ("length", "headers", "list_items", "citations")
JUDGE_ERROR = ("report", "decide")  # what gold does to a decision: an interval beside it, or its bound
AGREEMENT_RANGE = (-1.0, 1.0)  # quadratic-weighted kappa's range: where a min_gold_agreement floor may lie
# [contamination] (audit.contamination): the texts of a question checked against the training data; what a text
# shorter than n tokens does (matched whole, as the GPT-3 paper does, or left unchecked, as lm-evaluation-harness
# does); and how a hypothesis about an arm trained on that data is decided: on every question and on the clean ones,
# both reported, or on the clean questions only.
CONTAMINATION_FIELDS = ("question", "reference")
SHORT_TEXTS = ("whole", "skip")
CONTAMINATION_DECIDE = ("both", "clean_only")


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
    method: str = DEFAULT_METHOD  # registration.vocabulary.METHODS
    seed: int = 0
    max_unscored: float = 0.10  # above this share of unscored answers in either arm: inconclusive
    rule: str = DEFAULT_RULE  # the decision rule (registration.vocabulary.RULES)
    min_clusters: int = 10  # a set that declares clusters: fewer clusters than this in a comparison is inconclusive
    calibration_sims: int = 200  # data sets simulated at the boundary to measure each decision's false-claim rate
    calibration_ceiling: float | None = None  # the calibration line flags a rate above it; None: 2 * alpha
    family: str = "holm"  # FAMILIES: how the registered hypotheses are adjusted as one family
    style: tuple[str, ...] = ("length",)  # STYLES the style caution adjusts for; length always first
    # "report": the prediction-powered (gold-corrected) interval is printed beside each decision, with a caution
    # where it would decide otherwise; "decide": it is the decision's bound
    judge_error: str = "report"
    # the power the gold-corrected decision should have at the margin: `judge label --sample` and the report say how
    # many labelled questions reach it (judge.numbers.stats.ppi_power)
    target_power: float = 0.8
    # before gold exists, the correlation of the gold and the judge's paired differences that power is stated at
    assumed_gold_correlation: float = 0.5
    # a sample passes when its score is at or above this (pass^k, pass@k: judge.stats.stability); None: the rubric's
    # highest score
    pass_score: float | None = None


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


@dataclass(frozen=True)
class Gold:
    """Where gold scores come from (judge.gold.sources reads them): sealed labels files and a gold program, both inside
    the experiment folder, so the seal covers them."""

    labels: tuple[str, ...] = ()  # JSONL files, relative to the experiment folder
    program: str | None = None  # "file.py:function" in the experiment folder: (question, reference, answer) -> score
    # the program runs in a child process (arms.contained): its import, and each call, must finish within this many
    # seconds, or the child is stopped and the answer's gold is an error saying so
    timeout_s: float = CODE_TIMEOUT_S


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
    scrub: tuple[str, ...]  # the patterns applied: the defaults not dropped, then the registered ones
    hypotheses: list[Hypothesis]
    analysis: Analysis
    audit: AuditGate | None
    runtime: Runtime
    gold: Gold | None = None  # [gold]: None when not registered
    judge_panel_rule: str = "primary"  # PANEL_RULES: who decides when several judges scored
    judge_retest: int = 0  # verdicts of each judge asked again (a seeded draw of labels), for test-retest reliability
    # [judge] min_gold_agreement: a floor on the lower bound of the deciding judge's quadratic-weighted kappa
    # against gold (judge.numbers.stats.judge_error); below it, or with no gold to measure it, a decision is
    # inconclusive
    min_gold_agreement: float | None = None
    set_formats: dict[str, SetFormat] = field(default_factory=dict)  # [sets."FILE"], by the name [experiment] gives
    # an old key read under its new name (registration.renamed): one notice each, naming file, line and old -> new
    renamed_keys: tuple[str, ...] = ()
    contamination: Contamination | None = None  # [contamination]: None when not registered

    def arm(self, name: str) -> ArmSpec:
        return next(a for a in self.arms if a.name == name)

    def selected_arms(self, names: str | None) -> list[str]:
        """The arms named by `--arms` (comma-separated; all when empty), in registered order."""
        registered = [a.name for a in self.arms]
        if not names:
            return registered
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        for n in wanted:
            if n not in registered:
                raise BadInput(self.dir / "prereg.toml",
                               f"--arms names unregistered arm {n!r}; registered: {registered}", field="arms")
        return [n for n in registered if n in wanted]

    def set_paths(self) -> list[Path]:
        """Each question set's real path, refused unless inside the experiment folder (where the seal covers it)."""
        return [inside(self.dir, s, self.dir / "prereg.toml", "sets") for s in self.sets]

    def set_formats_by_path(self) -> dict[Path, SetFormat]:
        """Each CSV or parquet set's registered column mapping by its real path, as load_questions takes them."""
        return {inside(self.dir, s, self.dir / "prereg.toml", "sets"): f for s, f in self.set_formats.items()}

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
                if by[n] in chosen:
                    raise BadInput("--judges", f"names judge {n!r} twice", field="judges")
                if by[n] not in available:
                    raise BadInput(self.dir / "prereg.toml", f"judge {n!r} needs {by[n].requires_env} to be set",
                                   field="requires_env")
                chosen.append(by[n])
            return chosen
        return available if self.judge_panel == "all-available" else available[:1]


def load_experiment(exp_dir: Path) -> Experiment:
    """Parse and check prereg.toml; anything wrong is BadInput naming the file, line and key."""
    exp_dir = Path(exp_dir)
    file = exp_dir / "prereg.toml"
    if not file.exists():
        raise BadInput(file, "no prereg.toml in the experiment folder")
    text, doc = toml_lines.read(file)
    written: dict[tuple, str] = {}
    try:
        check_shapes(doc, file)
        doc, notices, written = renamed.migrate(doc, text, file)
        return replace(_experiment(exp_dir, file, doc), renamed_keys=notices)
    except BadInput as e:
        at = getattr(e, "table", None) or ()
        old = written.get((*at, e.field))
        if old is not None and e.line is None:  # about a value registered under the old name: point at that key
            e = BadInput(e.file, e.message, field=old)
            e.table = at
        raise toml_lines.located(e, text) if e.file == str(file) else e from None


def check_shapes(doc: dict, file: Path) -> None:
    """Each top-level key of the shape SHAPES gives it, and no string holding a NUL (a path or environment variable
    name with one cannot even be looked up), before anything reads further."""
    what = {"table": "a table [{0}]", "tables": "tables [{0}.NAME]", "array": "an array of tables [[{0}]]"}
    for key, shape in SHAPES.items():
        if key not in doc:
            continue
        value = doc[key]
        if shape == "array":
            ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
        else:
            ok = isinstance(value, dict) and (shape == "table" or all(isinstance(v, dict) for v in value.values()))
        if not ok:
            inner = (shape == "tables" and isinstance(value, dict)
                     and next(k for k, v in value.items() if not isinstance(v, dict)))
            with table(*((key,) if inner else ())):
                raise BadInput(file, f"must be {what[shape].format(key)}", field=inner or key)
    _no_nul(doc, file, ())


def _no_nul(value: Any, file: Path, path: tuple) -> None:
    keys = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in keys:
        if (isinstance(k, str) and "\0" in k) or (isinstance(v, str) and "\0" in v):
            at = (*path, k)
            i = max(j for j, p in enumerate(at) if isinstance(p, str))  # the key holding it (a list is a key's value)
            with table(*at[:i]):
                raise BadInput(file, "holds a NUL character (\\u0000), which no name, path or text may hold",
                               field=at[i])
        _no_nul(v, file, (*path, k))


def _experiment(exp_dir: Path, file: Path, doc: dict) -> Experiment:
    check_keys(doc, TABLES, file, "prereg.toml")
    with table("experiment"):
        exp = doc.get("experiment")
        if not isinstance(exp, dict):
            raise BadInput(file, "missing [experiment] table", field="experiment")
        check_keys(exp, EXPERIMENT_KEYS, file, "[experiment]")
        name = plain_name(setting(exp, "name", "string", file, "[experiment]"), file, "[experiment]", "name")
        seed = bounded(exp, "seed", "integer", file, "[experiment]")
        setting(exp, "description", "string", file, "[experiment]", "")
        sets = setting(exp, "sets", "strings", file, "[experiment]")
        if not sets:
            raise BadInput(file, "[experiment] sets must name at least one question set file", field="sets")
        if len(set(sets)) != len(sets):
            raise BadInput(file, f"[experiment] sets lists a file twice: {sets}", field="sets")
    formats = {}
    for rel, t in (doc.get("sets") or {}).items():
        with table("sets", rel):
            formats[rel] = _set_format(rel, t, file, sets)
    with table("runtime"):
        check_keys(doc.get("runtime") or {}, RUNTIME_KEYS, file, "[runtime]")
        runtime = parse_runtime(doc, file)
    models = parse_models(doc, file)
    adapters = parse_adapters(doc, file)
    arms = parse_arms(doc, file, models, adapters)
    arm_names = {a.name: a for a in arms}
    with table("judge"):
        jt = doc.get("judge") or {}
        check_keys(jt, JUDGE_KEYS, file, "[judge]")
        rubric = plain_name(setting(jt, "rubric", "string", file, "[judge]"), file, "[judge]", "rubric")
        if not (rubric_dir(rubric, exp_dir) / f"{rubric}.toml").is_file():
            known = sorted({p.stem for d in (exp_dir / "rubrics", RUBRICS_DIR) for p in d.glob("*.toml")})
            raise BadInput(file, f"[judge] names unknown rubric {rubric!r}; known: {', '.join(known)}", field="rubric")
        attempts = bounded(jt, "verdict_attempts", "integer", file, "[judge]", 2, bound="judge_attempts")
        mode = setting(jt, "mode", "string", file, "[judge]", "single")
        if mode not in MODES:
            raise BadInput(file, f"[judge] mode must be one of {MODES}", field="mode")
        panel = setting(jt, "panel", "string", file, "[judge]", "first-available")
        if panel not in PANELS:
            raise BadInput(file, f"[judge] panel must be one of {PANELS}", field="panel")
        extra_scrub = setting(jt, "scrub", "strings", file, "[judge]", [])
        for i, pattern in enumerate(extra_scrub):
            if (why := refusal(pattern)) is not None:
                raise BadInput(file, f"[judge] scrub pattern #{i + 1} {pattern!r} is not a regular expression RE2 "
                               f"runs: {why} (a registered scrub pattern runs on RE2, which never backtracks: no "
                               "backreferences, lookarounds or \\Z)", field="scrub")
        drop = setting(jt, "scrub_drop", "strings", file, "[judge]", [])
        for name in drop:
            if name not in DEFAULT_SCRUB:
                raise BadInput(file, f"[judge] scrub_drop names no default pattern {name!r}; the defaults: "
                               f"{', '.join(DEFAULT_SCRUB)}", field="scrub_drop")
        scrub = scrub_patterns(tuple(extra_scrub), tuple(drop))
        panel_rule = setting(jt, "panel_rule", "string", file, "[judge]", "primary")
        if panel_rule not in PANEL_RULES:
            raise BadInput(file, f"[judge] panel_rule must be one of {', '.join(repr(r) for r in PANEL_RULES)}, not "
                           f"{panel_rule!r}", field="panel_rule")
        retest = bounded(jt, "retest", "integer", file, "[judge]", 0)
        floor = setting(jt, "min_gold_agreement", "number", file, "[judge]", None)
        low, high = AGREEMENT_RANGE
        if floor is not None and not low <= floor <= high:
            raise BadInput(file, f"[judge] min_gold_agreement is a floor on a weighted kappa, which lies in "
                           f"[{low:g}, {high:g}]; got {floor!r}", field="min_gold_agreement")
    judges = []
    for jname, t in (doc.get("judges") or {}).items():
        with table("judges", jname):
            judges.append(_judge(jname, t, file, models))
    if not judges:
        raise BadInput(file, "no [judges.*] registered", field="judges")
    hyps: list[Hypothesis] = []
    for i, t in enumerate(doc.get("hypotheses") or []):
        with table("hypotheses", i):
            hyps.append(_hypothesis(f"[[hypotheses]] #{i + 1}", t, file, arm_names, hyps))
    with table("analysis"):
        analysis = _analysis(doc.get("analysis") or {}, file, seed)
    if panel_rule == "unrelated-mean":
        with table("judge"):
            _unrelated_judges(hyps, arm_names, judges, models, file)
    audit = None
    if "audit" in doc:
        with table("audit"):
            audit = _audit(doc["audit"], file, arm_names)
    gold = None
    if "gold" in doc:
        with table("gold"):
            gold = _gold(doc["gold"], file, exp_dir)
    contamination = None
    if "contamination" in doc:
        with table("contamination"):
            contamination = _contamination(doc["contamination"], file, exp_dir, arm_names, name)
            if contamination.decide == "clean_only" and analysis.judge_error == "decide":
                raise BadInput(file, '[contamination] decide = "clean_only" leaves the contaminated questions out of '
                               'the judge\'s decisions, but [analysis] judge_error = "decide" decides by the '
                               "gold-corrected interval over every question: register one or the other",
                               field="decide")
    return Experiment(
        dir=exp_dir, name=name, seed=seed, sets=tuple(sets), models=models, adapters=adapters, arms=arms,
        rubric=rubric, judges=judges, judge_attempts=attempts, judge_mode=mode, judge_panel=panel, scrub=tuple(scrub),
        hypotheses=hyps, analysis=analysis, audit=audit, runtime=runtime, gold=gold, judge_panel_rule=panel_rule,
        judge_retest=retest, min_gold_agreement=None if floor is None else float(floor), set_formats=formats,
        contamination=contamination,
    )


def _set_format(rel: str, t: dict, file: Path, sets: list[str]) -> SetFormat:
    """[sets."FILE"]: the column of each of a tabular set's fields and the separator of its tags; it must name a
    CSV or parquet file of [experiment] sets, so no mapping is registered that nothing reads."""
    where = f'[sets."{rel}"]'
    check_keys(t, SET_KEYS, file, where)
    if rel not in sets:
        raise BadInput(file, f"{where} names no file of [experiment] sets {sets}", field=rel)
    if not rel.lower().endswith(TABULAR):
        raise BadInput(file, f"{where}: only a {' or '.join(TABULAR)} set is read through a column mapping; a JSONL "
                       "set names its fields as the project does", field=rel)
    columns = t.get("columns", {})
    if not isinstance(columns, dict):
        raise BadInput(file, f"in {where} must be a table of field = \"column\", got {columns!r}", field="columns")
    for key, column in columns.items():
        if key not in FIELDS:
            raise BadInput(file, f"{where} columns maps no field {key!r}; the fields: {', '.join(FIELDS)}", field=key)
        if not isinstance(column, str) or not column:
            raise BadInput(file, f"{where} columns.{key} must be a non-empty column name, got {column!r}", field=key)
    named = list(columns.values())
    if len(set(named)) != len(named):
        raise BadInput(file, f"{where} columns maps two fields to one column: {columns}", field="columns")
    separator = setting(t, "tag_separator", "string", file, where, DEFAULT_TAG_SEPARATOR)
    if not separator:
        raise BadInput(file, f"{where} tag_separator must not be empty", field="tag_separator")
    return SetFormat(tuple(columns.items()), separator)


def unrelated(judge: JudgeSpec, arms: list[ArmSpec], models: dict[str, ModelSpec]) -> bool:
    """A judge that shares a registered model family with none of `arms` (a judge or arm without a family shares
    none, as the self-preference warning reads it)."""
    family = models[judge.model].family
    return not family or all(models[a.model].family != family for a in arms)


def _unrelated_judges(hyps: list[Hypothesis], arms: dict[str, ArmSpec], judges: list[JudgeSpec],
                      models: dict[str, ModelSpec], file: Path) -> None:
    """panel_rule "unrelated-mean" decides on judges unrelated to both arms: a hypothesis without one could never be
    decided, so it is refused now, before any call."""
    for h in hyps:
        if not any(unrelated(j, [arms[h.a], arms[h.b]], models) for j in judges):
            fams = sorted({str(models[arms[x].model].family) for x in (h.a, h.b)})
            raise BadInput(file, f'[judge] panel_rule = "unrelated-mean" decides on judges that share a model family '
                           f"with neither arm, and hypothesis {h.id!r} has none: every registered judge shares a "
                           f"family with {h.a!r} or {h.b!r} ({', '.join(fams)})", field="panel_rule")


def _judge(name: str, t: Any, file: Path, models: dict[str, ModelSpec]) -> JudgeSpec:
    where = f"[judges.{name}]"
    check_keys(t, JUDGE_TABLE_KEYS, file, where)
    model = setting(t, "model", "string", file, where)
    if model not in models:
        raise BadInput(file, f"{where} names unknown model {model!r}", field="model")
    overrides = t.get("generation", {})
    if not isinstance(overrides, dict):
        raise BadInput(file, f"{where} generation must be a table of settings", field="generation")
    parsed = parse_generation(overrides, file, f"{where} generation")
    return JudgeSpec(name=name, model=model, quant=setting(t, "quant", "string", file, where, None),
                     requires_env=setting(t, "requires_env", "string", file, where, None),
                     generation=tuple((k, getattr(parsed, k)) for k in sorted(overrides)))


def _hypothesis(where: str, t: Any, file: Path, arms: dict[str, ArmSpec], before: list[Hypothesis]) -> Hypothesis:
    check_keys(t, HYPOTHESIS_KEYS, file, where)
    hid = setting(t, "id", "string", file, where)
    if not hid.strip():
        raise BadInput(file, f"{where} id must not be empty", field="id")
    if any(h.id == hid for h in before):
        raise BadInput(file, f"{where} repeats hypothesis id {hid!r}: ids must be unique (reports and verify key "
                       "comparisons by id)", field="id")
    quant = setting(t, "quant", "string", file, where)
    for side in ("a", "b"):
        arm = setting(t, side, "string", file, where)
        if arm not in arms:
            raise BadInput(file, f"{where} names unknown arm {arm!r}", field=side)
        if quant not in arms[arm].quants:
            raise BadInput(file, f"{where}: arm {arm!r} has no quant {quant!r}", field="quant")
    if t["a"] == t["b"]:
        raise BadInput(file, f"{where} compares arm {t['a']!r} with itself", field="b")
    kind = setting(t, "kind", "string", file, where)
    if kind not in KINDS:
        raise BadInput(file, f"{where} kind must be one of {KINDS}", field="kind")
    margin = bounded(t, "margin", "number", file, where)
    if kind == "equivalence" and margin == 0:
        raise BadInput(file, f"{where} an equivalence margin of 0 can never be shown: register the largest "
                       "difference that still counts as equivalent", field="margin")
    alpha = setting(t, "alpha", "number", file, where)
    if not 0 < alpha < 0.5:
        raise BadInput(file, f"{where} alpha (one-sided) must be in (0, 0.5), got {alpha!r}", field="alpha")
    subset = setting(t, "subset", "strings", file, where, [])
    return Hypothesis(id=hid, a=t["a"], b=t["b"], quant=quant, kind=kind, margin=float(margin), alpha=float(alpha),
                      subset=tuple(subset), text=setting(t, "text", "string", file, where, ""))


def _analysis(at: Any, file: Path, seed: int) -> Analysis:
    where = "[analysis]"
    check_keys(at, ANALYSIS_KEYS, file, where)
    resamples = bounded(at, "resamples", "integer", file, where, 10000)
    method = setting(at, "method", "string", file, where, DEFAULT_METHOD)
    if method not in METHODS:
        raise BadInput(file, f"{where} method must be {' or '.join(repr(m) for m in METHODS)}", field="method")
    max_unscored = setting(at, "max_unscored", "number", file, where, 0.10)
    if not 0 <= max_unscored <= 1:
        raise BadInput(file, f"{where} max_unscored is a share of answers, in [0, 1]; got {max_unscored!r}",
                       field="max_unscored")
    rule = setting(at, "decision_rule", "string", file, where, DEFAULT_RULE)
    if rule not in vocabulary.RULES:  # read when parsed: the words both paths' rule registries are held to
        raise BadInput(file, f"{where} decision_rule must be one of {', '.join(map(repr, vocabulary.RULES))}, not "
                       f"{rule!r}", field="decision_rule")
    counts = {key: bounded(at, key, "integer", file, where, default)
              for key, default in (("min_clusters", 10), ("calibration_sims", 200))}
    work = BOUNDS["calibration_work"]
    if counts["calibration_sims"] * resamples > work.high:
        raise BadInput(file, f"{where} calibration_sims x resamples = {counts['calibration_sims'] * resamples:,} "
                       f"exceeds {work.high:,} ({work.why}): register fewer of either", field="calibration_sims")
    ceiling = setting(at, "calibration_ceiling", "number", file, where, None)
    if ceiling is not None and not 0 < ceiling < 1:
        raise BadInput(file, f"{where} calibration_ceiling must be a number in (0, 1), not {ceiling!r}",
                       field="calibration_ceiling")
    family = setting(at, "family", "string", file, where, "holm")
    if family not in FAMILIES:
        raise BadInput(file, f"{where} family must be one of {', '.join(repr(f) for f in FAMILIES)}, not {family!r}",
                       field="family")
    style = setting(at, "style", "strings", file, where, ["length"])
    for name in style:
        if name not in STYLES:
            raise BadInput(file, f"{where} style names {name!r}, which is not a style covariate; the covariates: "
                           f"{', '.join(STYLES)}", field="style")
    if len(set(style)) != len(style):
        raise BadInput(file, f"{where} style lists a covariate twice: {style}", field="style")
    judge_error = setting(at, "judge_error", "string", file, where, "report")
    if judge_error not in JUDGE_ERROR:
        raise BadInput(file, f"{where} judge_error must be one of {', '.join(repr(x) for x in JUDGE_ERROR)}, not "
                       f"{judge_error!r}", field="judge_error")
    target_power = setting(at, "target_power", "number", file, where, 0.8)
    if not 0 < target_power < 1:
        raise BadInput(file, f"{where} target_power is a probability in (0, 1), not {target_power!r}",
                       field="target_power")
    rho = setting(at, "assumed_gold_correlation", "number", file, where, 0.5)
    if not 0 <= rho <= 1:
        raise BadInput(file, f"{where} assumed_gold_correlation is a correlation the judge's scores help by, in "
                       f"[0, 1], not {rho!r}", field="assumed_gold_correlation")
    pass_score = setting(at, "pass_score", "number", file, where, None)  # inside the rubric's scale: judge.preflight
    return Analysis(resamples=resamples, method=method, seed=bounded(at, "seed", "integer", file, where, seed),
                    max_unscored=float(max_unscored), rule=rule, min_clusters=counts["min_clusters"],
                    calibration_sims=counts["calibration_sims"],
                    calibration_ceiling=None if ceiling is None else float(ceiling), family=family,
                    style=tuple(s for s in STYLES if s == "length" or s in style), judge_error=judge_error,
                    target_power=float(target_power), assumed_gold_correlation=float(rho), pass_score=pass_score)


def _audit(a: Any, file: Path, arms: dict[str, ArmSpec]) -> AuditGate:
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


def _gold(g: Any, file: Path, exp_dir: Path) -> Gold:
    """[gold]: the files named must lie inside the experiment folder (the seal covers them); whether they exist and
    what they hold is checked before the first model call (judge.gold.sources.check_gold), as for question sets."""
    where = "[gold]"
    check_keys(g, GOLD_KEYS, file, where)
    labels = setting(g, "labels", "strings", file, where, [])
    for rel in labels:
        if not rel.strip():
            raise BadInput(file, f"{where} labels names an empty path", field="labels")
        inside(exp_dir, rel, file, "labels")
    if len(set(labels)) != len(labels):
        raise BadInput(file, f"{where} labels lists a file twice: {labels}", field="labels")
    program = setting(g, "program", "string", file, where, None)
    if program is not None:
        m = GOLD_PROGRAM.match(program)
        if m is None:
            raise BadInput(file, f"{where} program must be \"file.py:function\" (a Python file in the experiment "
                           f"folder and the function in it), got {program!r}", field="program")
        inside(exp_dir, m.group("file"), file, "program")
    timeout = bounded(g, "timeout_s", "number", file, where, CODE_TIMEOUT_S, bound="code_timeout_s")
    return Gold(labels=tuple(labels), program=program, timeout_s=float(timeout))


def _contamination(c: Any, file: Path, exp_dir: Path, arms: dict[str, ArmSpec], name: str) -> Contamination:
    """[contamination]: the training files must lie inside the experiment folder (the seal covers them); what they
    hold is read by `python -m audit contamination` and again by `judge run` (audit.contamination)."""
    where = "[contamination]"
    check_keys(c, CONTAMINATION_KEYS, file, where)
    training = setting(c, "training", "strings", file, where)
    if not training:
        raise BadInput(file, f"{where} training must name at least one training data file", field="training")
    for rel in training:
        if not rel.strip():
            raise BadInput(file, f"{where} training names an empty path", field="training")
        inside(exp_dir, rel, file, "training")
    if len(set(training)) != len(training):
        raise BadInput(file, f"{where} training lists a file twice: {training}", field="training")
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
