"""The gold sources, registered by name: each is what it scores a run's answers with, what it checks before the first
model call, whether its scores are people's labels (which a seeded sample may have chosen), and what a published
bundle records of it on the answers whose text it withholds.

A source is one `GoldSource` and one `register(...)` line. Registering it declares its registration half
(registration.gold.GoldSourceSpec: its name, its [gold] key and what it binds) to the parser too, so every place that
dispatches on sources (the parser, the binding, the gold set, numbers.json's count by source, the bundle) reads it
from here by name. tests/test_gold_registry.py adds one in a test and walks every registered source through them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from arms.folder import label_key as experiment_label_key
from core.errors import BadInput
from core.records import GoldLabel, HumanLabel, KeyRow
from registration.gold import HUMAN, LABELS, PROGRAM, GoldSourceSpec, declare
from registration.prereg import Experiment
from registration.questions import Question, load_questions

from ..judging.blinding import BlindItem
from .labels import people_labels, run_key
from .program import check_program, program_scores
from .scores import GoldScore, Recorded
from .sealed import answer_sha256, read_gold_file

Entry = dict[str, Any]  # one gold score before its design: origin, labeller, score, status, error, time, note


@dataclass(frozen=True)
class Run:
    """What a source scores: a run's blinded single answers (in the blinded order) with their keys by label, its
    questions by id, the rubric's scale, the run's labels name (judge.results.files.labels_name), its folder (None:
    no folder, so no labels of people), a bundle's record (None: none), and who already gave which answer a score."""

    exp: Experiment
    items: list[BlindItem]
    keys: Mapping[str, KeyRow]
    questions: dict[str, Question]
    scale: tuple[int, ...]
    label_key: str
    run_dir: Path | None
    recorded: Recorded | None
    given: dict[tuple[str, str], str]  # (labeller, label) -> where it was read: one score each, across sources

    def once(self, labeller: str, label: str, folder: Path, rel: str, no: int) -> None:
        """One score per labeller and answer across every labels file (sealed or in labels/): a second, in another
        file, is the same labeller counted twice (a chain copied under two names), bad input naming both files."""
        before = self.given.setdefault((labeller, label), f"{rel}:{no}")
        if before != f"{rel}:{no}":
            raise BadInput(folder / rel, f"{labeller!r} already gave answer {label} a gold score at {before}: one "
                           "score per labeller and answer across every labels file, so a labels file copied under "
                           "another name never counts its labeller twice", line=no, field="label")


@dataclass(frozen=True)
class Found:
    """A source's scores on a run: (label, entry) in the blinded order; (file, records naming no answer of the run);
    and what stopped it, if it stopped (a program that exited, crashed or hung)."""

    scores: list[tuple[str, Entry]]
    unmatched: list[tuple[str, int]]
    stopped: str | None = None


NOTHING = Found([], [])
Withhold = Callable[[Any], Any]  # a value as the bundle publishes it (its commitment)
Reread = Callable[[dict, Path, int, dict, Callable[[Any], Any]], None]  # (record, file, line, into, stand_in)


@dataclass(frozen=True)
class GoldSource:
    """`scores`: its gold scores of a run's answers; `check`: what it checks before the first model call (the
    registered question sets, the rubric's scale); `people`: its scores are people's labels, which count toward a
    seeded sample (design random_sample); `publish`: what a bundle records of one of its scores on an answer whose
    text it withholds (None: nothing, verify recomputes it), and `reread` that record read back into the source's
    part of judge.gold.scores.Recorded (BadInput naming file, line and field)."""

    spec: GoldSourceSpec
    scores: Callable[[Run], Found]
    check: Callable[[Experiment, list[Question], tuple[int, ...]], None] | None = None
    people: bool = False
    publish: Callable[[GoldScore, Withhold], dict | None] = lambda score, withhold: None
    reread: Reread | None = None

    @property
    def name(self) -> str:
        return self.spec.name


SOURCES: dict[str, GoldSource] = {}  # in the order an answer's scores are listed and numbers.json counts them


def register(source: GoldSource) -> GoldSource:
    """`source` used by every place that dispatches on gold sources, its declaration known to the parser."""
    declare(source.spec)
    SOURCES[source.name] = source
    return source


def _registered(run: Run, name: str) -> Any:
    return run.exp.gold.value(name) if run.exp.gold else SOURCES[name].spec.absent


