"""What a reviewer reads beside each verdict: answers, blinding keys and verdicts joined per hypothesis and question.

A mean hides what one answer shows at once, so a reviewer must be able to read every answer next to its
scores. `review` makes that join once, from the raw files (each key's current record, as judge.numbers.analysis reads
them), run.json and the experiment's sealed questions; judge.outputs.view renders it as review.html, and any other page
or appendix can render it too. `blind_view` is the other projection: only what the judge saw (labels, question,
reference, the scrubbed answer) in the blinded order it was handed them, for a person to score blind.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from core.errors import BadInput
from core.records import Judgment, Numbers, PairKey, RunInfo
from registration.questions import Question

from ..gold.labels import run_key
from ..judging.blinding import BlindItem
from ..results.files import BLINDING, Folder, anchor, load, read_numbers


class GoldShown(Protocol):
    """What the join shows of a gold score (judge.gold.sources.GoldScore): the join is handed the scores, read from the
    same loaded folder (judge.results.files.load), and never reads them itself."""

    source: str
    origin: str
    labeller: str
    score: int | None
    status: str
    error: str | None
    note: str  # what the labeller wrote beside the score ("" when nothing)


@dataclass(frozen=True)
class Answer:
    """One answer row with its blinding key and its verdicts."""

    row: str
    arm: str
    quant: str
    question_id: str
    sample: int
    status: str  # ok | error (the model call failed: never blinded, never judged)
    text: str | None  # the answer as written
    shown: str | None  # the answer as the judge read it (normalised, identity text scrubbed); None if never blinded
    label: str | None
    scrubbed: int  # identity matches removed before the judge read it
    injection: int  # grader-directed text found in it
    truncated: bool
    error: dict[str, Any] | str | None  # the answer call's failure
    verdicts: tuple[Judgment, ...]  # its single-answer verdicts (each judge's current one), in panel order
    # its gold scores from every source (judge.gold.sources), scored or not, in SOURCES order
    gold: tuple[GoldShown, ...] = ()

    def score(self, judge: str) -> int | None:
        return next((v.score for v in self.verdicts if v.judge == judge and v.status == "scored"), None)

    @property
    def gold_scored(self) -> tuple[int, ...]:
        """Its gold scores that are scores: a program's undecided answer or error is none."""
        return tuple(g.score for g in self.gold if g.status == "scored")

    @property
    def gold_mean(self) -> Fraction | None:
        """The mean of its gold scores, exact, as judge.outputs.export takes an answer's gold; None without one."""
        s = self.gold_scored
        return Fraction(sum(s), len(s)) if s else None

    @property
    def flagged(self) -> bool:
        """Grader-directed text, or identity text the judge was not shown."""
        return self.injection > 0 or self.scrubbed > 0

    @property
    def disagreement(self) -> bool:
        """Two judges scored this answer differently."""
        return len({v.score for v in self.verdicts if v.status == "scored"}) > 1


def mean_score(answers: tuple[Answer, ...], judge: str) -> Fraction | None:
    """The mean of the scored samples of one arm on one question, exact, as judge.numbers.analysis.per_question
    takes it."""
    scores = [s for s in (a.score(judge) for a in answers) if s is not None]
    return Fraction(sum(scores), len(scores)) if scores else None


@dataclass(frozen=True)
class Pair:
    """One question of one hypothesis: arm a's and arm b's answers at its quant, and any pairwise verdicts."""

    hypothesis: str
    question: Question
    a: tuple[Answer, ...]  # one per sample
    b: tuple[Answer, ...]
    pairwise: tuple[tuple[PairKey, Judgment], ...] = ()  # both orders of the pair, per judge

    def difference(self, judge: str) -> Fraction | None:
        """b − a on this question by `judge`; None unless both arms have a score (then it is not paired)."""
        a, b = mean_score(self.a, judge), mean_score(self.b, judge)
        return None if a is None or b is None else b - a

    def unscored(self, judge: str) -> bool:
        """An answer of either arm has no score from `judge`: a failed answer, an unscored or failed verdict, or
        none yet."""
        return any(x.score(judge) is None for x in (*self.a, *self.b)) or not self.a or not self.b

    @property
    def answers(self) -> tuple[Answer, ...]:
        return (*self.a, *self.b)


