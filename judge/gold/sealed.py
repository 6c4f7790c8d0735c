"""Sealed gold labels files: `[gold] labels`, inside the experiment folder and sealed with it, so written before the
run. A file holds either ``gold`` records (core.records.GoldLabel: a question id and the sha256 of the answer's text
as the judge saw it; any run of the experiment whose answer has that text gets the score) or ``label`` records
(core.records.HumanLabel, hash-chained: a labels file of a run of this experiment, downloaded from the blind review
page or copied from a results folder's ``labels/``, of a folder bound before blinding secrets, whose labels are keyed
by the experiment's seed and name and so name the same answer row in every such run). A folder bound since has labels
from its own secret (arms.folder), which no file sealed before its run can name: such records count as unmatched
there; ``gold`` records (by answer text) apply to every run."""
from __future__ import annotations

import hashlib
from typing import Iterable

from core import jsonl
from core.errors import BadInput
from core.records import GoldLabel, HumanLabel, row_id
from registration.gold import at_key
from registration.prereg import Experiment
from registration.questions import Question
from registration.seal import inside, sealed_bytes

from ..judging.blinding import label_for, label_secret
from .labels import check_score_labeller_time, numbered_labels, run_key


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
        raise at_key(exp.dir, f"gold labels file {rel!r}: no file {path}", "labels")
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
