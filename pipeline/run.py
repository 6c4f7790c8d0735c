"""`python -m judge run`: verify the seal, collect answers, judge blind, analyse, write the report.

Idempotent: the run folder's raw files are append-only and every model call is cached, so
re-running resumes and never repeats a finished call; answers and verdicts whose call failed
(`error`) are asked again and appended as retries (core.jsonl's retry rule). The results folder is
locked while the run writes it and bound to one registration before its first call (judge.results.binding):
a later run resumes exactly that, extends it with more arms or questions, or is refused.
run.json records the run as the registration, the binding and the raw files give it (judge.results.runinfo), so a resume
that adds nothing rewrites it byte for byte and leaves the anchor (judge.results.files.anchor) as it was; what each
invocation did, when and where, is appended to invocations.jsonl (pipeline.invocation).
"""
from __future__ import annotations

import contextlib
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arms.collect import collect, recorded_effective
from arms.folder import blinding_secret, locked
from arms.settings import verify_settings
from core.atomic import write_text
from core.errors import BadInput
from core.jsonl import Appender, current, read
from core.records import ANSWER_KEY, AnswerRow, RunInfo
from judge.gold.sources import check_gold, run_gold
from judge.judging.blinding import blind, folder_label_secret
from judge.judging.budget import Budget, can_cost, plan_text, planned_calls
from judge.judging.calls import judge_all, retest_labels
from judge.judging.cost import costs
from judge.judging.pairwise import pair_items
from judge.judging.preflight import check_answers, preflight
from judge.numbers.analysis import compute_numbers, late_amendments, write_numbers
from judge.numbers.registered_comparisons import previous_folder
from judge.outputs.plots import write_plots
from judge.outputs.report import folder_report
from judge.outputs.review_md import write_review
from judge.results.binding import bind, commit, start_judging
from judge.results.files import (
    ANSWERS,
    BLINDING,
    JUDGMENTS,
    NUMBERS,
    REPORT,
    RETESTS,
    RUN,
    anchor,
    read_numbers,
)
from judge.results.runinfo import Scope, record, run_name
from models.backends.base import Backend
from models.backends.registry import backend_info
from models.cache import CallCache
from models.load import open_backend
from models.provider_batch import ProviderBatching
from registration.prereg import Experiment, JudgeSpec, load_experiment
from registration.questions import Question, load_questions
from registration.rubric import Rubric, load_rubric, rubric_dir
from registration.seal import inside, verify_seal
from registration.spec import check_generation

from .invocation import log_invocation

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "sealed" / "demo"


def check_audit_gate(exp: Experiment, arms: list[str]) -> str:
    """Refuse to score an audited arm unless its gaming audit passed (or the registration overrides it)."""
    from audit.gate import check_gate

    a = exp.audit
    if a is None:
        return "Audit gate: none registered for this experiment."
    gated = [x for x in a.arms if x in arms]
    if not gated:
        return f"Audit gate: registered for {', '.join(a.arms)}, none of which is in this run."
    if a.override:
        return (f"Audit gate OVERRIDDEN by the registration for {', '.join(gated)} (top-{a.k} audit of "
                f"`{a.log}`, max {a.max_gamed} gamed): {a.override.strip()}")
    gate_file = Path(a.gate) if Path(a.gate).is_absolute() else ROOT / a.gate
    log = inside(exp.dir, a.log, exp.dir / "prereg.toml", "log")
    doc = check_gate(gate_file, log, k=a.k, max_gamed=a.max_gamed, gate_on_detectors=a.gate_on_detectors)
    reader = doc.get("reader", {})
    return (f"Audit gate passed for {', '.join(gated)}: top-{doc['k']} of `{a.log}` read blind by "
            f"{reader.get('id') or reader.get('name')}, {doc.get('counted')} counted against passing "
            f"(max {doc['max_gamed']}); gate file sha256 {hashlib.sha256(gate_file.read_bytes()).hexdigest()[:16]}.")


