"""numbers.json's contract: the document and its smaller sections (cells, subsets, family, quant_check,
amendments); comparisons, judges and judge_validity have modules of their own."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Document, Entry
from .comparisons import Comparison, Result
from .gold import JudgeValidity
from .judges import JudgesSection, JudgeTotal
from .run_comparisons import RunComparison
from .stability import Stability


@dataclass(frozen=True, kw_only=True)
class Cell(Entry):
    """One (arm, quant) of numbers.json's `cells`: counts and the mean score."""

    WHAT: ClassVar[str] = "a cell of numbers.json"

    arm: str  # the arm's name
    quant: str  # the quantisation
    answers: int  # current answer rows of this arm and quant for the run's questions
    answer_errors: int  # of them, rows with status error
    answer_error_kinds: dict[str, int] = None  # absent in folders written before causes were counted
    answer_retries: int  # of them, rows asked again after an error
    truncated: int  # of them, answers whose last call stopped at its token limit
    scored: int  # the primary judge's single verdicts on these answers with status scored
    unscored: int  # its verdicts with no parseable score
    judge_errors: int  # its verdicts whose judge call failed
    judge_error_kinds: dict[str, int] = None  # kind -> count of the judge errors' causes (models.retry.describe kinds)
    questions_scored: int  # questions with at least one scored answer (their mean enters `mean`)
    mean: float | None  # None: no question scored
    harmful: int  # scored verdicts whose fields say harmful: true
    scrubbed: int  # identity-revealing matches removed from these answers before judging (sum of KeyRow.scrubbed)
    injection_flagged: int  # answers in which grader-directed text was found (KeyRow.injection > 0)
    mean_words: float | None  # mean whitespace-separated words of the ok answers; None without one
    # score -> how many scored verdicts gave it, for every point of the rubric's scale
    score_counts: dict[str, int] = None


@dataclass(frozen=True, kw_only=True)
class Subset(Entry):
    """A registered hypothesis on one tag of its questions (secondary, exploratory), in numbers.json's `subsets`."""

    WHAT: ClassVar[str] = "a subset of numbers.json"

    id: str  # the hypothesis id with the tag: "<id> [<tag>]"
    hypothesis: str | None = None  # the registered hypothesis it splits
    tag: str | None = None  # the question tag this subset selects
    tests: int | None = None  # how many tags the hypothesis's questions were split by
    alpha_adjusted: float  # the hypothesis's alpha / tests (Bonferroni over its tags)
    questions: int | None = None  # questions of the hypothesis's subset carrying this tag
    paired_questions: list[str]  # ids of the tag's questions scored in both arms
    result: Result | None  # the paired result on the tag's questions; None below two paired questions
    verdict: str  # the verdict on them (exploratory: never changes the registered one)


@dataclass(frozen=True)
class FamilyStep(Entry):
    """One hypothesis in numbers.json's `family` (judge.numbers.biases.family_decisions)."""

    WHAT: ClassVar[str] = "a step of numbers.json's family"

    id: str  # the hypothesis's registered id
    alpha: float  # its registered one-sided alpha
    tested_at: float | None  # the alpha of its last test; None: never tested (a fixed sequence stopped before it)
    claimed: bool  # the family procedure claims it
    step: int | None  # the step at which it was claimed (Holm) or its place in the sequence (fixed-sequence)


@dataclass(frozen=True)
class FamilySection(Entry):
    """The registered hypotheses decided as one family (judge.numbers.biases.family_decisions)."""

    WHAT: ClassVar[str] = "numbers.json's family"

    method: str  # the registered family procedure: "holm", "fixed-sequence" or "none"
    size: int  # registered hypotheses in the family
    stopped_at: str | None  # fixed-sequence: the first hypothesis not claimed, where the sequence stopped
    steps: list[FamilyStep]  # one per registered hypothesis


