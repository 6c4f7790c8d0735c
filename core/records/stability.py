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

    estimate: float  # the statistic's mean over the cell's complete questions (a share, 0 to 1)
    ci_low: float  # its two-sided 95% percentile bootstrap interval, lower end
    ci_high: float  # its two-sided 95% percentile bootstrap interval, upper end


@dataclass(frozen=True)
class StabilityCell(Entry):
    """One (arm, quant) of numbers.json's `stability`: over the questions whose K samples were all scored."""

    WHAT: ClassVar[str] = "a cell of numbers.json's stability"

    arm: str  # the arm's name
    quant: str  # the quantisation
    k: int  # the arm's registered samples per question
    questions: int  # questions with every sample scored: what each statistic is a mean over
    incomplete: int  # the run's questions with a sample not scored: left out, neither a pass nor a fail
    resampling: str  # "questions", or "clusters" of questions
    units: int  # how many questions, or clusters, the bootstrap resamples
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
    confidence: float  # the intervals' two-sided level: 0.95 (judge.numbers.stats.stability.CONFIDENCE)
    method: str  # the bootstrap interval: "percentile"
    resamples: int  # bootstrap resamples ([analysis] resamples)
    seed: int  # the bootstrap's seed ([analysis] seed)
    cells: list[StabilityCell]  # one per (arm, quant) of the run
