"""Gold scores: what the judge is measured against, from three sources, each answer's score with how it was chosen.

Sources, all on the rubric's scale, all of the answer *as the judge saw it* (judge.judging.blinding: normalised,
identity text scrubbed), so a gold score grades exactly what the judge graded:

* ``labels``: sealed labels files registered as ``[gold] labels`` (inside the experiment folder, sealed with it,
  so written before the run). A file holds either ``gold`` records (core.records.GoldLabel: a question id and the
  sha256 of the answer's text as the judge saw it; any run of the experiment whose answer has that text gets the
  score) or ``label`` records (core.records.HumanLabel, hash-chained: a labels file of a run of this experiment,
  downloaded from the blind review page or copied from a results folder's ``labels/``, of a folder bound before
  blinding secrets, whose labels are keyed by the experiment's seed and name and so name the same answer row in every
  such run). A folder bound since has labels from its own secret (arms.folder), which no file sealed before its run
  can name: such records count as unmatched there; ``gold`` records (by answer text) apply to every run.
* ``program``: the gold program registered as ``[gold] program = "file.py:function"``, run from its sealed source
  in a child process under ``[gold] timeout_s`` (arms.contained), called as ``function(question, reference,
  answer)`` with the sealed question (registration.questions.Question: ``.id``, ``.question``, ``.tags``,
  ``.cluster``), its reference answer (or None) and the answer's text as the judge saw it; it returns a score on
  the rubric's scale, or None where code cannot decide. A program that raises, or returns anything else, gives
  that answer a gold ``error`` naming the program, the question and the answer's label (never a traceback); one
  that exits, crashes or hangs gives that answer, and every one after it, an error saying so; a program that cannot
  be imported, or stops on a reference answer, is bad input before the first model call (`check_gold`).
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

import hashlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from arms.contained import NotLoaded, Outcome, load_function, run_contained
from arms.folder import label_key as experiment_label_key
from core import jsonl
from core.errors import BadInput
from core.records import GoldLabel, HumanLabel, KeyRow, row_id
from core.text import shown
from registration.prereg import GOLD_PROGRAM, Experiment
from registration.questions import Question, load_questions
from registration.seal import inside, sealed_bytes
from registration.toml_lines import KeyLines

from ..judging.blinding import BlindItem, label_for, label_secret
from ..numbers.stats.ppi import label_sample
from ..results.files import Folder, load
from .labels import check_score_labeller_time, labeller_files, numbered_labels, numbered_samples, people_labels, run_key

SOURCES = ("labels", "program", "human")  # the order scores of one answer are listed in
STATUSES = ("scored", "undecided", "error")


@dataclass(frozen=True)
class GoldScore:
    """One gold score of one answer of the run. An answer may have several: one per source and labeller."""

    label: str  # the answer's blinded label
    row: str  # its answer row (core.records.row_id)
    arm: str
    quant: str
    question_id: str
    sample: int
    source: str  # SOURCES
    origin: str  # where it was read: "gold/labels.jsonl:3", the program "gold.py:score", "labels/ann.jsonl:7"
    labeller: str  # who or what gave it: the record's labeller, or the program
    score: int | None  # None unless status is "scored"
    status: str  # "scored"; "undecided" (the program returned None); "error" (the program raised or returned off-scale)
    error: str | None
    time: str | None  # when it was given (None for the program: it is recomputed from sealed code)
    note: str
    design: str  # registration.vocabulary.GOLD_DESIGNS
    stratum: str | None  # design complete_strata: the tag whose every answer has gold
    draw: int | None  # a person's label on a question of a random sample: the sample's index in GoldSet.draws


@dataclass(frozen=True)
class GoldStratum:
    """A question tag of the run, and how much of it has gold."""

    name: str
    questions: tuple[str, ...]  # the run's questions carrying the tag, in the run's order
    answers: int  # blinded single answers to them
    with_gold: int  # of those, answers with at least one scored gold score
    complete: bool  # every answer has gold (and there is at least one)


@dataclass(frozen=True)
class Draw:
    """A seeded random sample of the run's questions drawn for labelling (labels/_samples.jsonl)."""

    labeller: str
    seed: int
    n: int
    population: tuple[str, ...]
    picked: tuple[str, ...]
    time: str
    line: int  # its line in labels/_samples.jsonl
    problem: str | None = None  # why it is not a random sample (its labels are then convenience); None: it is