@dataclass(frozen=True)
class QuantCheck(Entry):
    """Each arm's mean score at each of its quants (None: none scored)."""

    WHAT: ClassVar[str] = "numbers.json's quant_check"

    # arm -> quant -> the arm's mean per-question score there (None: none scored)
    means: dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class Amendment(Entry):
    """An amendment of the registration as the numbers were computed with it (judge.numbers.analysis.amendments)."""

    WHAT: ClassVar[str] = "an amendment of numbers.json"

    n: int  # its number in amendments.jsonl
    date: str  # when it was appended: ISO 8601, UTC
    text: str  # what it changes, as written
    post_hoc: bool | None = None  # recorded as written after scoring began (`judge amend --post-hoc`)
    # it was sealed before this run's first judgment (or nothing is judged yet)
    before_first_judgment: bool | None = None


@dataclass(frozen=True)
class CleanComparison(Entry):
    """A hypothesis about an arm trained on the registered training data, decided again on its clean questions
    (judge.numbers.contamination), beside its verdict on all of them."""

    WHAT: ClassVar[str] = "a clean comparison of numbers.json's contamination"

    id: str  # the hypothesis's registered id
    questions: int  # its questions (subset) not contaminated
    paired_questions: list[str]  # ids of those questions scored in both arms
    result: Result | None  # None below two paired questions
    verdict: str  # the verdict on the clean questions
    all_questions_verdict: str  # the comparison's verdict on all its questions
    differs: bool  # the two verdicts differ


@dataclass(frozen=True)
class ContaminationSection(Entry):
    """numbers.json's `contamination` ([contamination] registered): the sealed questions that overlap the training
    data (registration.contamination) and each hypothesis about a trained arm decided on the clean ones."""

    WHAT: ClassVar[str] = "numbers.json's contamination"

    n: int  # the registered tokens per n-gram
    threshold: float  # the registered fraction of a text's distinct n-grams above which it is contaminated
    decide: str  # "both" (decide on all, beside the clean decision) or "clean_only"
    arms: list[str]  # the registered arms trained on the data
    training: dict[str, str]  # each training data file, by its registered name: its sha256
    contaminated: list[str]  # every sealed question contaminated, in set order
    # each hypothesis about a trained arm decided on its clean questions (decide = "both")
    comparisons: list[CleanComparison]


@dataclass(frozen=True, kw_only=True)
class Numbers(Document):
    """numbers.json (judge.numbers.analysis.compute_numbers): its version is `schema` (VERSION; a file of version 1 is
    migrated by core.records.migrate). Sections added since the first version (family, panel_rule, judge_validity,
    stability, contamination, run_comparisons) are optional. Each section is an Entry of
    its own, read and written by the same contract: a field missing or of another type at any depth is bad input naming
    its path
    (`comparisons[2].judge_error.ppi.low`). The fields are in the order the file holds them."""

    WHAT: ClassVar[str] = "the numbers of a run (numbers.json)"
    VERSION: ClassVar[int] = 2  # what this blindeval writes; raise it with a step in core.records.migrate
    VERSION_KEY: ClassVar[str] = "schema"

    schema: int = 1  # this document's version
    experiment: str  # the experiment's name
    judge: str  # the primary judge, whose scores decide
    questions: int  # how many questions the run has
    raw_sha256: dict[str, str]  # sha256 of each raw file and binding.json, by name (judge.results.files.raw_sha256)
    cells: list[Cell]  # one per (arm, quant) of the run
    comparisons: list[Comparison]  # one per registered hypothesis on the run's arms
    subsets: list[Subset]  # each hypothesis split by question tag (exploratory)
    quant_check: QuantCheck  # each arm's mean score at each quant
    # "judge/rubric" -> counts of its verdicts by status, and how many were repaired
    judge_totals: dict[str, JudgeTotal]
    amendments: list[Amendment]  # the registration's amendments
    judges: JudgesSection  # per-judge means, agreement, length bias and pairwise consistency
    family: FamilySection | None = None  # the registered hypotheses decided as one family
    panel_rule: str | None = None  # who decides when several judges scored: "primary", "all-agree" or "unrelated-mean"
    stability: Stability = None  # absent in folders written before stability across samples was measured
    judge_validity: JudgeValidity = None  # the judges measured against gold; absent without registered gold
    contamination: ContaminationSection = None  # absent unless [contamination] is registered
    # each registered comparison with a previous run ([[comparisons]]); absent unless one is registered
    run_comparisons: list[RunComparison] = None