def _sealed_scores(run: Run) -> Found:
    """Each record of the sealed labels files naming an answer of the run: a `label` record by its label, a `gold`
    record by the sha256 of the answer's text (or, in a bundle, by the match it recorded)."""
    files = _registered(run, "labels")
    if not files:
        return NOTHING
    exp, questions = run.exp, run.questions
    sets = [p for p in exp.set_paths() if run.recorded is None or p.is_file()]  # a bundle may withhold a set
    registered = {q.id: q for q in load_questions(sets, exp.set_formats_by_path())}
    registered |= {q: questions[q] for q in questions if q not in registered}  # its run's questions, described
    by_text = {(i.question_id, answer_sha256(i.answer)): i.label for i in run.items}
    matched = run.recorded.of("labels") if run.recorded else {}
    answers = {i.label for i in run.items}
    out: list[tuple[str, Entry]] = []
    unmatched = []
    for rel in files:
        missed = 0
        for no, rec in read_gold_file(exp, rel, registered, run.scale, experiment_label_key(exp)):
            label = rec.label if isinstance(rec, HumanLabel) else by_text.get(
                (rec.question_id, rec.answer_sha256), matched.get(f"{rel}:{no}"))
            if isinstance(rec, GoldLabel) and label in answers and run.keys[label].question_id != rec.question_id:
                label = None  # a recorded match names an answer to another question: not this record's
            if label not in answers:
                missed += 1
                continue
            run.once(rec.labeller, label, exp.dir, rel, no)
            out.append((label, {"origin": f"{rel}:{no}", "labeller": rec.labeller, "score": rec.score,
                                "status": "scored", "error": None, "time": rec.time, "note": rec.note}))
        unmatched.append((rel, missed))
    return Found(out, unmatched)


def _check_sealed(exp: Experiment, registered: list[Question], scale: tuple[int, ...]) -> None:
    """Every sealed labels file reads, checked against the registration."""
    questions = {q.id: q for q in registered}
    for rel in exp.gold.value("labels"):
        read_gold_file(exp, rel, questions, scale, experiment_label_key(exp))


def _reread_match(rec: dict, path: Path, no: int, into: dict, stand_in: Callable[[Any], Any]) -> None:
    origin = rec.get("origin")
    if not isinstance(origin, str) or origin in into:
        raise BadInput(path, "must name a sealed gold record (file:line) once", line=no, field="origin")
    into[origin] = rec["label"]


def _program_scores(run: Run) -> Found:
    """The gold program's result on every answer, run contained; a bundle's recorded results taken as recorded."""
    spec = _registered(run, "program")
    if spec is None:
        return NOTHING
    done = run.recorded.of("program") if run.recorded else {}
    ask = [i for i in run.items if i.label not in done]  # what a bundle recorded is read, the rest scored contained
    scored, stopped = (program_scores(run.exp, [(run.questions[i.question_id], i.answer, i.label) for i in ask],
                                      run.scale) if ask else ([], None))
    results = dict(done) | {i.label: r for i, r in zip(ask, scored, strict=True)}
    return Found([(i.label, {"origin": spec, "labeller": spec, "score": results[i.label][1],
                             "status": results[i.label][0], "error": results[i.label][2], "time": None, "note": ""})
                  for i in run.items], [], stopped)


def _reread_result(rec: dict, path: Path, no: int, into: dict, stand_in: Callable[[Any], Any]) -> None:
    label, status, score = rec["label"], rec.get("status"), rec.get("score")
    if label in into:
        raise BadInput(path, "holds the gold program's result on this answer twice: one per label", line=no,
                       field="label")
    if status not in ("scored", "undecided", "error") or (type(score) is int) != (status == "scored"):
        raise BadInput(path, "must be a status (scored, undecided, error) with a score exactly when scored",
                       line=no, field="status")
    error = stand_in(rec.get("error"))
    if (error is None) != (status != "error") or error is not None and not isinstance(error, str):
        raise BadInput(path, "holds an error exactly when the status is error", line=no, field="error")
    into[label] = (status, score, error)


def _people_scores(run: Run) -> Found:
    """The labels people gave the run (labels/<labeller>.jsonl in its folder, hash-chained per labeller)."""
    if run.run_dir is None:
        return NOTHING
    out: list[tuple[str, Entry]] = []
    for rel, no, lab in people_labels(run.run_dir, run_key(run.label_key), {i.label for i in run.items}, run.scale):
        run.once(lab.labeller, lab.label, Path(run.run_dir), rel, no)
        out.append((lab.label, {"origin": f"{rel}:{no}", "labeller": lab.labeller, "score": lab.score,
                                "status": "scored", "error": None, "time": lab.time, "note": lab.note}))
    return Found(out, [])


register(GoldSource(LABELS, _sealed_scores, check=_check_sealed, publish=lambda s, withhold: {"origin": s.origin},
                    reread=_reread_match))
register(GoldSource(PROGRAM, _program_scores, check=check_program,
                    publish=lambda s, withhold: {"status": s.status, "score": s.score, "error": withhold(s.error)},
                    reread=_reread_result))
register(GoldSource(HUMAN, _people_scores, people=True))