def check_contamination(exp: Experiment, arms: list[str]) -> str | None:
    """Refuse to score an arm trained on the registered training data unless the contamination record is the one
    the sealed sets and training files give now; the report's line says what it found. None when not registered."""
    from audit.contamination import check_record, record_path

    c = exp.contamination
    if c is None:
        return None
    trained = [x for x in c.arms if x in arms]
    if not trained:
        return f"Contamination gate: registered for {', '.join(c.arms)}, none of which is in this run."
    record = record_path(exp)
    doc = check_record(record, exp)
    bad = doc["contaminated"]
    found = (f"{len(bad)} of {len(doc['questions'])} questions contaminated ({', '.join(bad)}): CAUTION, a difference "
             "involving these arms may be memorised, not learned" if bad else
             f"none of the {len(doc['questions'])} questions contaminated")
    return (f"Contamination gate for {', '.join(trained)}: {doc['n']}-gram overlap of the sealed questions "
            f"({', '.join(doc['fields'])}) with {', '.join(t['file'] for t in doc['training'])}: {found}; record "
            f"sha256 {hashlib.sha256(record.read_bytes()).hexdigest()[:16]}.")


def quant_files(exp: Experiment, arms: list[str]) -> dict[str, dict]:
    """Which quantiser produced which file, with its sha256 and the types read back from it (and where it is on
    this machine, under `path`: invocations.jsonl records that, run.json does not)."""
    from models.sources import quant_file

    out = {}
    for arm in (exp.arm(a) for a in arms):
        spec = exp.models[arm.model]
        if backend_info(spec.backend).local:
            for q in arm.quants:
                out.setdefault(f"{spec.name}/{q}", quant_file(spec, q, exp.dir, exp.runtime).to_dict())
    return out


def judge_rubrics(exp: Experiment, panel: list, rubric, mode: str) -> dict[tuple[str, str], Any]:
    """Each judge's rubrics with its registered generation overrides, refused if its backend cannot send them."""
    out = {}
    pairwise = load_rubric("pairwise", rubric_dir("pairwise", exp.dir))
    kinds = [("single", rubric)] + ([("pairwise", pairwise)] if mode != "single" else [])
    for j in panel:
        for kind, r in kinds:
            out[j.name, kind] = j.rubric(r)
            check_generation(exp.models[j.model], out[j.name, kind].generation, exp.dir / "prereg.toml",
                             f"judge {j.name!r} with rubric {r.name!r} (override in [judges.{j.name}] generation)")
    return out


class JudgeBackends:
    """Each judge's backend, opened once in a run: the settings read back before the first answer and the verdicts
    come from one load of a local judge model. Closed once the judge's verdicts are written, or when the run ends."""

    def __init__(self, exp: Experiment):
        self.exp = exp
        self.opened: dict[str, Backend] = {}

    def __call__(self, judge: JudgeSpec) -> Backend:
        if judge.name not in self.opened:
            self.opened[judge.name] = open_backend(self.exp.models[judge.model], judge.quant, None, self.exp.dir,
                                                   self.exp.runtime)
        return self.opened[judge.name]

    def close(self, judge: JudgeSpec | None = None) -> None:
        for name in [judge.name] if judge else list(self.opened):
            backend = self.opened.pop(name, None)
            if backend is not None:
                backend.close()


def verify_judges(exp: Experiment, rubrics: dict[tuple[str, str], Any], judges: JudgeBackends) -> dict[str, Any]:
    """Judges are models too: read back what each will really use, before the first answer is collected."""
    out = {}
    for j in (x for x in exp.judges if any(name == x.name for name, _ in rubrics)):
        backend = judges(j)
        for r in (r for (name, _), r in rubrics.items() if name == j.name):
            out[f"{j.name}/{r.name}"] = verify_settings(backend, f"judge {j.name!r} (rubric {r.name!r})",
                                                        r.generation, j.quant or "source", exp.models[j.model], (),
                                                        exp.runtime)
    return out


