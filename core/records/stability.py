"""numbers.json's `stability`: pass^k, pass@k and the agreement across each cell's K samples."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Entry


@dataclass(frozen=True)
class StabilityEstimate(Entry):
    """A stability statistic of a cell: its mean over questions and bootstrap interval
    (judge.numbers.stats.stability)."""

    WHAT: ClassVar[str] = "a stability estimate in numbers.json"

    estimate: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class StabilityCell(Entry):
    """One (arm, quant) of numbers.json's `stability`: over the questions whose K samples were all scored."""

    WHAT: ClassVar[str] = "a cell of numbers.json's stability"

    arm: str
    quant: str
    k: int  # the arm's registered samples per question
    questions: int  # questions with every sample scored: what each statistic is a mean over
    incomplete: int  # the run's questions with a sample not scored: left out, neither a pass nor a fail
    resampling: str  # "questions", or "clusters" of questions
    units: int
    pass_hat_k: StabilityEstimate | None  # pass^k: every sample at or above the pass score; None: no question
    pass_at_k: StabilityEstimate | None  # pass@k: at least one sample at or above it
    pass_rate: StabilityEstimate | None  # the share of a question's samples at or above it
    unanimous: StabilityEstimate | None  # every sample scored alike; None at K = 1
    agreement: StabilityEstimate | None  # the share of pairs of samples scored alike; None at K = 1


@dataclass(frozen=True)
class Stability(Entry):
    """pass^k, pass@k and the agreement across each cell's K samples (judge.numbers.stability), with how they were
    drawn."""

    WHAT: ClassVar[str] = "numbers.json's stability"

    pass_score: float  # registered `[analysis] pass_score`, else the rubric's highest score
    confidence: float
    method: str
    resamples: int
    seed: int
    cells: list[StabilityCell]
