"""A results folder's files, and reading them: the raw files' names, the anchor over what a decision depends on,
the raw rows as the analysis reads them (each key's current record), and the folder as a whole as a review, gold
and labelling read it (run.json, the experiment, its questions, the blinded order).

One module holds where a folder's files are and how they are read; what judging binds in it is judge.results.binding,
run.json's registered part judge.results.runinfo.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arms.folder import ANSWERS, BINDING, BLINDING, JUDGMENTS, RUN, read_binding
from core import jsonl
from core.errors import BadInput
from core.records import (
    ANSWER_KEY,
    JUDGMENT_KEY,
    RETEST_KEY,
    AnswerRow,
    Binding,
    Judgment,
    KeyRow,
    Numbers,
    PairKey,
    Retest,
    RunInfo,
    blinding_key,
)
from registration.prereg import Experiment, load_experiment
from registration.questions import Question, load_questions
from registration.rubric import load_rubric, rubric_dir

from ..judging.blinding import BlindItem, blind

# the folder's files by name (the binding's, the raw files' and run.json's are named in arms.folder, which writes them
# first and may not import this module): every reader names a file through these
RAW_FILES = (ANSWERS, BLINDING, JUDGMENTS)
RETESTS = "retests.jsonl"  # the verdicts asked again ([judge] retest): present only when registered
NUMBERS = "numbers.json"
REPORT = "report.md"
REVIEW = "review.md"  # every answer beside its verdicts (judge.outputs.review_md)
INVOCATIONS = "invocations.jsonl"  # one record per finished `judge run`: a log, outside the anchor


def raw_sha256(run_dir: Path) -> dict[str, str]:
    """The raw files' sha256, and the folder's binding.json (absent from folders written before binding)."""
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
            for name in (*RAW_FILES, RETESTS, BINDING) if (run_dir / name).exists()}


# What a decision depends on, in the anchor's canonical order: the registration as the folder bound it (binding.json:
# the sha256 of prereg.toml, of the MANIFEST that hashes every sealed file, of each set, glue, rubric and chat
# template, and the amendment chain's head when judging began), the run's record, the raw evidence, and the numbers
# (which hold every amendment's text and date). report.md and the plots are rendered from these and re-rendered by
# verify; invocations.jsonl (when each `judge run` finished, on what) is a log, not evidence.
ANCHOR_FILES = (BINDING, RUN, *RAW_FILES, NUMBERS)


def anchor(run_dir: Path) -> str | None:
    """One sha256 over everything a decision depends on, for a reviewer to record outside the folder: the sha256 of
    what `sha256sum binding.json run.json answers.jsonl blinding.jsonl judgments.jsonl numbers.json` prints in the
    results folder. None when one of the files is missing (a folder written before folders were bound)."""
    run_dir = Path(run_dir)
    if not all((run_dir / name).is_file() for name in ANCHOR_FILES):
        return None
    listing = "".join(f"{hashlib.sha256((run_dir / name).read_bytes()).hexdigest()}  {name}\n"
                      for name in ANCHOR_FILES)
    return hashlib.sha256(listing.encode()).hexdigest()


@dataclass(frozen=True)
class Raw:
    """The raw files as the analysis reads them: the current record of each answer row and verdict."""

    answers: list[AnswerRow]
    keys: list[KeyRow]
    pkeys: list[PairKey]
    judgments: list[Judgment]
    retried_rows: frozenset[str]  # answer rows asked again after an error (their current row has `retry_of`)
    first_judgment: str | None  # earliest verdict time, superseded error verdicts included: judging began then
    retests: list[Retest] = ()  # the current record of each verdict asked again (retests.jsonl), if any


def load_raw(run_dir: Path) -> Raw:
    answers = jsonl.current(run_dir / ANSWERS, ANSWER_KEY, required=("arm",), make=AnswerRow.from_dict).values()
    keys, pkeys = [], []
    for no, r in jsonl.read(run_dir / BLINDING):
        k = blinding_key(r, run_dir / BLINDING, no)
        (pkeys if isinstance(k, PairKey) else keys).append(k)
    judgments = [c.record for c in jsonl.current(run_dir / JUDGMENTS, JUDGMENT_KEY, make=Judgment.from_dict).values()]
    times = [r["time"] for _, r in jsonl.read(run_dir / JUDGMENTS) if r.get("time")]
    retests = ([c.record for c in jsonl.current(run_dir / RETESTS, RETEST_KEY, make=Retest.from_dict).values()]
               if (run_dir / RETESTS).exists() else [])
    return Raw([c.record for c in answers], keys, pkeys, judgments,
               frozenset(c.record.row for c in answers if c.superseded),
               min(times, key=lambda t: utc(t, run_dir / JUDGMENTS, "time")) if times else None, retests)


def utc(text: str, file: Path | str, field: str) -> dt.datetime:
    """An ISO 8601 time as an instant in UTC: times are compared as times, never as text (offsets differ)."""
    try:
        t = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        t = None
    if t is None or t.tzinfo is None:
        raise BadInput(file, f"{text!r} is not an ISO 8601 time with a UTC offset", field=field)
    return t.astimezone(dt.timezone.utc)


@dataclass(frozen=True)
class Folder:
    """A results folder as a review reads it."""

    run_dir: Path
    run: RunInfo
    exp: Experiment
    questions: dict[str, Question]  # the run's questions, in its order
    raw: Raw
    answers: list[AnswerRow]  # current rows of the run's arms and questions
    items: list[BlindItem]  # the judge's view, in the blinded order (answers with a single-answer key)
    scale: tuple[int, ...]
    # what labels files name the run by (`labels_name`; judge.gold.labels.run_key of it): never a label's key
    label_key: str


def labels_name(doc: Binding | None, label_key: str) -> str:
    """What labels files name a results folder's run by (judge.gold.labels.run_key of it): the sha256 of its blinding
    secret that binding.json records (public, random, and no label derives from it), or, in a folder bound before
    blinding secrets, its label key, as its labels files were written."""
    sha = doc.blinding_secret_sha256 if doc else None
    return f"blinding secret sha256:{sha}" if sha else label_key


def load(run_dir: Path, exp_dir: Path | None = None, questions: list[Question] | None = None) -> Folder:
    """A results folder's raw files, its run.json and its experiment, each refused (exit 2, named) if unusable.
    `questions`: the registered questions as given (a published bundle's, judge.verify.bundle), else read from the
    sets."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(run_dir, "not a results folder (no such directory)")
    if not (run_dir / RUN).is_file():
        raise BadInput(run_dir / RUN, "missing: not a results folder written by `judge run`")
    run = RunInfo.read_file(run_dir / RUN)
    if exp_dir is None and run.experiment_dir is None:
        raise BadInput(run_dir / RUN, "missing: the experiment folder is not recorded; pass it with --exp",
                       field="experiment_dir")
    for name in RAW_FILES:
        if not (run_dir / name).is_file():
            raise BadInput(run_dir / name, "missing: not a results folder written by `judge run`")
    exp = load_experiment(Path(exp_dir or run.experiment_dir))
    wanted = set(run.question_ids)
    questions = {q.id: q for q in (questions or load_questions(exp.set_paths(), exp.set_formats_by_path()))
                 if q.id in wanted}
    missing = [q for q in run.question_ids if q not in questions]
    if missing:
        raise BadInput(run_dir / RUN, f"names question {missing[0]!r}, which no set of the experiment at "
                       f"{exp.dir} holds (pass the experiment it was run on with --exp)", field="question_ids")
    questions = {q: questions[q] for q in run.question_ids}
    raw = load_raw(run_dir)
    answers = [a for a in raw.answers if a.arm in run.arms and a.question_id in questions]
    # the blinded order, as judge run derives it, with the labels blinding.jsonl keys (judge verify re-derives them
    # from the folder's secret): nothing that reads a folder for people needs the secret
    label_key = labels_name(read_binding(run_dir), run.label_key or f"blinding:{exp.seed}:{run.name}")
    items = blind(answers, questions, b"", exp.seed, exp.scrub, labels={k.row: k.label for k in raw.keys})[0]
    rubric = run.judge.rubric or exp.rubric
    scale = load_rubric(rubric, rubric_dir(rubric, exp.dir)).scale
    return Folder(run_dir, run, exp, questions, raw, answers, items, scale, label_key)


def last_invocation(run_dir: Path) -> dict[str, Any]:
    """The record of the last `judge run` into `run_dir` that finished (invocations.jsonl: pipeline.invocation)."""
    records = [r for _, r in jsonl.read(Path(run_dir) / INVOCATIONS)]
    if not records:
        raise BadInput(Path(run_dir) / INVOCATIONS, "no `judge run` has finished in this results folder")
    return records[-1]


def read_numbers(run_dir: Path) -> Numbers | None:
    """The folder's numbers.json, read through its contract; None before the run finished (no numbers yet)."""
    path = Path(run_dir) / NUMBERS
    return Numbers.read_file(path) if path.is_file() else None
