"""numbers.json's contract: the document and its smaller sections (cells, subsets, family, quant_check,
amendments); comparisons, judges and judge_validity have modules of their own."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Document, Entry
from .comparisons import Comparison, Result
from .gold import JudgeValidity
from .judges import JudgesSection, JudgeTotal
from .stability import Stability


@dataclass(frozen=True)
class Cell(Entry):
    """One (arm, quant) of numbers.json's `cells`: counts and the mean score."""

    WHAT: ClassVar[str] = "a cell of numbers.json"

    arm: str
    quant: str
    answers: int
    answer_errors: int
    answer_retries: int
    truncated: int
    scored: int
    unscored: int
    judge_errors: int
    questions_scored: int
    mean: float | None  # None: no question scored
    harmful: int
    scrubbed: int
    injection_flagged: int
    mean_words: float | None
    answer_error_kinds: dict[str, int] = None  # absent in folders written before causes were counted
    judge_error_kinds: dict[str, int] = None
    score_counts: dict[str, int] = None


@dataclass(frozen=True)
class Subset(Entry):
    """A registered hypothesis on one tag of its questions (secondary, exploratory), in numbers.json's `subsets`."""

    WHAT: ClassVar[str] = "a subset of numbers.json"

    id: str
    alpha_adjusted: float
    result: Result | None
    verdict: str
    paired_questions: list[str]
    hypothesis: str | None = None
    tag: str | None = None
    tests: int | None = None
    questions: int | None = None


@dataclass(frozen=True)
class FamilyStep(Entry):
    """One hypothesis in numbers.json's `family` (judge.numbers.biases.FamilyStep)."""

    WHAT: ClassVar[str] = "a step of numbers.json's family"

    id: str
    alpha: float
    tested_at: float | None
    claimed: bool
    step: int | None


@dataclass(frozen=True)
class FamilySection(Entry):
    """The registered hypotheses decided as one family (judge.numbers.biases.Family)."""

    WHAT: ClassVar[str] = "numbers.json's family"

    method: str
    size: int
    stopped_at: str | None
    steps: list[FamilyStep]


@dataclass(frozen=True)
class QuantCheck(Entry):
    """Each arm's mean score at each of its quants (None: none scored)."""

    WHAT: ClassVar[str] = "numbers.json's quant_check"

    means: dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class Amendment(Entry):
    """An amendment of the registration as the numbers were computed with it (judge.numbers.analysis.amendments)."""

    WHAT: ClassVar[str] = "an amendment of numbers.json"

    n: int
    date: str
    text: str
    post_hoc: bool | None = None
    before_first_judgment: bool | None = None


@dataclass(frozen=True)
class CleanComparison(Entry):
    """A hypothesis about an arm trained on the registered training data, decided again on its clean questions
    (judge.numbers.contamination), beside its verdict on all of them."""

    WHAT: ClassVar[str] = "a clean comparison of numbers.json's contamination"

    id: str
    questions: int  # its questions (subset) not contaminated
    paired_questions: list[str]
    result: Result | None  # None below two paired questions
    verdict: str
    all_questions_verdict: str
    differs: bool


@dataclass(frozen=True)
class ContaminationSection(Entry):
    """numbers.json's `contamination` ([contamination] registered): the sealed questions that overlap the training
    data (registration.contamination) and each hypothesis about a trained arm decided on the clean ones."""

    WHAT: ClassVar[str] = "numbers.json's contamination"

    n: int
    threshold: float
    decide: str
    arms: list[str]
    training: dict[str, str]  # each training data file, by its registered name: its sha256
    contaminated: list[str]  # every sealed question contaminated, in set order
    comparisons: list[CleanComparison]


@dataclass(frozen=True)
class Numbers(Document):
    """numbers.json (judge.numbers.analysis.compute_numbers): its version is `schema`. Sections added since the first
    version (family, panel_rule, judge_validity, stability, contamination) are optional. Each section is an Entry of
    its own, read and written by the same contract: a field missing or of another type at any depth is bad input naming
    its path
    (`comparisons[2].judge_error.ppi.low`)."""

    WHAT: ClassVar[str] = "the numbers of a run (numbers.json)"
    VERSION_KEY: ClassVar[str] = "schema"

    experiment: str
    judge: str
    questions: int
    raw_sha256: dict[str, str]
    cells: list[Cell]
    comparisons: list[Comparison]
    subsets: list[Subset]
    quant_check: QuantCheck
    judge_totals: dict[str, JudgeTotal]
    amendments: list[Amendment]
    judges: JudgesSection
    schema: int = 1
    family: FamilySection | None = None
    panel_rule: str | None = None
    judge_validity: JudgeValidity | None = None
    contamination: ContaminationSection | None = None  # absent unless [contamination] is registered
    stability: Stability = None  # absent in folders written before stability across samples was measured
