"""numbers.json's comparisons: a registered hypothesis decided, with its paired result, calibration, family, the
judge's error against gold, self-preference and style."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .check import Entry


@dataclass(frozen=True)
class Result(Entry):
    """A paired comparison's numbers (judge.numbers.stats.paired), in a comparison or a subset of numbers.json.
    Required: what the report formats as numbers; the rest is typed when present."""

    WHAT: ClassVar[str] = "a paired result of numbers.json"

    n: int
    diff: float
    se: float
    ci_low: float
    ci_high: float
    bound: float
    sign_p: float
    t_low: float
    t_high: float
    mde: float
    confidence: float
    corr: float | None
    up: int
    down: int
    ties: int
    n_for_margin: int | None
    sd_diff: float
    mean_a: float | None = None
    mean_b: float | None = None
    t_p: float | None = None
    upper: float | None = None
    method: str | None = None
    rule: str = None  # with `resampling` and `units`: absent in results decided before they were recorded
    resampling: str = None
    units: int = None
    resamples: int | None = None
    seed: int | None = None
    guard_low: float | None = None
    guard_high: float | None = None
    scale: tuple[int, int, int] = None  # the rubric's lowest and highest score and K: absent in results decided before
    # the score rule
    tests: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Calibration(Entry):
    """The decision rule's false-claim rate at the boundary, simulated on data shaped like these
    (judge.numbers.stats.calibration)."""

    WHAT: ClassVar[str] = "a comparison's calibration in numbers.json"

    boundary: float
    sims: int
    claims: int
    rate: float
    ceiling: float
    seed: int
    # "ppi" where the gold-corrected interval decides (judge.numbers.validity); else the judge's
    interval: str | None = None


@dataclass(frozen=True)
class FamilyTest(Entry):
    """One level a hypothesis was tested at by the family procedure (judge.numbers.bias_checks.apply_family)."""

    WHAT: ClassVar[str] = "a test of a comparison's family in numbers.json"

    alpha: float
    verdict: str
    claim: bool


@dataclass(frozen=True)
class ComparisonFamily(Entry):
    """Where the family procedure tested one hypothesis, and whether it claims there."""

    WHAT: ClassVar[str] = "a comparison's family in numbers.json"

    method: str
    size: int
    tested_at: float | None
    claimed: bool
    step: int | None
    stopped_at: str | None
    tests: list[FamilyTest]


@dataclass(frozen=True)
class Stratum(Entry):
    """One stratum of a PPI++ estimate (judge.numbers.stats.ppi.Stratum), named by `id` ((rest): the questions no
    complete stratum holds)."""

    WHAT: ClassVar[str] = "a stratum of a gold-corrected estimate in numbers.json"

    id: str
    name: str | None
    questions: int
    labelled: int
    weight: float
    estimate: float
    lam: float | None
    variance: float


@dataclass(frozen=True)
class Estimate(Entry):
    """A PPI++, gold-only or judge-only estimate of a paired difference (judge.numbers.stats.ppi.Estimate)."""

    WHAT: ClassVar[str] = "a gold-corrected estimate in numbers.json"

    method: str
    rule: str
    alpha: float
    estimate: float
    se: float
    df: float | None
    low: float
    high: float
    questions: int
    labelled: int
    strata: list[Stratum]
    step: float | None = None  # rule "guarded"'s pseudo-residual, half the rubric's range; absent before it was
    # anchored to the rubric (one score point then)


@dataclass(frozen=True)
class CorrectedPower(Entry):
    """The gold-corrected decision's power for a random sample of labelled questions
    (judge.numbers.validity.power_plan)."""

    WHAT: ClassVar[str] = "the power of a gold-corrected decision in numbers.json"

    basis: Literal["assumed", "measured"]  # sd_gold and correlation: registered assumption, or measured on the gold
    correlation: float
    sd_judge: float
    sd_gold: float
    gold_questions: int  # random-sample questions with gold they were measured on (0: assumed)
    questions: int
    labelled: int | None  # questions of the recorded draws among them; None: nothing drawn yet
    alpha: float
    step: float
    target: float
    mde: float | None  # None: fewer than 2 labelled
    power_at_margin: float | None  # None: fewer than 2 labelled, or a margin of 0
    labels_needed: int | None  # None: a margin of 0, or more than `questions`
    labels_needed_gold_only: int | None  # the same at correlation 0


@dataclass(frozen=True)
class JudgeError(Entry):
    """A decision corrected for the judge's error against gold (judge.numbers.validity.apply); `ppi` None: no
    correction, `reason` says why."""

    WHAT: ClassVar[str] = "a comparison's judge_error in numbers.json"

    mode: str
    design: str | None
    ppi: Estimate | None
    gold_only: Estimate | None
    verdict: str | None
    caution: str | None
    reason: str
    power: CorrectedPower = None  # under judge_error = "decide"; absent in folders decided before it was stated


@dataclass(frozen=True)
class JudgeEstimate(Entry):
    """One judge's estimate and verdict of a hypothesis (judge.numbers.bias_checks.self_preference)."""

    WHAT: ClassVar[str] = "a judge's estimate in a comparison's self_preference"

    family: str | None
    shares_family: bool
    n: int
    estimate: float
    ci_low: float
    ci_high: float
    bound: float
    verdict: str
    resampling: str | None = None
    units: int | None = None


@dataclass(frozen=True)
class Lift(Entry):
    """How much more one judge gives arm b over arm a than the other judges do (judge.numbers.biases.Lift)."""

    WHAT: ClassVar[str] = "a judge's lift in a comparison's self_preference"

    judge: str
    others: list[str]
    n: int
    estimate: float
    others_estimate: float
    lift: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    seed: int
    resampling: str | None = None
    units: int | None = None


@dataclass(frozen=True)
class SelfPreference(Entry):
    """Each judge's estimate of a hypothesis and the lift of the judges sharing a model family with an arm."""

    WHAT: ClassVar[str] = "a comparison's self_preference in numbers.json"

    judges: dict[str, JudgeEstimate]
    lifts: dict[str, Lift]
    notes: list[str]


@dataclass(frozen=True)
class Style(Entry):
    """The paired differences with the arms' style differences regressed out (judge.numbers.biases.StyleAdjustment)."""

    WHAT: ClassVar[str] = "a comparison's style in numbers.json"

    n: int
    covariates: list[str]
    raw: float
    adjusted: float | None
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    slopes: dict[str, float] = field(default_factory=dict)
    undefined: str | None = None


@dataclass(frozen=True)
class Comparison(Entry):
    """A registered hypothesis decided, in numbers.json's `comparisons`: what verify and the report read most."""

    WHAT: ClassVar[str] = "a comparison of numbers.json"

    id: str
    text: str
    a: str
    b: str
    quant: str
    kind: str
    margin: float
    alpha: float
    result: Result | None  # None: no paired question was scored
    verdict: str
    reason: str
    subset: list[str]
    paired_questions: list[str]
    unscored_rate: dict[str, float]
    clusters: int | None  # registered clusters among the paired questions; None: the set declares none
    clustered_se: float | None
    calibration: Calibration | None
    quant_notes: list[str]
    questions_in_subset: int | None = None
    family: ComparisonFamily = None  # absent in folders decided before the family
    judge_error: JudgeError = None  # absent without registered gold
    self_preference: SelfPreference | None = None
    style: Style | None = None
    length_notes: list[str] = None
