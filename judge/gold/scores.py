"""A run's gold as data: each answer's gold scores with the source and design of each, the question tags with how much
of each has gold, the seeded samples drawn for labelling, and what a published bundle recorded of the sources on the
answers whose text it withholds. judge.gold.sources computes them; the registered sources (judge.gold.registry) give
the scores."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

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
    source: str  # a registered gold source's name (judge.gold.registry.SOURCES)
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
    scores: tuple[GoldScore, ...]  # in the blinded order of the answers, then the sources' registered order
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


@dataclass(frozen=True)
class Recorded:
    """What a published bundle (judge.verify.bundle) records of the gold sources on the answers whose text it withholds,
    computed at publishing where the text is, by source name (judge.gold.registry.GoldSource.publish): the gold
    program's result by blinded label ("program"), and which answer (label) each sealed `gold` record ("file:line")
    matched by its text's sha256 ("labels")."""

    by_source: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def of(self, name: str) -> Mapping[str, Any]:
        return self.by_source.get(name, {})
