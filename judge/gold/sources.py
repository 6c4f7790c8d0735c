"""Gold scores: what the judge is measured against, from three sources, each answer's score with how it was chosen.

Sources, all on the rubric's scale, all of the answer *as the judge saw it* (judge.judging.blinding: normalised,
identity text scrubbed), so a gold score grades exactly what the judge graded; each registered by name in
judge.gold.registry:

* ``labels``: sealed labels files registered as ``[gold] labels`` (judge.gold.sealed).
* ``program``: the gold program registered as ``[gold] program = "file.py:function"`` (judge.gold.program).
* ``human``: the labels people gave the run with ``judge label`` (judge.gold.labelling), ``labels/<labeller>.jsonl`` in
  the results folder, hash-chained per labeller.

Design: how the labelled questions were chosen, which decides whether the labels may correct a decision
(registration.vocabulary.GOLD_DESIGNS). Per gold score:

* ``complete_strata``: its question carries a tag (a stratum) every answer of which in the run has a gold score,
  from any source. A program that returns None on some answers of a tag leaves the tag incomplete: the answers it
  could decide are chosen by what the answers say, which may be exactly where the judge errs, so they are neither
  the whole stratum nor a random sample of it. Labelling the undecided answers by hand completes it again.
* ``random_sample``: a person's label (``human``) on a question of a seeded random sample drawn by
  ``judge label --sample`` (``labels/_samples.jsonl``; ``draw`` indexes it), whoever labelled it and however
  (in the terminal, or imported). The sample is believed only as drawn again: its population must be the run's
  questions, its picks exactly what judge.numbers.stats.ppi.label_sample draws from (population, n, seed), and every
  answer to every picked question must have a person's label (a draw labelled in part is a sample of what the labeller
  chose to finish). A draw failing any of these is recorded with the reason (`Draw.problem`) and its labels are
  ``convenience``.
* ``convenience``: anything else (hand-picked answers, a sealed file, a program's scores on an incomplete stratum):
  agreement only, never a correction.

`gold_scores(exp, run_dir)` is the one entry point for a results folder (`folder_gold` for one already loaded);
`gold_set` builds the same from parts already loaded.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from core.records import KeyRow
from registration.prereg import Experiment
from registration.questions import Question

from ..judging.blinding import BlindItem
from ..numbers.stats.ppi import label_sample
from ..results.files import Folder, load
from .labels import labeller_files, numbered_samples
from .registry import SOURCES, Run
from .scores import Draw, GoldScore, GoldSet, GoldStratum, Recorded


def check_gold(exp: Experiment, registered: list[Question], scale: tuple[int, ...]) -> None:
    """Before the first model call: what each registered source checks (judge.gold.registry: the gold program imports,
    takes (question, reference, answer) and scores a reference answer without ending or hanging; every sealed labels
    file reads, checked against the registration). Its scores on answers come after collection."""
    if exp.gold is None:
        return
    for source in SOURCES.values():
        if source.check is not None:
            source.check(exp, registered, scale)


def gold_set(exp: Experiment, items: list[BlindItem], keys: list[KeyRow], questions: dict[str, Question],
             scale: tuple[int, ...], label_key: str, run_dir: Path | None = None,
             recorded: Recorded | None = None) -> GoldSet:
    """The gold scores of a run's blinded single answers `items` (in the blinded order), from every source.

    `keys`: the run's blinding keys (who wrote each label); `questions`: the run's questions by id; `label_key`: what
    the run's labels files name it by (judge.results.files.labels_name); `run_dir`: where people's labels are (None: no
    human source); `recorded`: a published bundle's account of the answers whose text it withholds (its registered
    sets may be withheld too): the program's results taken as recorded, the program run on every other answer; the
    sealed records' matches too."""
    by_label = {k.label: k for k in keys}
    items = [i for i in items if i.label in by_label]
    found: dict[str, list[dict[str, Any]]] = {i.label: [] for i in items}
    unmatched: list[tuple[str, int]] = []
    stopped = None
    run = Run(exp, items, by_label, questions, tuple(scale), label_key, run_dir, recorded, {})
    for source in SOURCES.values():  # in their registered order: the order an answer's scores are listed in
        got = source.scores(run)
        for label, entry in got.scores:
            found[label].append({"source": source.name, **entry})
        unmatched += got.unmatched
        stopped = stopped or got.stopped
    draws: list[Draw] = []
    if run_dir is not None:
        draws = [_checked_draw(Draw(s.labeller, s.seed, s.n, tuple(s.population), tuple(s.picked), s.time, no),
                               items, questions, found)
                 for no, s in numbered_samples(run_dir)]
    strata = _strata(items, questions, found)
    complete = {s.name for s in strata if s.complete}
    drawn: dict[str, int] = {}
    for n, d in enumerate(draws):
        for q in d.picked if d.problem is None else ():
            drawn.setdefault(q, n)
    scores = []
    for i in items:
        k = by_label[i.label]
        stratum = next((t for t in questions[i.question_id].tags if t in complete), None)
        for f in found[i.label]:
            draw = drawn.get(i.question_id) if SOURCES[f["source"]].people else None
            design = "complete_strata" if stratum else "random_sample" if draw is not None else "convenience"
            scores.append(GoldScore(label=i.label, row=k.row, arm=k.arm, quant=k.quant, question_id=k.question_id,
                                    sample=k.sample, design=design, stratum=stratum, draw=draw, **f))
    return GoldSet(scale=tuple(scale), answers=len(items), scores=tuple(scores), strata=strata, draws=tuple(draws),
                   program=exp.gold.value("program") if exp.gold else None,
                   files=exp.gold.value("labels") if exp.gold else (),
                   unmatched=tuple(unmatched), stopped=stopped)


