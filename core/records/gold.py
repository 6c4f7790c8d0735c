"""numbers.json's judge_validity: the gold scores of the run and each judge measured against them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from .check import Entry


@dataclass(frozen=True)
class Offset(Entry):
    """The judge's score minus the gold score, with its bootstrap interval (judge.numbers.stats.judge_error.Offset)."""

    WHAT: ClassVar[str] = "an offset of a judge against gold in numbers.json"

    n: int
    mean: float
    low: float
    high: float
    resampling: str
    units: int


@dataclass(frozen=True)
class ArmOffset(Entry):
    """A judge's offset against gold on one arm's answers (None: fewer than two)."""

    WHAT: ClassVar[str] = "an arm's offset in numbers.json"

    id: str
    offset: Offset | None


@dataclass(frozen=True)
class GoldAgreement(Entry):
    """A judge against every gold score of the answers it scored (judge.numbers.stats.judge_error.GoldAgreement)."""

    WHAT: ClassVar[str] = "a judge's agreement with gold in numbers.json"

    answers: int
    exact: float
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    krippendorff_alpha: float | None
    krippendorff_low: float | None
    krippendorff_high: float | None
    scale: list[int]
    confusion: list[list[int]]
    offset: Offset | None
    per_arm: list[ArmOffset]
    alpha: float
    resamples: int
    seed: int
    # absent in folders whose agreement intervals resampled answers ("answer"); now whole questions are resampled
    resampling: Literal["answer", "question"] = None
    exact_low: float = None  # exact agreement's bootstrap interval, on the same resamples (absent before it had one)
    exact_high: float = None
    # absent in folders whose agreement intervals were percentile intervals; now BCa over questions
    interval: Literal["bca"] = None


@dataclass(frozen=True)
class GoldPair(Entry):
    """The judge's offset on arm b minus that on arm a, per question, on one hypothesis's questions."""

    WHAT: ClassVar[str] = "a hypothesis's differential offset in numbers.json"

    id: str
    a: str
    b: str
    quant: str
    questions: int
    offset_difference: Offset | None


@dataclass(frozen=True)
class GoldDesigns(Entry):
    """Gold scores by the design that chose their answers (judge.gold.sources: a random sample, complete strata, or
    picked by hand)."""

    WHAT: ClassVar[str] = "gold designs in numbers.json"

    random_sample: int
    complete_strata: int
    convenience: int


@dataclass(frozen=True)
class GoldSources(Entry):
    """Gold scores by where they came from: sealed labels files, the registered program, people's labels."""

    WHAT: ClassVar[str] = "gold sources in numbers.json"

    labels: int
    program: int
    human: int


@dataclass(frozen=True)
class JudgeAgainstGold(Entry):
    """One judge against the gold scores (judge.numbers.validity.judge_against_gold)."""

    WHAT: ClassVar[str] = "a judge of numbers.json's judge_validity"

    id: str
    gold_scores: int
    designs: GoldDesigns
    agreement: GoldAgreement | None  # None: no answer it scored has gold
    pairs: list[GoldPair]


@dataclass(frozen=True)
class GoldDraw(Entry):
    """A seeded sample of questions drawn for labelling (core.records.LabelSample), as the gold scores used it."""

    WHAT: ClassVar[str] = "a gold sample draw in numbers.json"

    labeller: str
    seed: int
    n: int
    picked: list[str]
    # why the draw is not a random sample (its labels count as convenience): absent when it is, and in folders
    # written before draws were drawn again
    problem: str = None


@dataclass(frozen=True)
class GoldSummary(Entry):
    """The gold scores of the run: how many, from which source and by which design."""

    WHAT: ClassVar[str] = "numbers.json's judge_validity gold"

    answers: int
    with_gold: int
    scores: int
    undecided: int
    errors: int
    sources: GoldSources
    designs: GoldDesigns
    complete_strata: list[str]
    program: str | None
    draws: list[GoldDraw]


@dataclass(frozen=True)
class JudgeValidity(Entry):
    """The judges measured against gold (judge.numbers.validity.apply)."""

    WHAT: ClassVar[str] = "numbers.json's judge_validity"

    gold: GoldSummary
    judges: list[JudgeAgainstGold]
    primary: str
    mode: str
    min_gold_agreement: float | None
