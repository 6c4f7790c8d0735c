"""run.json: a run's own record, and the scope its results folder registered.

The part of run.json that follows from the registration and the folder's binding (the scope, the judges and
mode, the registered settings, the sha256 of the registered files, the report's warnings) is built here, once:
`judge run` writes it and `judge verify` builds it again from binding.json and the experiment folder and
compares, so an edited run.json cannot narrow the scope, swap the judge or change a setting unseen. The rest of
run.json is read back from the models (identities, effective settings, quant files) or recomputed from the raw
files (the cost), and is checked where it is used (judge.verify.rederive, judge.judging.cost).

run.json is part of the anchor (judge.results.files.ANCHOR_FILES), so it holds nothing that changes from one
invocation to the next: when a run finished, on which machine and package versions, with which call cache, and
what that invocation did go to invocations.jsonl, a log outside the anchor. A resume that adds no evidence
rewrites run.json byte for byte.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import BadInput
from core.records import Binding, CostRow, RunAnalysis, RunInfo, RunJudge, RunRuntime
from registration.prereg import Experiment, JudgeSpec
from registration.questions import Question, load_questions
from registration.rubric import Rubric
from registration.seal import manifest_sha256

TINY_PARAMS = {"smollm2"}  # model families we ship that are far too small to judge reliably


@dataclass(frozen=True)
class Scope:
    """What a results folder holds, as its binding registered it: the arms, the --limit (and so the question ids),
    the judges (primary first), the judging mode and the blinding label key."""

    arms: list[str]
    limit: int | None
    question_ids: list[str]
    panel: list[JudgeSpec]
    mode: str
    label_key: str


def bound_scope(doc: Binding, exp: Experiment, path: Path, questions: list[Question] | None = None) -> Scope:
    """The scope binding.json `doc` (at `path`) registered, resolved against the experiment (its registered
    `questions`, by default read from its sets); BadInput naming the field when it does not resolve (an arm or judge
    the registration does not have)."""
    reg, scope = doc.registration, doc.scope
    arms = scope.arms
    if not arms:
        raise BadInput(path, "reads []: the bound arms must name at least one arm", field="scope.arms")
    registered = [a.name for a in exp.arms]
    for a in arms:
        if a not in registered:
            raise BadInput(path, f"binds arm {a!r}, which the registration does not have ({', '.join(registered)})",
                           field="scope.arms")
    limit = scope.limit
    if limit is not None and limit <= 0:
        raise BadInput(path, f"reads {limit!r}: the bound --limit must be a positive number or null",
                       field="scope.limit")
    judges = {j.name: j for j in exp.judges}
    names = str(reg.get("judges", "")).split(",")
    for n in names:
        if n not in judges:
            raise BadInput(path, f"binds judge {n!r}, which the registration does not have ({', '.join(judges)})",
                           field="registration.judges")
    mode = reg.get("judge mode")
    if mode not in ("single", "pairwise", "both"):
        raise BadInput(path, f"reads {mode!r}, not single, pairwise or both", field="registration.judge mode")
    questions = load_questions(exp.set_paths(), exp.set_formats_by_path()) if questions is None else questions
    return Scope(arms, limit, [q.id for q in (questions[:limit] if limit else questions)],
                 [judges[n] for n in names], mode, doc.label_key)


def run_name(exp: Experiment, arms: list[str], limit: int | None) -> str:
    name = exp.name
    if arms != [a.name for a in exp.arms]:
        name += "-" + "+".join(arms)
    if limit:
        name += f"-limit{limit}"
    return name


def judge_warnings(exp: Experiment, judge_name: str, arms: list[str]) -> list[str]:
    j = next(x for x in exp.judges if x.name == judge_name)
    spec = exp.models[j.model]
    out = []
    if spec.family in TINY_PARAMS:
        out.append(f"The judge `{j.name}` is {spec.family}, a model far too small to grade reliably: its verdicts "
                   "are close to noise. Set ANTHROPIC_API_KEY or OPENAI_API_KEY to use a registered API judge.")
    same = sorted({a for a in arms if spec.family and exp.models[exp.arm(a).model].family == spec.family})
    if same:
        out.append(f"The judge `{j.name}` shares a model family ({spec.family}) with arm(s) {', '.join(same)}: "
                   "self-preference can bias the comparison.")
    return out


def registered(exp: Experiment, scope: Scope, rubric: Rubric) -> dict[str, Any]:
    """The fields of run.json that follow from the registration, the experiment folder and the scope."""
    primary = scope.panel[0]
    rt, an = exp.runtime, exp.analysis
    return {
        "name": run_name(exp, scope.arms, scope.limit), "experiment": exp.name, "seed": exp.seed,
        "limit": scope.limit, "arms": list(scope.arms), "question_ids": list(scope.question_ids),
        "hashes": {"prereg.toml": hashlib.sha256((exp.dir / "prereg.toml").read_bytes()).hexdigest(),
                   "MANIFEST": manifest_sha256(exp.dir), f"rubric {rubric.name}": rubric.sha256},
        "label_key": scope.label_key,
        "runtime": {"threads": rt.threads, "n_ctx": rt.n_ctx, "cpu_extra_buffers": rt.cpu_extra_buffers,
                    "gpu_layers": rt.gpu_layers, "batch": rt.parallel_sequences, "flash_attn": rt.flash_attn},
        "analysis": {"resamples": an.resamples, "method": an.method, "seed": an.seed, "max_unscored": an.max_unscored},
        "judge": {"primary": primary.name, "panel": [j.name for j in scope.panel], "mode": scope.mode,
                  "model": exp.models[primary.model].source, "quant": primary.quant, "rubric": rubric.name,
                  "attempts": exp.judge_attempts, "scrub": list(exp.scrub),
                  "warnings": list(dict.fromkeys(w for j in scope.panel for w in judge_warnings(exp, j.name,
                                                                                                scope.arms)))},
    }


def record(exp: Experiment, scope: Scope, rubric: Rubric, file: Path, *, judge: dict[str, Any], audit_gate: str,
           cost: list[dict[str, Any]], **read_back: Any) -> RunInfo:
    """run.json as `judge run` writes it: its registered part (`registered`) and what the run read back (`judge`: the
    judges' identities and settings; `read_back`: the other fields, by name), each section checked by its contract."""
    reg = registered(exp, scope, rubric)
    return RunInfo(**{
        "version": RunInfo.VERSION, **reg, **read_back,
        "runtime": RunRuntime.read(reg["runtime"], file, prefix="runtime"),
        "analysis": RunAnalysis.read(reg["analysis"], file, prefix="analysis"),
        "judge": RunJudge.read({**reg["judge"], **judge}, file, prefix="judge"), "audit_gate": audit_gate,
        "cost": [CostRow.read(c, file, prefix=f"cost[{i}]") for i, c in enumerate(cost)]})


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra`'s entries added, nested dicts merged (run.json's registered part and its read-back)."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = merged(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out