@dataclass(frozen=True)
class RunPlan:
    """What one `judge run` does, every part of it checked before any call: the experiment, the arms and questions it
    answers (the first ``limit`` of the registered ones), the rubric's scale, the judges (primary first), the judging
    mode and each judge's rubric per kind, the results folder, and whether progress is printed."""

    exp: Experiment
    arms: list[str]
    questions: list[Question]
    limit: int | None
    rubric: Rubric
    panel: list[JudgeSpec]
    mode: str
    rubrics: dict[tuple[str, str], Rubric]
    run_dir: Path
    progress: bool
    cost_plan: dict[str, Any] | None = None  # what a run that can cost money plans to pay (judge.judging.budget)
    ceiling: float | None = None  # USD the folder may cost (--max-cost, else [runtime] max_cost_usd)
    resume: str = ""  # the command that resumes this run, without its ceiling


def run(exp_dir: Path = DEMO, arm_names: str | None = None, limit: int | None = None, out: Path | None = None,
        progress: bool = True, judge_names: str | None = None, mode: str | None = None,
        max_cost: float | None = None) -> Path:
    exp_dir = Path(exp_dir)
    verify_seal(exp_dir)
    exp = load_experiment(exp_dir)
    for notice in exp.renamed_keys:  # a sealed registration keeps its old key names: say how they were read
        print(notice, file=sys.stderr)
    arms = exp.selected_arms(arm_names)
    registered = load_questions(exp.set_paths(), exp.set_formats_by_path())
    questions = registered[:limit] if limit else registered
    rubric = load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir))
    panel = exp.panel(judge_names)
    if not panel:
        raise BadInput(exp_dir / "prereg.toml", "no registered judge is available (missing API keys?)", field="judges")
    mode = mode or exp.judge_mode
    rubrics = judge_rubrics(exp, panel, rubric, mode)  # refused here, before any answer is collected
    # the gold program imports and scores a reference answer without ending or hanging, the sealed gold labels read
    check_gold(exp, registered, rubric.scale)
    for c in exp.comparisons:  # a previous folder not of its registered anchor is refused before any call is paid
        previous_folder(exp, c)
    preflight(exp, arms, registered, questions, panel, rubrics)  # and everything else checkable before paying
    run_dir = Path(out) if out else ROOT / "results" / run_name(exp, arms, limit)
    run_dir.mkdir(parents=True, exist_ok=True)
    ceiling = max_cost if max_cost is not None else exp.runtime.max_cost_usd
    cost_plan = None
    if ceiling is not None or can_cost(exp, arms, panel):  # before the first call: what it plans to pay
        check_ceiling(exp, arms, panel, ceiling)
        cost_plan = planned_calls(exp, arms, questions, panel, rubrics, mode)
        print(plan_text(cost_plan, ceiling), file=sys.stderr)
    resume = " ".join(["python -m judge run", "--exp", str(exp_dir), "--out", str(run_dir)]
                      + (["--arms", arm_names] if arm_names else []) + (["--limit", str(limit)] if limit else [])
                      + (["--judges", judge_names] if judge_names else []) + (["--mode", mode] if mode else []))
    plan = RunPlan(exp, arms, questions, limit, rubric, panel, mode, rubrics, run_dir, progress, cost_plan, ceiling,
                   resume)
    # a second run into this folder is refused at once, naming this one; each judge is opened once; the call
    # cache records which of its entries this folder used (`judge cache`)
    with (locked(run_dir, "judge run"), contextlib.closing(JudgeBackends(exp)) as judges,
          contextlib.closing(CallCache(run=run_dir)) as cache):
        return _run(plan, judges, cache)


def check_ceiling(exp: Experiment, arms: list[str], panel: list[JudgeSpec], ceiling: float | None) -> None:
    """A ceiling bounds only what it can price before a call: every model of the run reached over HTTP needs its
    prices, and none may answer through a provider batch (paid as a whole, after it is sent)."""
    if ceiling is None:
        return
    file = exp.dir / "prereg.toml"
    for name in sorted({exp.arm(a).model for a in arms} | {j.model for j in panel}):
        m = exp.models[name]
        if m.price_input is None and not backend_info(m.backend).local:
            raise BadInput(file, f"a cost ceiling (${ceiling:g}) needs the prices of model {name!r}, which is reached "
                           f"over HTTP: register [models.{name}] price_input and price_output (0 for a free server)",
                           field="price_input")
        if m.provider_batch:
            raise BadInput(file, f"a cost ceiling (${ceiling:g}) cannot stop a provider batch part way (model "
                           f"{name!r} has provider_batch = true): run without one, or without the batch API",
                           field="provider_batch")