@dataclass(frozen=True)
class HypothesisPairs:
    id: str
    text: str
    a: str
    b: str
    quant: str
    subset: tuple[str, ...]
    pairs: tuple[Pair, ...]  # every question of its subset in the run, in the run's order


@dataclass(frozen=True)
class Review:
    run: RunInfo  # run.json
    numbers: Numbers | None  # numbers.json, when the run finished
    judges: tuple[str, ...]  # the panel, primary first, then any other judge found in judgments.jsonl
    scale: tuple[int, ...]  # the rubric's scale
    hypotheses: tuple[HypothesisPairs, ...]
    anchor: str | None = None  # the folder's (judge.results.files.anchor; None before folders were bound)


@dataclass(frozen=True)
class BlindView:
    """What a blind labeller may see: no arm, model, quant or judge, by construction."""

    run_key: str  # judge.gold.labels.run_key of the folder's labels name (`labels_name`): no label derives from it
    rubric: str
    scale: tuple[int, ...]
    items: tuple[BlindItem, ...]  # in the blinded order: judge run hands them to the judge so


def joined(d: Folder, gold: dict[str, list[GoldShown]]) -> Review:
    """Every registered hypothesis of a loaded folder, each question of its subset with both arms' answers, their
    verdicts and their gold scores (`gold`: by blinded label, judge.gold.sources.folder_gold of the same load)."""
    numbers = read_numbers(d.run_dir)
    panel = list(d.run.judge.panel or [d.run.judge.primary])
    judges = tuple(panel + sorted({j.judge for j in d.raw.judgments} - set(panel)))
    order = {name: i for i, name in enumerate(judges)}
    single: dict[str, list[Judgment]] = {}
    pairwise: dict[str, list[Judgment]] = {}
    for j in sorted(d.raw.judgments, key=lambda j: order[j.judge]):
        (single if j.kind == "single" else pairwise).setdefault(j.label, []).append(j)
    key_of = {k.row: k for k in d.raw.keys}
    shown = {i.label: i.answer for i in d.items}
    cells: dict[tuple[str, str, str], list[Answer]] = {}
    for a in sorted(d.answers, key=lambda a: a.sample):
        k = key_of.get(a.row)
        label = k.label if k else None
        cells.setdefault((a.arm, a.quant, a.question_id), []).append(Answer(
            a.row, a.arm, a.quant, a.question_id, a.sample, a.status, a.text, shown.get(label), label,
            k.scrubbed if k else 0, k.injection if k else 0, a.truncated, a.error,
            tuple(single.get(label, ())) if label else (), tuple(gold.get(label, ())) if label else ()))
    hyps = []
    for h in (h for h in d.exp.hypotheses if h.a in d.run.arms and h.b in d.run.arms):
        pairs = []
        for q in (q for q in d.questions.values() if all(t in q.tags for t in h.subset)):
            orders = [(k, v) for k in d.raw.pkeys if k.hypothesis == h.id and k.question_id == q.id
                      for v in pairwise.get(k.label, ())]
            pairs.append(Pair(h.id, q, tuple(cells.get((h.a, h.quant, q.id), ())),
                              tuple(cells.get((h.b, h.quant, q.id), ())), tuple(orders)))
        hyps.append(HypothesisPairs(h.id, h.text, h.a, h.b, h.quant, h.subset, tuple(pairs)))
    return Review(d.run, numbers, judges, d.scale, tuple(hyps), anchor(d.run_dir))


def blind_view(run_dir: Path, exp_dir: Path | None = None) -> BlindView:
    """The judge's view of the run's single answers, in the blinded order (questions shuffled, then each question's
    answers; the judge reads them so, an answer it is shown twice judged right after the first): what a person
    scores blind."""
    d = load(run_dir, exp_dir)
    if not d.items:
        raise BadInput(d.run_dir / BLINDING, "holds no blinding key of a single answer (a pairwise-only "
                       "run, or every answer failed): there is nothing to score blind")
    rubric = d.run.judge.rubric or d.exp.rubric
    return BlindView(run_key(d.label_key), rubric, d.scale, tuple(d.items))
