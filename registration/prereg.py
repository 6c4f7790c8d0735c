"""The registration: an experiment's prereg.toml parsed into one typed record.

Everything a run does is read from here — arms, models, judges, rubric, hypotheses, bootstrap
settings, the audit gate — so a report can always point to what was registered before scoring. Each table is read by
the module named for it (spec: models, adapters, arms, runtime; judges; hypotheses; analysis; gates: audit and
contamination; gold; panel: the panel rules); this module holds the experiment and the loader that reads them in
order and checks what spans tables.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.errors import BadInput
from models.spec import AdapterSpec, ModelSpec, Runtime

from . import renamed, toml_lines
from .analysis import Analysis, parse_analysis
from .comparisons import RegisteredComparison, parse_comparison
from .gates import AuditGate, Contamination, parse_audit, parse_contamination
from .gold import Gold, parse_gold
from .hypotheses import Hypothesis, check_statistic, parse_hypothesis
from .judges import JudgeSpec, parse_judge
from .panel import DEFAULT_PANEL_RULE, PANEL_RULES
from .questions import DEFAULT_TAG_SEPARATOR, FIELDS, TABULAR, SetFormat
from .rubric import RUBRICS_DIR, rubric_dir
from .scrub import DEFAULT_SCRUB, refusal, scrub_patterns
from .seal import inside
from .settings import bounded, check_keys, plain_name, setting
from .spec import ArmSpec, parse_adapters, parse_arms, parse_models, parse_runtime
from .toml_lines import table

# The keys each table accepts (docs/reference/registration.md is generated from them; tests/test_docs_site.py
# checks it); each table's own are beside its parser ([gold]'s come from its registered sources: gold.gold_keys).
EXPERIMENT_KEYS = ("name", "description", "seed", "sets")
RUNTIME_KEYS = ("threads", "n_ctx", "seed", "cpu_extra_buffers", "gpu_layers", "parallel_sequences", "flash_attn",
                "max_cost_usd")
JUDGE_KEYS = ("rubric", "verdict_attempts", "mode", "panel", "scrub", "scrub_drop", "panel_rule", "retest",
              "min_gold_agreement")
SET_KEYS = ("columns", "tag_separator")  # [sets."FILE"]: how a CSV or parquet set's columns are read
# What each top-level key must be: a table, a table of tables ([models.NAME]) or an array of tables ([[arms]]).
SHAPES = {"experiment": "table", "runtime": "table", "models": "tables", "adapters": "tables", "arms": "array",
          "judge": "table", "judges": "tables", "analysis": "table", "hypotheses": "array", "audit": "table",
          "gold": "table", "sets": "tables", "contamination": "table", "comparisons": "array"}
TABLES = tuple(SHAPES)
MODES = ("single", "pairwise", "both")
PANELS = ("first-available", "all-available")
AGREEMENT_RANGE = (-1.0, 1.0)  # quadratic-weighted kappa's range: where a min_gold_agreement floor may lie


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
    judge_panel_rule: str = DEFAULT_PANEL_RULE  # registration.panel.PANEL_RULES: who decides when several judges scored
    judge_retest: int = 0  # verdicts of each judge asked again (a seeded draw of labels), for test-retest reliability
    # [judge] min_gold_agreement: a floor on the lower bound of the deciding judge's quadratic-weighted kappa
    # against gold (judge.numbers.stats.judge_error); below it, or with no gold to measure it, a decision is
    # inconclusive
    min_gold_agreement: float | None = None
    set_formats: dict[str, SetFormat] = field(default_factory=dict)  # [sets."FILE"], by the name [experiment] gives
    # an old key read under its new name (registration.renamed): one notice each, naming file, line and old -> new
    renamed_keys: tuple[str, ...] = ()
    contamination: Contamination | None = None  # [contamination]: None when not registered
    comparisons: tuple[RegisteredComparison, ...] = ()  # [[comparisons]]: this run's arms against previous runs'

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
        panel_rule = setting(jt, "panel_rule", "string", file, "[judge]", DEFAULT_PANEL_RULE)
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
            judges.append(parse_judge(jname, t, file, models))
    if not judges:
        raise BadInput(file, "no [judges.*] registered", field="judges")
    hyps: list[Hypothesis] = []
    for i, t in enumerate(doc.get("hypotheses") or []):
        with table("hypotheses", i):
            hyps.append(parse_hypothesis(f"[[hypotheses]] #{i + 1}", t, file, arm_names, hyps))
    registered: list[RegisteredComparison] = []
    for i, t in enumerate(doc.get("comparisons") or []):
        with table("comparisons", i):
            registered.append(parse_comparison(f"[[comparisons]] #{i + 1}", t, file, arm_names, registered))
    with table("analysis"):
        analysis = parse_analysis(doc.get("analysis") or {}, file, seed)
    for i, h in enumerate(hyps):
        with table("hypotheses", i):
            check_statistic(f"[[hypotheses]] #{i + 1}", h, analysis.pass_score, analysis.judge_error, panel_rule,
                            file)
    if (check := PANEL_RULES[panel_rule].check) is not None:
        with table("judge"):
            check(hyps, arm_names, judges, models, file)
    audit = None
    if "audit" in doc:
        with table("audit"):
            audit = parse_audit(doc["audit"], file, arm_names)
    gold = None
    if "gold" in doc:
        with table("gold"):
            gold = parse_gold(doc["gold"], file, exp_dir)
    contamination = None
    if "contamination" in doc:
        with table("contamination"):
            contamination = parse_contamination(doc["contamination"], file, exp_dir, arm_names, name)
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
        contamination=contamination, comparisons=tuple(registered),
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














