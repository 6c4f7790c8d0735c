"""numbers.json's judge_validity: the gold scores of the run and each judge measured against them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from .check import Entry


@dataclass(frozen=True)
class Offset(Entry):
    """The judge's score minus the gold score, with its bootstrap interval (judge.numbers.stats.judge_error.offset)."""

    WHAT: ClassVar[str] = "an offset of a judge against gold in numbers.json"

    n: int  # answers (or questions) compared
    mean: float  # mean of judge score - gold score over them, in rubric points
    low: float  # two-sided (1 - 2 alpha) percentile bootstrap interval, lower end
    high: float  # two-sided (1 - 2 alpha) percentile bootstrap interval, upper end
    resampling: str  # what the bootstrap resamples: "answers", "questions" or "clusters"
    units: int  # how many of them it resamples


@dataclass(frozen=True)
class ArmOffset(Entry):
    """A judge's offset against gold on one arm's answers (None: fewer than two)."""

    WHAT: ClassVar[str] = "an arm's offset in numbers.json"

    id: str  # the arm's name
    offset: Offset | None  # judge - gold on that arm's answers; None with fewer than two


@dataclass(frozen=True, kw_only=True)
class GoldAgreement(Entry):
    """A judge against every gold score of the answers it scored (judge.numbers.stats.judge_error.against_gold)."""

    WHAT: ClassVar[str] = "a judge's agreement with gold in numbers.json"

    answers: int  # answers both the judge and gold scored
    exact: float  # share of answers where judge == gold
    exact_low: float = None  # exact agreement's bootstrap interval, on the same resamples (absent before it had one)
    exact_high: float = None  # exact agreement's bootstrap interval, upper end
    kappa: float | None  # quadratic-weighted Cohen's kappa; None where undefined (one category only)
    kappa_low: float | None  # its bootstrap interval (two-sided 95%), lower end; None where undefined
    kappa_high: float | None  # its bootstrap interval, upper end
    krippendorff_alpha: float | None  # ordinal Krippendorff's alpha of judge and gold; None where undefined
    krippendorff_low: float | None  # its bootstrap interval (two-sided 95%), lower end
    krippendorff_high: float | None  # its bootstrap interval, upper end
    scale: list[int]  # the rubric's scale points, the confusion matrix's order
    confusion: list[list[int]]  # confusion[i][j]: answers with gold scale[i] that the judge scored scale[j]
    offset: Offset | None  # judge - gold over all answers (None with fewer than 2)
    per_arm: list[ArmOffset]  # the offset per arm, in arm order
    alpha: float  # one-sided level of the intervals: 0.025, so two-sided 95% (judge.numbers.validity.ALPHA)
    resamples: int  # bootstrap resamples of the agreement intervals (judge.numbers.validity.RESAMPLES)
    seed: int  # the bootstrap's seed ([analysis] seed)
    # absent in folders whose agreement intervals resampled answers ("answer"); now whole questions are resampled
    resampling: Literal["answer", "question"] = None
    # absent in folders whose agreement intervals were percentile intervals; now BCa over questions
    interval: Literal["bca"] = None


@dataclass(frozen=True)
class GoldPair(Entry):
    """The judge's offset on arm b minus that on arm a, per question, on one hypothesis's questions."""

    WHAT: ClassVar[str] = "a hypothesis's differential offset in numbers.json"

    id: str  # the hypothesis's registered id
    a: str  # the reference arm
    b: str  # the arm compared with it
    quant: str  # the quantisation compared at
    questions: int  # questions whose every answer of both arms has gold and a verdict of this judge
    # per question, b's offset minus a's (judge.numbers.stats.judge_error.differential_offset)
    offset_difference: Offset | None


@dataclass(frozen=True)
class GoldDesigns(Entry):
    """Gold scores by the design that chose their answers (judge.gold.sources: a random sample, complete strata, or
    picked by hand)."""

    WHAT: ClassVar[str] = "gold designs in numbers.json"

    random_sample: int  # gold scores on questions of a seeded random sample (`judge label --sample`)
    complete_strata: int  # gold scores in a question tag whose every answer has gold
    convenience: int  # gold scores on answers picked by hand: agreement only, never a correction


@dataclass(frozen=True)
class JudgeAgainstGold(Entry):
    """One judge against the gold scores (judge.numbers.validity.judge_against_gold)."""

    WHAT: ClassVar[str] = "a judge of numbers.json's judge_validity"

    id: str  # the judge's name
    gold_scores: int  # gold scores of answers this judge scored
    designs: GoldDesigns  # those gold scores by design
    agreement: GoldAgreement | None  # None: no answer it scored has gold
    pairs: list[GoldPair]  # the differential offset per hypothesis


@dataclass(frozen=True)
class GoldDraw(Entry):
    """A seeded sample of questions drawn for labelling (core.records.LabelSample), as the gold scores used it."""

    WHAT: ClassVar[str] = "a gold sample draw in numbers.json"

    labeller: str  # who drew it (LabelSample.labeller)
    seed: int  # its seed
    n: int  # its sample size
    picked: list[str]  # the question ids drawn
    # why the draw is not a random sample (its labels count as convenience): absent when it is, and in folders
    # written before draws were drawn again
    problem: str = None


@dataclass(frozen=True)
class GoldSummary(Entry):
    """The gold scores of the run: how many, from which source and by which design."""

    WHAT: ClassVar[str] = "numbers.json's judge_validity gold"

    answers: int  # blinded single answers in the run
    with_gold: int  # of them, answers with at least one scored gold score
    scores: int  # scored gold scores (an answer may have several)
    undecided: int  # answers the gold program returned None for
    errors: int  # gold scores in error: the program raised or returned a score off the scale
    sources: dict[str, int]  # scored gold scores by source (judge.gold.registry's names: labels, program, human, ...)
    designs: GoldDesigns  # scored gold scores by design
    complete_strata: list[str]  # question tags whose every answer has gold
    program: str | None  # the registered gold program; None without one
    draws: list[GoldDraw]  # the seeded samples drawn for labelling (labels/_samples.jsonl)


@dataclass(frozen=True)
class JudgeValidity(Entry):
    """The judges measured against gold (judge.numbers.validity.apply)."""

    WHAT: ClassVar[str] = "numbers.json's judge_validity"

    gold: GoldSummary  # the run's gold scores
    judges: list[JudgeAgainstGold]  # each judge of the panel against them
    primary: str  # the primary judge
    mode: str  # [analysis] judge_error: "report" or "decide"
    min_gold_agreement: float | None  # registered floor of the primary judge's kappa lower bound; None: none registered
