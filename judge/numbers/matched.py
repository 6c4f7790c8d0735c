"""One arm and quant of a results folder as per-question scores keyed by the sha256 of each question's text, and two
or more such sides matched: the questions of runs are the same exam only when their texts are the same, never by id
alone. `python -m judge compare` (judge.outputs.compare) reads two folders through it, and a registered comparison
with a previous run (judge.numbers.registered_comparisons) reads the previous folder through it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from core.errors import BadInput
from registration.prereg import Experiment
from registration.questions import Question

from ..results.files import RUN, anchor, load
from .cells import per_question


@dataclass(frozen=True)
class Side:
    """One arm and quant of one results folder, as the comparison reads it."""

    folder: Path
    anchor: str | None
    arm: str
    quant: str
    judge: str
    rubric: str | None
    points: tuple[int, ...]
    samples: int
    questions: dict[str, Question]  # text sha256 -> the question (the run's own id and set)
    scores: dict[str, Fraction]  # text sha256 -> the question's mean score, exact
    exp: Experiment


def text_sha256(q: Question) -> str:
    return hashlib.sha256(q.question.encode("utf-8")).hexdigest()


def read_side(run_dir: Path, arm: str | None, quant: str | None, exp_dir: Path | None = None) -> Side:
    """The primary judge's per-question scores of one arm and quant of a results folder (the run's first arm and
    first quant when not named), keyed by the sha256 of each question's text."""
    f = load(run_dir, exp_dir)  # every check of a results folder and its experiment, as review reads it
    runs = f.run.arms
    arm = arm or runs[0]
    if arm not in runs:
        raise BadInput(f.run_dir / RUN, f"has no arm {arm!r} (it ran {', '.join(runs)})", field="arms")
    quants = list(f.exp.arm(arm).quants)
    quant = quant or quants[0]
    if quant not in quants:
        raise BadInput(f.run_dir / RUN, f"arm {arm!r} has no quant {quant!r} (registered: "
                       f"{', '.join(quants)})", field="arms")
    primary = f.run.judge.primary
    questions = {text_sha256(q): q for q in f.questions.values()}
    sha_of = {q.id: sha for sha, q in questions.items()}
    mine = per_question(f.raw.keys, f.raw.judgments, primary).get((arm, quant), {})
    scores = {sha_of[qid]: s for qid, s in mine.items() if qid in sha_of}
    return Side(f.run_dir, anchor(f.run_dir), arm, quant, primary, f.run.judge.rubric, f.scale,
                f.exp.arm(arm).samples, questions, scores, f.exp)


def mismatches(a: Side, b: Side) -> list[str]:
    """Each question that is not in both runs with the same text, named by its id on the side that has it."""
    out = []
    ids_b = {q.id: sha for sha, q in b.questions.items()}
    for sha, q in a.questions.items():
        if sha in b.questions:
            continue
        why = "has other text in" if q.id in ids_b else "is not in"
        out.append(f"{q.id} (in {a.folder}) {why} {b.folder}")
    ids_a = {q.id for q in a.questions.values()}
    out += [f"{q.id} (in {b.folder}) is not in {a.folder}" for sha, q in b.questions.items()
            if sha not in a.questions and q.id not in ids_a]
    return out


def same_questions(sides: list[Side]) -> None:
    """Every run holds the first run's questions, by text: else bad input naming each question that differs."""
    for other in sides[1:]:
        wrong = mismatches(sides[0], other)
        if wrong:
            shown = "; ".join(wrong[:20]) + (f"; and {len(wrong) - 20} more" if len(wrong) > 20 else "")
            raise BadInput(other.folder / RUN, f"is not over the same questions as {sides[0].folder} "
                           f"(matched by the sha256 of each question's text): {shown}", field="question_ids")


def cautions(a: Side, b: Side) -> list[str]:
    out = []
    if a.judge != b.judge:
        out.append(f"the runs were graded by different judges ({a.judge}, {b.judge}): a difference may be the "
                   "judges'")
    if a.rubric != b.rubric:
        out.append(f"the runs were graded against different rubrics ({a.rubric}, {b.rubric})")
    return out