def _checked_draw(d: Draw, items: list[BlindItem], questions: dict[str, Question],
                  found: dict[str, list[dict[str, Any]]]) -> Draw:
    """The draw with its problem, if any: drawn again from its recorded (population, n, seed) and compared with its
    picks, and every answer to each picked question looked for among people's labels."""
    where = f"labels/_samples.jsonl line {d.line}"
    if sorted(d.population) != sorted(questions):
        problem = (f"{where}: its population of {len(d.population)} questions is not the run's {len(questions)} "
                   "questions, the population `judge label --sample` draws from")
    else:
        try:
            again = label_sample(d.population, d.n, d.seed)
        except ValueError as e:
            again, problem = None, f"{where}: n {d.n} with seed {d.seed} cannot be drawn again: {e}"
        if again is not None:
            problem = None if list(d.picked) == again else (
                f"{where}: seed {d.seed} draws {again} from its population (n {d.n}), not the recorded picks "
                f"{list(d.picked)}: the picks were not drawn by the seed")
    if problem is None:
        for q in d.picked:
            answers = [i.label for i in items if i.question_id == q]
            labelled = sum(any(SOURCES[f["source"]].people for f in found[lab]) for lab in answers)
            if labelled < len(answers):
                problem = (f"{where}: drawn question {q!r} has a person's label on {labelled} of its {len(answers)} "
                           "answers: a draw is a random sample only once every answer to every drawn question is "
                           "labelled")
                break
    return replace(d, problem=problem)


def _strata(items: list[BlindItem], questions: dict[str, Question],
            found: dict[str, list[dict[str, Any]]]) -> tuple[GoldStratum, ...]:
    tags = sorted({t for q in questions.values() for t in q.tags})
    out = []
    for t in tags:
        qids = tuple(q.id for q in questions.values() if t in q.tags)
        answers = [i for i in items if t in questions[i.question_id].tags]
        with_gold = sum(1 for i in answers if any(f["status"] == "scored" for f in found[i.label]))
        out.append(GoldStratum(t, qids, len(answers), with_gold, bool(answers) and with_gold == len(answers)))
    return tuple(out)


def gold_scores(exp: Experiment, run_dir: Path, questions: list[Question] | None = None,
                recorded: Recorded | None = None) -> GoldSet:
    """Every gold score of a results folder's single answers: sealed labels files, the gold program and people's
    labels (labels/), each with its source and design. Bad input (exit 2, named) if any source is unreadable.
    `questions` and `recorded`: a published bundle's (judge.verify.bundle), which withholds the private text."""
    return folder_gold(load(run_dir, exp.dir, questions), recorded)


def folder_gold(d: Folder, recorded: Recorded | None = None) -> GoldSet:
    """`gold_scores` of a folder already loaded (judge.results.files.load): review.md and review.html read the same."""
    return gold_set(d.exp, d.items, d.raw.keys, d.questions, d.scale, d.label_key, d.run_dir, recorded)


def run_gold(exp: Experiment, run_dir: Path, questions: list[Question] | None = None,
             recorded: Recorded | None = None) -> GoldSet | None:
    """The gold a results folder's numbers are computed with: None when the experiment registers no gold, nobody
    labelled the run and nothing registered asks for gold (its numbers then have no judge-validity section, as
    before gold existed). A registered `min_gold_agreement` or `judge_error = "decide"` without gold gets an empty
    set: there is nothing to measure the judge with, and the decisions say so."""
    asks = exp.min_gold_agreement is not None or exp.analysis.judge_error == "decide"
    if exp.gold is None and not labeller_files(Path(run_dir)) and not asks:
        return None
    return gold_scores(exp, run_dir, questions, recorded)
