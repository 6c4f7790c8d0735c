"""What can be checked from the registration and the inputs is checked before the first model call.

load_experiment and load_questions check each file on its own; this checks them against each other
(a hypothesis subset must select questions) and against the models' context windows: every arm's
prompt, and every judge prompt with the longest answer the arms may write, must fit n_ctx with the
registered max_tokens (and an answer-first judge's prompt with its own answer of up to the rubric's answer_max_tokens,
and the first call that writes it). A refusal here costs nothing; the same problem found while judging costs
every answer already paid for.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from arms.context import check_arms, check_budget, counter
from core import text as input_text
from core.errors import BadInput
from models.backends.registry import backend_info
from models.llama_loader import check_gpu_layers
from models.sources import experiment_file
from registration.prereg import Experiment, JudgeSpec
from registration.questions import Question
from registration.rubric import Rubric
from registration.spec import SEED_MAX, ArmSpec, check_generation
from registration.toml_lines import KeyLines

from . import answer_first
from .blinding import BlindItem
from .calls import build_request
from .pairwise import PairItem

ANSWER_FIELDS = ("answer", "answer_1", "answer_2")  # what a judge item shows of the answers (BlindItem, PairItem)


def preflight(exp: Experiment, arms: list[str], registered: list[Question], questions: list[Question],
              panel: list[JudgeSpec], rubrics: dict[tuple[str, str], Rubric]) -> None:
    """Refuse (BadInput) what would fail after paying: `registered` is every question, `questions` this run's."""
    check_subsets(exp, registered)
    check_rubrics(exp, rubrics, questions)
    check_first_calls(exp, rubrics)
    check_margins(exp, [r for (_, kind), r in rubrics.items() if kind == "single"])
    check_pass_score(exp, [r for (_, kind), r in rubrics.items() if kind == "single"])
    specs = [exp.arm(a) for a in arms]
    check_files(exp, specs, panel)
    paths = {p.name: p for p in exp.set_paths()}
    check_arms(specs, exp.models, questions, exp.set_paths(), exp.dir, exp.runtime)
    hyps = [h for h in exp.hypotheses if h.a in arms and h.b in arms]
    longest = {"single": max(a.generation.max_tokens for a in specs),
               "pairwise": max((exp.arm(h.a).generation.max_tokens + exp.arm(h.b).generation.max_tokens
                                for h in hyps), default=0)}
    for j in panel:
        count = counter(exp.models[j.model], exp.dir)
        if count is None:
            continue
        for (name, kind), rubric in rubrics.items():
            if name != j.name or (kind == "pairwise" and not hyps):
                continue
            what = f"judge {j.name!r} (model {j.model!r}, rubric {rubric.name!r})"
            own = answer_first.room(rubric)
            for q in questions:
                where = paths.get(q.set, Path(q.set))
                tokens = _tokens(count, rubric, _empty(kind, q))
                check_budget(tokens, rubric.generation.max_tokens, exp.runtime, q, where,
                             what + (f", its own answer up to {own} tokens shown first" if own else ""),
                             answer=longest[kind] + own)
                if own:  # the first call, which writes that answer
                    first = answer_first.first_request(rubric, q.question, q.reference)
                    check_budget(count(list(first.messages), first.generation.thinking), own, exp.runtime, q,
                                 where, f"{what}: the first call, its own answer (answer_max_tokens {own})")


def _empty(kind: str, q: Question) -> BlindItem | PairItem:
    """The judge item of question `q` with its answers left empty."""
    if kind == "single":
        return BlindItem("L", q.id, q.question, q.reference, "")
    return PairItem("L", q.id, q.question, q.reference, "", "")