@dataclass(frozen=True)
class GoldSet:
    """Every gold score of a run's single answers, with the strata and samples that decide each one's design."""

    scale: tuple[int, ...]
    answers: int  # blinded single answers in the run
    scores: tuple[GoldScore, ...]  # in the blinded order of the answers, then SOURCES order
    strata: tuple[GoldStratum, ...]  # every tag of the run's questions, by name
    draws: tuple[Draw, ...]
    program: str | None  # the registered gold program
    files: tuple[str, ...]  # the registered sealed labels files
    unmatched: tuple[tuple[str, int], ...]  # (sealed file, records naming no answer of this run)
    stopped: str | None = None  # the gold program exited, crashed or ran past its time limit: where, and how

    @property
    def scored(self) -> tuple[GoldScore, ...]:
        return tuple(s for s in self.scores if s.status == "scored")

    @property
    def errors(self) -> tuple[GoldScore, ...]:
        return tuple(s for s in self.scores if s.status == "error")

    @property
    def complete_strata(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.strata if s.complete)

    def by_label(self) -> dict[str, list[GoldScore]]:
        out: dict[str, list[GoldScore]] = {}
        for s in self.scores:
            out.setdefault(s.label, []).append(s)
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ----------------------------------------------------------------------------------------
# The gold program
# ----------------------------------------------------------------------------------------

GoldProgram = Callable[[Question, "str | None", str], "int | None"]
PROBE = (None, None, "")  # arguments like those the program must accept: (question, reference, answer)
ProgramResult = tuple[str, "int | None", "str | None"]  # (status, score, error) of program_scores


@dataclass(frozen=True)
class Recorded:
    """What a published bundle (judge.verify.bundle) records of the gold sources on the answers whose text it withholds,
    computed at publishing where the text is: the gold program's result by blinded label, and which answer (label)
    each sealed `gold` record ("file:line") matched by its text's sha256."""

    program: Mapping[str, ProgramResult] = field(default_factory=dict)
    matched: Mapping[str, str] = field(default_factory=dict)


def _registered(exp: Experiment, message: str, field: str) -> BadInput:
    file = exp.dir / "prereg.toml"
    return BadInput(file, message, line=KeyLines(file.read_text()).find(("gold",), field), field=field)


def _program_file(exp: Experiment) -> tuple[str, Path, str] | None:
    """(spec, file, function) of the registered gold program; None when none is registered."""
    spec = exp.gold.program if exp.gold else None
    if spec is None:
        return None
    m = GOLD_PROGRAM.match(spec)
    path = inside(exp.dir, m.group("file"), exp.dir / "prereg.toml", "program")
    if not path.is_file():
        raise _registered(exp, f"gold program {spec!r}: no file {path}", "program")
    return spec, path, m.group("function")


def _not_loaded(exp: Experiment, spec: str, e: NotLoaded) -> BadInput:
    """Why the gold program cannot be called, as bad input naming prereg.toml's `program` (or the file at fault)."""
    if e.kind == "sealed":
        return BadInput(e.file, e.text, line=e.line, field=e.field)
    if e.kind == "syntax":
        return BadInput(e.file, f"gold program {spec!r} cannot be imported: {e.text}", line=e.line, field="program")
    what = {"raised": f"cannot be imported: {e.text}", "signature": "must take (question, reference, answer)",
            "stopped": f"{e.text}: it must import and return, never end or hang the process"}
    return _registered(exp, f"gold program {spec!r} {what.get(e.kind, e.text)}", "program")