def spent(exp: Experiment, arms: list[str], panel: list[JudgeSpec], questions: list[Question], run_dir: Path) -> float:
    """What the folder's rows cost at the registered prices (run.json's `cost`), before this run pays anything."""
    if not (run_dir / ANSWERS).exists():
        return 0.0
    lines = costs(exp, arms, [j.name for j in panel], {q.id for q in questions}, run_dir)
    return sum(x["usd"] for x in lines if x["usd"] is not None)


def _run(plan: RunPlan, judges: JudgeBackends, cache: CallCache) -> Path:
    exp, arms, questions, limit, panel, mode, rubrics = (plan.exp, plan.arms, plan.questions, plan.limit, plan.panel,
                                                         plan.mode, plan.rubrics)
    run_dir, progress, exp_dir, primary = plan.run_dir, plan.progress, plan.exp.dir, plan.panel[0]
    # the folder is bound to one registration before any call: refused here if bound to another
    binding = bind(run_dir, exp, arms, limit, panel, mode, rubrics)
    run_json = run_dir / RUN
    audit_gate = check_audit_gate(exp, arms)
    contamination = check_contamination(exp, arms)
    jeffective = verify_judges(exp, rubrics, judges)
    commit(run_dir, binding)
    if plan.ceiling is not None:  # no call crosses the ceiling; the calls already paid are in the folder and cache
        cache.guard = Budget(plan.ceiling, spent(exp, arms, panel, questions, run_dir),
                             [exp.models[m] for m in {exp.arm(a).model for a in arms} | {j.model for j in panel}],
                             exp_dir, plan.resume, plan.cost_plan["usd"])
    say = (lambda m: print(m, file=sys.stderr)) if progress else (lambda m: None)

    say(f"[1/4] collecting answers: {len(arms)} arms, {len(questions)} questions -> {run_dir}")
    arm_specs = [exp.arm(a) for a in arms]
    cstats = collect(arm_specs, exp.models, exp.adapters, questions, exp_dir, exp.runtime,
                     run_dir / ANSWERS, cache, progress=progress)
    qids = {q.id for q in questions}
    answers = [c.record for c in current(run_dir / ANSWERS, ANSWER_KEY, make=AnswerRow.from_dict).values()]
    answers = [a for a in answers if a.arm in arms and a.question_id in qids]

    say(f"[2/4] blinding {len(answers)} answers")
    # the folder's blinding secret (its label key, in a folder bound before secrets), never the scope's
    secret = folder_label_secret(blinding_secret(run_dir, binding), binding.label_key)
    qmap = {q.id: q for q in questions}
    items, keys = blind(answers, qmap, secret, exp.seed, exp.scrub) if mode != "pairwise" else ([], [])
    hyps = [h for h in exp.hypotheses if h.a in arms and h.b in arms]
    pitems, pkeys = pair_items(hyps, answers, qmap, secret, exp.seed, exp.scrub) if mode != "single" else ([], [])
    have = {r["label"] for _, r in read(run_dir / BLINDING, required=("label",))}
    with Appender(run_dir / BLINDING) as w:
        for k in [*keys, *pkeys]:
            if k.label not in have:
                w.write(k.to_dict())

    check_answers(exp, panel, rubrics, {"single": items, "pairwise": pitems}, run_dir / ANSWERS)
    binding = start_judging(run_dir, binding, exp)  # the amendment chain's head as judging starts
    jstats, identities = {}, {}
    for j in panel:
        say(f"[3/4] judging with {j.name} ({mode}; blind, shuffled)")
        model = exp.models[j.model]
        jbackend = judges(j)
        try:
            for kind, todo in (("single", items), ("pairwise", pitems)):
                if not todo:
                    continue
                jrubric = rubrics[j.name, kind]
                how = dict(max_attempts=exp.judge_attempts, progress=progress, concurrency=model.concurrency,
                           parallel_sequences=exp.runtime.parallel_sequences,
                           provider_batching=ProviderBatching.of(model, run_dir))
                jstats[f"{j.name}/{jrubric.name}"] = judge_all(j.name, jbackend, jrubric, todo, cache,
                                                               run_dir / JUDGMENTS, **how)
                if kind == "single" and exp.judge_retest:  # test-retest: a seeded draw asked again, calls of their own
                    drawn = set(retest_labels([i.label for i in todo], exp.judge_retest, exp.seed, j.name))
                    jstats[f"{j.name}/{jrubric.name}/retest"] = judge_all(
                        j.name, jbackend, jrubric, [i for i in todo if i.label in drawn], cache,
                        run_dir / RETESTS, retest=1, **how)
            identities[j.name] = jbackend.identity()
        finally:
            judges.close(j)

    (run_dir / JUDGMENTS).touch()  # nothing to judge (every answer an error row) still finishes the folder
    say("[4/4] analysing and writing the report")
    identities, jeffective = _judges_as_recorded(run_json, rubrics, jstats, identities, jeffective)
    rows = [c.record for c in current(run_dir / ANSWERS, ANSWER_KEY).values()]
    files = quant_files(exp, arms)
    scope = Scope(arms, limit, [q.id for q in questions], panel, mode, binding.label_key)
    info = record(exp, scope, plan.rubric, run_json, audit_gate=audit_gate, contamination=contamination,
                  judge={"identity": identities[primary.name], "identities": identities,
                         "effective_settings": jeffective},
                  experiment_dir=binding.experiment_dir,  # where the folder was bound: a resume from elsewhere agrees
                  effective_settings=recorded_effective(rows),  # as the rows record it: a resume agrees
                  quant_files={k: {f: v for f, v in qf.items() if f != "path"} for k, qf in files.items()},
                  cost=costs(exp, arms, [j.name for j in panel], qids, run_dir), cost_estimate=plan.cost_plan)
    write_text(run_json, info.text())
    computed = compute_numbers(exp, load_questions(exp.set_paths(), exp.set_formats_by_path()), run_dir,
                               info, run_gold(exp, run_dir))
    for a in late_amendments(computed):
        raise BadInput(exp_dir / "amendments.jsonl", f"amendment {a.n} is dated {a.date}, after the first "
                       "judgment of this run: it cannot govern it (record it with `judge amend --post-hoc`)",
                       line=a.n, field="date")
    write_numbers(computed, run_dir / NUMBERS)
    write_plots(read_numbers(run_dir), run_dir)  # the plots and the report read numbers.json as every reader does
    write_review(run_dir, exp_dir)  # every answer beside its verdicts, where the arms differ most
    write_text(run_dir / REPORT, folder_report(run_dir))
    log_invocation(run_dir, exp, cache, {k: qf["path"] for k, qf in files.items()},
                   {k: v for k, v in cstats.items() if k != "effective"}, jstats, anchor(run_dir))
    return run_dir


def _judges_as_recorded(run_json: Path, rubrics: dict, jstats: dict, identities: dict,
                        jeffective: dict) -> tuple[dict, dict]:
    """Each judge's identity and read-back settings as run.json records them: those of this invocation if it wrote
    a verdict of that judge, else those already recorded (the ones its verdicts were made under), so a resume that
    judges nothing leaves run.json as it was, on whatever machine it runs."""
    try:
        previous = RunInfo.read_file(run_json).judge if run_json.exists() else None
    except BadInput as e:
        raise BadInput(e.file, f"{e.message}: not the run record `judge run` writes; move it away to resume",
                       line=e.line, field=e.field) from None
    wrote = {s["judge"] for s in jstats.values() if s["items"] > s["already_done"]}
    identities, jeffective = dict(identities), dict(jeffective)
    before, settings = (previous.identities or {}, previous.effective_settings or {}) if previous else ({}, {})
    for name in identities:
        if name not in wrote and name in before:
            identities[name] = before[name]
            for (judge, _), r in rubrics.items():
                key = f"{judge}/{r.name}"
                if judge == name and key in settings:
                    jeffective[key] = settings[key]
    return identities, jeffective