def check_rubrics(exp: Experiment, rubrics: dict[tuple[str, str], Rubric], questions: list[Question]) -> None:
    """Each judge's rubric uses only the variables its judge provides, renders with every question, and can
    decide what is registered: each attempt's seed (seed + attempt) a seed (margins: check_margins)."""
    file = exp.dir / "prereg.toml"
    for (name, kind), rubric in rubrics.items():
        fields = _empty(kind, questions[0]).prompt_fields() if questions else {}
        rubric.check_variables(set(fields), "one answer" if kind == "single" else "a pair of answers")
        for q in questions:
            rubric.render(**_empty(kind, q).prompt_fields())
        seed = rubric.generation.seed
        rounds = 2 if exp.judge_retest and kind == "single" else 1  # a retest's attempts follow the original's
        if seed is not None and seed + rounds * exp.judge_attempts - 1 > SEED_MAX:
            why = " and [judge] retest asks again at seed + attempts + n" if rounds > 1 else ""
            lines = KeyLines(input_text.read(file))
            key = "attempts" if ("judge", "attempts") in lines.lines else "verdict_attempts"  # as registered
            raise BadInput(file, f"judge {name!r}: attempt n of a verdict is sent the rubric's seed {seed} + n{why}, "
                           f"which exceeds {SEED_MAX:,} at [judge] verdict_attempts = {exp.judge_attempts}",
                           line=lines.find(("judge",), key), field=key)


def check_first_calls(exp: Experiment, rubrics: dict[tuple[str, str], Rubric]) -> None:
    """A `two_calls` rubric's first call is sent with its own max_tokens (answer_max_tokens): its judge's backend
    must be able to send that, as the verdict's settings are checked (a thinking budget below max_tokens on
    Anthropic's), else refused at the rubric's answer_max_tokens."""
    judges = {j.name: j for j in exp.judges}
    for (name, _), rubric in rubrics.items():
        if rubric.answer_first != "two_calls":
            continue
        try:
            check_generation(exp.models[judges[name].model], answer_first.first_request(rubric, "", None).generation,
                             rubric.path, f"judge {name!r}, the first call of rubric {rubric.name!r}")
        except BadInput as e:
            line = KeyLines(input_text.read(Path(rubric.path))).find((), "answer_max_tokens")
            raise BadInput(rubric.path, f"{e.message} (the first call's max_tokens is the rubric's answer_max_tokens, "
                           f"{rubric.answer_max_tokens})", line=line, field="answer_max_tokens") from None


def check_subsets(exp: Experiment, questions: list[Question]) -> None:
    """A hypothesis subset (questions carrying every one of its tags) that selects no question decides on nothing."""
    tags = {t for q in questions for t in q.tags}
    for i, h in enumerate(exp.hypotheses):
        if h.subset and not any(all(t in q.tags for t in h.subset) for q in questions):
            file = exp.dir / "prereg.toml"
            raise BadInput(file, f"hypothesis {h.id!r} subset {list(h.subset)} selects no question in "
                           f"{', '.join(exp.sets)} (a question must carry every tag); tags present: "
                           f"{', '.join(sorted(tags)) or 'none'}",
                           line=KeyLines(input_text.read(file)).find(("hypotheses", i), "subset"), field="subset")


def check_margins(exp: Experiment, rubrics: list[Rubric]) -> None:
    """A margin must lie inside the rubric's range R = hi - lo: the decision rule tests boundaries in (-R, R)."""
    file = exp.dir / "prereg.toml"
    for r in rubrics:
        width = max(r.scale) - min(r.scale)
        for table, what, decided in (("hypotheses", "hypothesis", exp.hypotheses),
                                     ("comparisons", "comparison", exp.comparisons)):
            for i, h in enumerate(decided):
                if h.margin >= width:
                    raise BadInput(file, f"{what} {h.id!r} margin {h.margin:g} is not below the range of rubric "
                                   f"{r.name!r} ({min(r.scale)}..{max(r.scale)}: {width} point(s))",
                                   line=KeyLines(input_text.read(file)).find((table, i), "margin"), field="margin")


def check_pass_score(exp: Experiment, rubrics: list[Rubric]) -> None:
    """`[analysis] pass_score` must split the rubric's scale: at or below its lowest score every sample passes, above
    its highest none does, and pass^k and pass@k would say nothing."""
    score, file = exp.analysis.pass_score, exp.dir / "prereg.toml"
    for r in rubrics:
        if score is not None and not min(r.scale) < score <= max(r.scale):
            raise BadInput(file, f"[analysis] pass_score {score:g} does not split the scale of rubric {r.name!r} "
                           f"({min(r.scale)}..{max(r.scale)}): it must be above the lowest score and at most the "
                           "highest", line=KeyLines(input_text.read(file)).find(("analysis",), "pass_score"),
                           field="pass_score")


