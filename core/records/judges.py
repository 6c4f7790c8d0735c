"""numbers.json's judges and judge_totals: each judge's verdicts, length bias, pairwise consistency, retests, and the
judges' agreement."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Entry


@dataclass(frozen=True)
class JudgeTotal(Entry):
    """A judge's verdicts under one rubric (numbers.json's `judge_totals`, keyed `judge/rubric`), by status."""

    WHAT: ClassVar[str] = "a judge's totals in numbers.json"

    scored: int
    unscored: int
    error: int
    repaired: int


@dataclass(frozen=True)
class LengthRow(Entry):
    """One hypothesis's difference b - a by one judge, raw and adjusted for answer length."""

    WHAT: ClassVar[str] = "a comparison of a judge's length bias in numbers.json"

    id: str
    raw_difference: float | None
    length_adjusted_difference: float | None


@dataclass(frozen=True)
class LengthBias(Entry):
    """How a judge's scores follow answer length (judge.numbers.agreement.length_bias)."""

    WHAT: ClassVar[str] = "a judge's length bias in numbers.json"

    answers: int
    length_spearman: float | None
    comparisons: list[LengthRow]


@dataclass(frozen=True)
class PairwiseRow(Entry):
    """One judge's pairwise verdicts on one hypothesis, both orders (judge.judging.pairwise.summarise)."""

    WHAT: ClassVar[str] = "a hypothesis's pairwise counts in numbers.json"

    hypothesis: str
    pairs: int
    both_orders_scored: int
    consistent: int
    wins_b: int
    wins_a: int
    ties: int
    a: str | None = None
    b: str | None = None
    quant: str | None = None
    unscored_verdicts: int | None = None
    consistency_rate: float | None = None
    first_position_share: float | None = None


@dataclass(frozen=True)
class AgreementPair(Entry):
    """Two judges' agreement on the answers both scored (judge.numbers.agreement.agreement)."""

    WHAT: ClassVar[str] = "a pair of judges' agreement in numbers.json"

    judges: list[str]
    answers: int
    exact_agreement: float
    kappa_quadratic: float | None
    kappa_ci95: tuple[float, float] | None


@dataclass(frozen=True)
class Agreement(Entry):
    """The judges' agreement: per pair, and Krippendorff's alpha over every answer two of them scored."""

    WHAT: ClassVar[str] = "numbers.json's judges agreement"

    answers: int
    pairs: list[AgreementPair]
    pairable_answers: int
    krippendorff_alpha_ordinal: float | None
    judges: list[str] | None = None


@dataclass(frozen=True)
class RetestRow(Entry):
    """One judge's verdicts against the same verdicts asked again (judge.numbers.biases.RetestAgreement)."""

    WHAT: ClassVar[str] = "a judge's retest in numbers.json"

    judge: str
    drawn: int
    n: int
    flips: int
    flip_rate: float | None
    flip_ci95: tuple[float, float] | None
    kappa_quadratic: float | None
    kappa_ci95: tuple[float, float] | None


@dataclass(frozen=True)
class DecisionChanged(Entry):
    """A registered decision that changes when the primary judge's retest scores replace the originals."""

    WHAT: ClassVar[str] = "a decision the retests change in numbers.json"

    id: str
    verdict: str
    with_retests: str


@dataclass(frozen=True)
class RetestSection(Entry):
    """The judges' verdicts asked again (judge.numbers.bias_checks.retest_section)."""

    WHAT: ClassVar[str] = "numbers.json's judges retest"

    judges: dict[str, RetestRow]
    decisions_changed: list[DecisionChanged]
    replaced: int


@dataclass(frozen=True)
class JudgesSection(Entry):
    """numbers.json's `judges`: each judge's means, length bias, pairwise consistency, and their agreement."""

    WHAT: ClassVar[str] = "numbers.json's judges"

    panel: list[str]
    means: dict[str, dict[str, float]]
    length_bias: dict[str, LengthBias]
    pairwise: dict[str, list[PairwiseRow]]
    agreement: Agreement | None  # None: one judge only
    retest: RetestSection = None  # absent without `[judge] retest`