def load_program(exp: Experiment) -> GoldProgram | None:
    """The registered gold program, imported from its sealed source into this process; None when none is
    registered. Anything that stops it from being called as (question, reference, answer) is bad input naming
    prereg.toml's `program`. The harness itself calls it contained (`program_scores`); this is for testing a
    program's own rules."""
    found = _program_file(exp)
    if found is None:
        return None
    spec, path, function = found
    try:
        return load_function(path, function, exp.dir, PROBE)
    except NotLoaded as e:
        raise _not_loaded(exp, spec, e) from None


def program_scores(exp: Experiment, calls: list[tuple[Question, str, str]],
                   scale: tuple[int, ...]) -> tuple[list[tuple[str, int | None, str | None]], str | None]:
    """(status, score, error) of the gold program on each (question, answer, label) of `calls` ("scored",
    "undecided" for None, or "error"), and what stopped it, if it stopped. It runs contained (arms.contained): in one
    child process for the whole batch, each call within `[gold] timeout_s`. A program that exits, crashes or runs
    past the limit gives the answer it was scoring an error saying so, and every answer after it an error naming
    that one; a program that cannot be imported is bad input naming prereg.toml's `program`."""
    spec, path, function = _program_file(exp)
    args = [(q, q.reference, answer) for q, answer, _ in calls]
    out: list[tuple[str, int | None, str | None]] = []
    stopped = None
    try:
        for n, outcome in enumerate(run_contained(path, function, exp.dir, PROBE, args, exp.gold.timeout_s)):
            q, _, label = calls[n]
            if outcome.kind == "stopped":
                stopped = f"gold program {spec} {outcome.value} on question {q.id!r} (answer {label})"
                out.append(("error", None, stopped))  # and the last outcome: the child is gone
            else:
                out.append(_program_outcome(outcome, spec, q, label, scale))
    except NotLoaded as e:
        raise _not_loaded(exp, spec, e) from None
    out += [("error", None, f"gold program {spec} was not called on question {q.id!r} (answer {label}): {stopped}")
            for q, _, label in calls[len(out):]]
    return out, stopped


def _program_outcome(outcome: Outcome, spec: str, question: Question, label: str,
                     scale: tuple[int, ...]) -> tuple[str, int | None, str | None]:
    """(status, score, error) of one call as the contained child reported it (arms.contained.Outcome)."""
    if outcome.kind == "raised":
        return "error", None, (f"gold program {spec} raised {_shown(outcome.value, str)} on question {question.id!r} "
                               f"(answer {label})")
    got = outcome.value
    if outcome.kind == "value" and got is None:
        return "undecided", None, None
    if outcome.kind != "value" or type(got) is not int or got not in scale:
        said = _shown(got, str if outcome.kind == "other" else repr)
        return "error", None, (f"gold program {spec} returned {said} on question {question.id!r} (answer {label}): "
                               f"not a score on the rubric's scale {list(scale)}, nor None")
    return "scored", got, None


def _shown(value: object, how: Callable[[object], str]) -> str:
    """What the program gave, as text for its error: whatever it is (an int too long to print, an object whose repr
    raises, text with lone surrogates), never an exception of its own."""
    try:
        text = how(value)
    except Exception:  # noqa: BLE001 - user code's __repr__/__str__, or an int past str()'s digit limit
        text = f"a {type(value).__name__} that cannot be shown"
    return shown(text if len(text) <= 200 else text[:197] + "...")


def check_program(exp: Experiment, registered: list[Question], scale: tuple[int, ...]) -> None:
    """Before the first model call: the gold program imports and takes (question, reference, answer), and scoring
    one reference answer (the first registered question that has one) neither exits, crashes nor runs past
    `[gold] timeout_s`: bad input naming prereg.toml's `program`, the question and what happened."""
    if _program_file(exp) is None:
        return
    q = next((q for q in registered if q.reference is not None), registered[0])
    _, stopped = program_scores(exp, [(q, q.reference or "", "the reference")], scale)
    if stopped:
        raise _registered(exp, f"{stopped}, checked before the first model call: a gold program returns a score or "
                          "None, and never ends or hangs the process it runs in", "program")