def check_files(exp: Experiment, arms: list[ArmSpec], panel: list[JudgeSpec]) -> None:
    """The files a later model load reads (model source, imatrix, chat template, adapters) exist: a second model
    group must not fail on a missing file after the first group's answers were paid for."""
    file = exp.dir / "prereg.toml"
    models = {a.model for a in arms} | {j.model for j in panel}
    local = sorted(m for m in models if backend_info(exp.models[m].backend).local)
    if local:  # a CPU-only build would run "offloaded" layers on the CPU, unannounced
        check_gpu_layers(exp.runtime.gpu_layers, file, KeyLines(input_text.read(file)).find(("runtime",), "gpu_layers"))
    wanted = [(("models", m), key, getattr(exp.models[m], key)) for m in local
              for key in ("source", "imatrix", "chat_template")]
    wanted += [(("adapters", n), "source", exp.adapters[n].source)
               for n in sorted({n for a in arms for n in a.adapters})]
    for where, key, value in wanted:
        if (value and not value.startswith(("embedded:", "generated:"))
                and not experiment_file(value, exp.dir).is_file()):
            raise BadInput(file, f"[{'.'.join(where)}] {key} {value!r} is not a file "
                           f"({experiment_file(value, exp.dir)})",
                           line=KeyLines(input_text.read(file)).find(where, key), field=key)


def check_answers(exp: Experiment, panel: list[JudgeSpec], rubrics: dict[tuple[str, str], Rubric],
                  items: dict[str, list], answers_file: Path) -> None:
    """Once the answers are known, before the first verdict: every judge prompt fits its judge's context.

    `preflight` kept room for answers of up to the arms' max_tokens, but a glue may return more than its
    model wrote. An item is counted exactly only when it could overflow: a token is at least one byte,
    so the empty-answer prompt + the answers' bytes + max_tokens within n_ctx is safe without counting.
    """
    for j in panel:
        count = counter(exp.models[j.model], exp.dir)
        if count is None:
            continue
        for kind, todo in items.items():
            rubric = rubrics.get((j.name, kind))
            if rubric is None:
                continue
            empty: dict[str, int] = {}
            for item in todo:
                fields = {k: "" for k in ANSWER_FIELDS if hasattr(item, k)}
                size = sum(len(getattr(item, k).encode()) for k in fields)
                if item.question_id not in empty:
                    empty[item.question_id] = _tokens(count, rubric, replace(item, **fields))
                room = answer_first.room(rubric) + rubric.generation.max_tokens
                if empty[item.question_id] + size + room <= exp.runtime.n_ctx:
                    continue
                tokens = _tokens(count, rubric, item)
                if tokens + room > exp.runtime.n_ctx:
                    raise BadInput(answers_file, f"the answer(s) labelled {item.label} to question "
                                   f"{item.question_id!r} "
                                   f"do not fit the context of judge {j.name!r} (rubric {rubric.name!r}): "
                                   "the prompt is "
                                   f"{tokens} tokens, max_tokens {rubric.generation.max_tokens}"
                                   + (f", the judge's own answer up to {answer_first.room(rubric)}"
                                      if answer_first.room(rubric) else "")
                                   + f"; together {tokens + room} > n_ctx {exp.runtime.n_ctx}. "
                                   "No verdict was "
                                   "asked for; the answers are kept. A glue answer longer than its arm's max_tokens "
                                   "needs a larger [runtime] n_ctx", field="text")


def _tokens(count, rubric: Rubric, item) -> int:
    """The grading prompt's tokens; of a `two_calls` rubric with the judge's own answer left empty (its room is
    answer_first.room)."""
    own = "" if rubric.answer_first == "two_calls" else None
    return count(list(build_request(rubric, item, 0, own_answer=own).messages), rubric.generation.thinking)
