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

from arms.folder import read_binding
from core import jsonl
from core.errors import BadInput
from core.records import (
    ANSWER_KEY,
    JUDGMENT_KEY,
    RETEST_KEY,
    AnswerRow,
    Judgment,
    KeyRow,
    PairKey,
    Retest,
    RunInfo,
    blinding_key,
)
from registration.prereg import Experiment, load_experiment
from registration.questions import Question, load_questions
from registration.rubric import load_rubric, rubric_dir

from ..judging.blinding import BlindItem, blind

RAW_FILES = ("answers.jsonl", "blinding.jsonl", "judgments.jsonl")
RETESTS = "retests.jsonl"  # the verdicts asked again ([judge] retest): present only when registered


def raw_sha256(run_dir: Path) -> dict[str, str]:
    """The raw files' sha256, and the folder's binding.json (absent from folders written before binding)."""
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
            for name in (*RAW_FILES, RETESTS, "binding.json") if (run_dir / name).exists()}


# What a decision depends on, in the anchor's canonical order: the registration as the folder bound it (binding.json:
# the sha256 of prereg.toml, of the MANIFEST that hashes every sealed file, of each set, glue, rubric and chat
# template, and the amendment chain's head when judging began), the run's record, the raw evidence, and the numbers
# (which hold every amendment's text and date). report.md and the plots are rendered from these and re-rendered by
# verify; invocations.jsonl (when each `judge run` finished, on what) is a log, not evidence.
ANCHOR_FILES = ("binding.json", "run.json", *RAW_FILES, "numbers.json")


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
    answers = jsonl.current(run_dir / "answers.jsonl", ANSWER_KEY, required=("arm",), make=AnswerRow.from_dict).values()
    keys, pkeys = [], []
    for no, r in jsonl.read(run_dir / "blinding.jsonl"):
        k = blinding_key(r, run_dir / "blinding.jsonl", no)
        (pkeys if isinstance(k, PairKey) else keys).append(k)
    judgments = [c.record for c in jsonl.current(run_dir / "judgments.jsonl", JUDGMENT_KEY,
                                                  make=Judgment.from_dict).values()]
    times = [r["time"] for _, r in jsonl.read(run_dir / "judgments.jsonl") if r.get("time")]
    retests = ([c.record for c in jsonl.current(run_dir / RETESTS, RETEST_KEY, make=Retest.from_dict).values()]
               if (run_dir / RETESTS).exists() else [])
    return Raw([c.record for c in answers], keys, pkeys, judgments,
               frozenset(c.record.row for c in answers if c.superseded),
               min(times, key=lambda t: utc(t, run_dir / "judgments.jsonl", "time")) if times else None, retests)


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
    run: dict[str, Any]
    exp: Experiment
    questions: dict[str, Question]  # the run's questions, in its order
    raw: Raw
    answers: list[AnswerRow]  # current rows of the run's arms and questions
    items: list[BlindItem]  # the judge's view, in the blinded order (answers with a single-answer key)
    scale: tuple[int, ...]
    # what labels files name the run by (`labels_name`; judge.gold.labels.run_key of it): never a label's key
    label_key: str




def labels_name(doc: dict[str, Any] | None, label_key: str) -> str:
    """What labels files name a results folder's run by (judge.gold.labels.run_key of it): the sha256 of its blinding
    secret that binding.json records (public, random, and no label derives from it), or, in a folder bound before
    blinding secrets, its label key, as its labels files were written."""
    sha = (doc or {}).get("blinding_secret_sha256")
    return f"blinding secret sha256:{sha}" if sha else label_key


def load(run_dir: Path, exp_dir: Path | None = None, questions: list[Question] | None = None) -> Folder:
    """A results folder's raw files, its run.json and its experiment, each refused (exit 2, named) if unusable.
    `questions`: the registered questions as given (a published bundle's, judge.verify.bundle), else read from the
    sets."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(run_dir, "not a results folder (no such directory)")
    if not (run_dir / "run.json").is_file():
        raise BadInput(run_dir / "run.json", "missing: not a results folder written by `judge run`")
    run = RunInfo.read_file(run_dir / "run.json").to_dict()
    if exp_dir is None and not isinstance(run.get("experiment_dir"), str):
        raise BadInput(run_dir / "run.json", "missing: the experiment folder is not recorded; pass it with --exp",
                       field="experiment_dir")
    for name in RAW_FILES:
        if not (run_dir / name).is_file():
            raise BadInput(run_dir / name, "missing: not a results folder written by `judge run`")
    exp = load_experiment(Path(exp_dir or run["experiment_dir"]))
    wanted = set(run["question_ids"])
    questions = {q.id: q for q in (questions or load_questions(exp.set_paths(), exp.set_formats_by_path()))
                 if q.id in wanted}
    missing = [q for q in run["question_ids"] if q not in questions]
    if missing:
        raise BadInput(run_dir / "run.json", f"names question {missing[0]!r}, which no set of the experiment at "
                       f"{exp.dir} holds (pass the experiment it was run on with --exp)", field="question_ids")
    questions = {q: questions[q] for q in run["question_ids"]}
    raw = load_raw(run_dir)
    answers = [a for a in raw.answers if a.arm in run["arms"] and a.question_id in questions]
    # the blinded order, as judge run derives it, with the labels blinding.jsonl keys (judge verify re-derives them
    # from the folder's secret): nothing that reads a folder for people needs the secret
    label_key = labels_name(read_binding(run_dir), run.get("label_key") or f"blinding:{exp.seed}:{run['name']}")
    items = blind(answers, questions, b"", exp.seed, exp.scrub, labels={k.row: k.label for k in raw.keys})[0]
    rubric = run["judge"].get("rubric") or exp.rubric
    scale = load_rubric(rubric, rubric_dir(rubric, exp.dir)).scale
    return Folder(run_dir, run, exp, questions, raw, answers, items, scale, label_key)