# ----------------------------------------------------------------------------------------
# Sealed labels files
# ----------------------------------------------------------------------------------------


def experiment_labels(exp: Experiment, questions: Iterable[Question], key: str) -> set[str]:
    """Every blinded label a run of the experiment can give a single answer: one per registered (arm, quant,
    question, sample), derived from the label key as judge run derives them."""
    secret = label_secret(key)
    return {label_for(secret, row_id(a.name, quant, q.id, s)) for a in exp.arms for quant in a.quants
            for q in questions for s in range(a.samples)}


def read_gold_file(exp: Experiment, rel: str, questions: dict[str, Question], scale: tuple[int, ...],
                   key: str) -> list[tuple[int, GoldLabel | HumanLabel]]:
    """The records of one sealed gold labels file with their lines, each checked (exit 2 naming file, line and
    field): `gold` records name a registered question and an answer sha256, `label` records are a chained labels
    file of this experiment (`key`: its label key). One kind per file; one score per labeller and answer."""
    path = inside(exp.dir, rel, exp.dir / "prereg.toml", "labels")
    if not path.is_file():
        raise _registered(exp, f"gold labels file {rel!r}: no file {path}", "labels")
    sealed_bytes(exp.dir, path)  # refused unless exactly as sealed
    records = list(jsonl.read_sealed(path))  # a sealed input: every line counts, decoded as every input is
    if not records:
        raise BadInput(path, "holds no gold labels")
    if records[0][1].get("type") == HumanLabel.TYPE:
        return list(numbered_labels(path, run_key(key), experiment_labels(exp, questions.values(), key), scale,
                                    sealed=True))
    out: list[tuple[int, GoldLabel | HumanLabel]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for no, rec in records:
        if rec.get("type", GoldLabel.TYPE) != GoldLabel.TYPE:
            raise BadInput(path, f"reads {rec['type']!r}: a gold labels file holds one kind of record, and its first "
                           f"is {GoldLabel.TYPE!r}", line=no, field="type")
        g = GoldLabel.from_dict(rec, path, no)
        if g.question_id not in questions:
            raise BadInput(path, f"{g.question_id!r} is not a question of the experiment's sets", line=no,
                           field="question_id")
        if len(g.answer_sha256) != 64 or g.answer_sha256.strip("0123456789abcdef"):
            raise BadInput(path, f"{g.answer_sha256!r} is not a sha256 (64 lowercase hex digits)", line=no,
                           field="answer_sha256")
        check_score_labeller_time(g, scale, path, no, "every gold label names who or what gave it")
        before = seen.setdefault((g.labeller, g.question_id, g.answer_sha256), no)
        if before != no:
            raise BadInput(path, f"{g.labeller!r} already gave this answer a gold score at line {before}", line=no,
                           field="answer_sha256")
        out.append((no, g))
    return out


def answer_sha256(text: str) -> str:
    """How a `gold` record names an answer: the sha256 of its text as the judge saw it (BlindItem.answer)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_gold(exp: Experiment, registered: list[Question], scale: tuple[int, ...]) -> None:
    """Before the first model call: the gold program imports, takes (question, reference, answer) and scores a
    reference answer without ending or hanging (`check_program`), and every sealed labels file reads, checked
    against the registration. Its scores on answers come after collection."""
    if exp.gold is None:
        return
    check_program(exp, registered, scale)
    questions = {q.id: q for q in registered}
    for rel in exp.gold.labels:
        read_gold_file(exp, rel, questions, scale, experiment_label_key(exp))


# ----------------------------------------------------------------------------------------
# The gold set of a run
# ----------------------------------------------------------------------------------------


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
    given: dict[tuple[str, str], str] = {}  # (labeller, label) -> where it was read: one score each
    gold = exp.gold
    if gold and gold.labels:
        sets = [p for p in exp.set_paths() if recorded is None or p.is_file()]  # a bundle may withhold a set
        registered = {q.id: q for q in load_questions(sets, exp.set_formats_by_path())}
        registered |= {q: questions[q] for q in questions if q not in registered}  # its run's questions, described
        by_text = {(i.question_id, answer_sha256(i.answer)): i.label for i in items}
        matched = recorded.matched if recorded else {}
        for rel in gold.labels:
            missed = 0
            for no, rec in read_gold_file(exp, rel, registered, scale, experiment_label_key(exp)):
                label = rec.label if isinstance(rec, HumanLabel) else by_text.get(
                    (rec.question_id, rec.answer_sha256), matched.get(f"{rel}:{no}"))
                if isinstance(rec, GoldLabel) and label in found and by_label[label].question_id != rec.question_id:
                    label = None  # a recorded match names an answer to another question: not this record's
                if label not in found:
                    missed += 1
                    continue
                _once(given, rec.labeller, label, exp.dir, rel, no)
                found[label].append({"source": "labels", "origin": f"{rel}:{no}", "labeller": rec.labeller,
                                     "score": rec.score, "status": "scored", "error": None, "time": rec.time,
                                     "note": rec.note})
            unmatched.append((rel, missed))
    stopped = None
    if gold and gold.program:
        given = recorded.program if recorded else {}
        ask = [i for i in items if i.label not in given]  # what a bundle recorded is read, the rest scored contained
        scored, stopped = (program_scores(exp, [(questions[i.question_id], i.answer, i.label) for i in ask], scale)
                           if ask else ([], None))
        results = dict(given) | {i.label: r for i, r in zip(ask, scored, strict=True)}
        for i in items:
            status, score, error = results[i.label]
            found[i.label].append({"source": "program", "origin": gold.program, "labeller": gold.program,
                                   "score": score, "status": status, "error": error, "time": None, "note": ""})
    draws: list[Draw] = []
    if run_dir is not None:
        key = run_key(label_key)
        for rel, no, lab in people_labels(run_dir, key, set(found), scale):
            _once(given, lab.labeller, lab.label, Path(run_dir), rel, no)
            found[lab.label].append({"source": "human", "origin": f"{rel}:{no}", "labeller": lab.labeller,
                                     "score": lab.score, "status": "scored", "error": None, "time": lab.time,
                                     "note": lab.note})
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
        for f in sorted(found[i.label], key=lambda f: SOURCES.index(f["source"])):
            draw = drawn.get(i.question_id) if f["source"] == "human" else None
            design = "complete_strata" if stratum else "random_sample" if draw is not None else "convenience"
            scores.append(GoldScore(label=i.label, row=k.row, arm=k.arm, quant=k.quant, question_id=k.question_id,
                                    sample=k.sample, design=design, stratum=stratum, draw=draw, **f))
    return GoldSet(scale=tuple(scale), answers=len(items), scores=tuple(scores), strata=strata, draws=tuple(draws),
                   program=gold.program if gold else None, files=gold.labels if gold else (),
                   unmatched=tuple(unmatched), stopped=stopped)


def _once(given: dict[tuple[str, str], str], labeller: str, label: str, folder: Path, rel: str, no: int) -> None:
    """One score per labeller and answer across every labels file (sealed or in labels/): a second, in another file,
    is the same labeller counted twice (a chain copied under two names), bad input naming both files."""
    before = given.setdefault((labeller, label), f"{rel}:{no}")
    if before != f"{rel}:{no}":
        raise BadInput(folder / rel, f"{labeller!r} already gave answer {label} a gold score at {before}: one score "
                       "per labeller and answer across every labels file, so a labels file copied under another name "
                       "never counts its labeller twice", line=no, field="label")


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
            labelled = sum(any(f["source"] == "human" for f in found[lab]) for lab in answers)
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
