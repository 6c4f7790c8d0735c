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

    scored: int  # its current verdicts under this rubric with a score
    unscored: int  # its verdicts with no parseable score after every attempt
    error: int  # its verdicts whose judge call failed
    repaired: int  # of them, verdicts whose JSON parsed only after repair


@dataclass(frozen=True)
class LengthRow(Entry):
    """One hypothesis's difference b - a by one judge, raw and adjusted for answer length."""

    WHAT: ClassVar[str] = "a comparison of a judge's length bias in numbers.json"

    id: str  # the hypothesis's registered id
    raw_difference: float | None  # mean score of b's scored answers minus a's at its quant; None when either has none
    # the arm-b coefficient of OLS score ~ 1 + is_b + log1p(words); None if not identified
    length_adjusted_difference: float | None


@dataclass(frozen=True)
class LengthBias(Entry):
    """How a judge's scores follow answer length (judge.numbers.agreement.length_bias)."""

    WHAT: ClassVar[str] = "a judge's length bias in numbers.json"

    answers: int  # answers this judge scored (single verdicts)
    # Spearman rho of the answers' word counts and their scores; None if undefined or below 3
    length_spearman: float | None
    comparisons: list[LengthRow]  # one per hypothesis


@dataclass(frozen=True, kw_only=True)
class PairwiseRow(Entry):
    """One judge's pairwise verdicts on one hypothesis, both orders (judge.judging.pairwise.summarise)."""

    WHAT: ClassVar[str] = "a hypothesis's pairwise counts in numbers.json"

    hypothesis: str  # the hypothesis's registered id
    a: str | None = None  # the reference arm
    b: str | None = None  # the arm compared with it
    quant: str | None = None  # the quantisation compared at
    pairs: int  # questions with at least one pairwise verdict of this judge
    both_orders_scored: int  # of them, questions scored in both orders
    unscored_verdicts: int | None = None  # pairwise verdicts of this hypothesis without a score
    consistent: int  # of those, questions where both orders preferred the same arm (or both tied)
    consistency_rate: float | None = None  # consistent / both_orders_scored; None when none
    # of the verdicts naming a winner, the share that chose the answer shown first; None: none
    first_position_share: float | None = None
    wins_b: int  # questions both orders gave to b
    wins_a: int  # questions both orders gave to a
    ties: int  # questions scored in both orders that are ties or inconsistent


@dataclass(frozen=True)
class AgreementPair(Entry):
    """Two judges' agreement on the answers both scored (judge.numbers.agreement.agreement)."""

    WHAT: ClassVar[str] = "a pair of judges' agreement in numbers.json"

    judges: list[str]  # the two judges
    answers: int  # answers both scored
    exact_agreement: float  # share of them given the same score
    kappa_quadratic: float | None  # quadratic-weighted Cohen's kappa; None where undefined
    # its 95% percentile bootstrap interval over the answers (1,000 seeded resamples); None if too few
    kappa_ci95: tuple[float, float] | None


@dataclass(frozen=True, kw_only=True)
class Agreement(Entry):
    """The judges' agreement: per pair, and Krippendorff's alpha over every answer two of them scored."""

    WHAT: ClassVar[str] = "numbers.json's judges agreement"

    judges: list[str] | None = None  # the judges that scored, sorted
    answers: int  # answers every judge scored
    pairs: list[AgreementPair]  # each pair of judges with two or more answers both scored
    pairable_answers: int  # answers at least two judges scored
    # ordinal Krippendorff's alpha over the pairable answers; None where undefined
    krippendorff_alpha_ordinal: float | None


@dataclass(frozen=True)
class RetestRow(Entry):
    """One judge's verdicts against the same verdicts asked again (judge.numbers.biases.retest_agreement)."""

    WHAT: ClassVar[str] = "a judge's retest in numbers.json"

    judge: str  # the judge's name
    drawn: int  # labels drawn for a retest
    n: int  # of them, scored both times
    flips: int  # retest score differs from the original
    flip_rate: float | None  # flips / n; None when n is 0
    flip_ci95: tuple[float, float] | None  # exact binomial (Clopper-Pearson) interval of the flip rate
    kappa_quadratic: float | None  # test vs retest; None where undefined (one category used by both)
    kappa_ci95: tuple[float, float] | None  # percentile bootstrap over labels (as the judges' agreement)


@dataclass(frozen=True)
class DecisionChanged(Entry):
    """A registered decision that changes when the primary judge's retest scores replace the originals."""

    WHAT: ClassVar[str] = "a decision the retests change in numbers.json"

    id: str  # the hypothesis's registered id
    verdict: str  # its verdict on the original scores
    with_retests: str  # its verdict with the retest scores in their place


@dataclass(frozen=True)
class RetestSection(Entry):
    """The judges' verdicts asked again (judge.numbers.bias_checks.retest_section)."""

    WHAT: ClassVar[str] = "numbers.json's judges retest"

    judges: dict[str, RetestRow]  # each judge's test-retest agreement, by name
    decisions_changed: list[DecisionChanged]  # the registered decisions the primary judge's retest scores change
    replaced: int  # the primary judge's scored retests put in place of the originals


@dataclass(frozen=True)
class JudgesSection(Entry):
    """numbers.json's `judges`: each judge's means, length bias, pairwise consistency, and their agreement."""

    WHAT: ClassVar[str] = "numbers.json's judges"

    panel: list[str]  # the run's judges, primary first
    means: dict[str, dict[str, float]]  # judge -> "arm/quant" -> its mean single-answer score
    length_bias: dict[str, LengthBias]  # judge -> how its scores follow answer length
    # judge -> its pairwise counts per hypothesis (empty without pairwise judging)
    pairwise: dict[str, list[PairwiseRow]]
    agreement: Agreement | None  # None: one judge only
    retest: RetestSection = None  # absent without `[judge] retest`
