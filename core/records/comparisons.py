"""numbers.json's comparisons: a registered hypothesis decided, with its paired result, calibration, family, the
judge's error against gold, self-preference and style."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .check import Entry


@dataclass(frozen=True, kw_only=True)
class Result(Entry):
    """A paired comparison's numbers (judge.numbers.stats.paired), in a comparison or a subset of numbers.json.
    Required: what the report formats as numbers; the rest is typed when present."""

    WHAT: ClassVar[str] = "a paired result of numbers.json"

    n: int  # questions paired: scored in both arms
    mean_a: float | None = None  # arm a's mean score over the paired questions
    mean_b: float | None = None  # arm b's mean score over the paired questions
    diff: float  # mean of d = b - a over them, in rubric points; positive = b better
    sd_diff: float  # SD of d (ddof 1); 0 when every difference is the same
    se: float  # sd_diff / sqrt(n)
    ci_low: float  # two-sided (1 - 2 alpha) bootstrap interval of diff, lower end
    ci_high: float  # two-sided (1 - 2 alpha) bootstrap interval of diff, upper end
    bound: float  # the one-sided (1 - alpha) lower bound the registered rule decides on
    up: int  # questions where b > a
    down: int  # questions where b < a
    ties: int  # questions where b = a
    sign_p: float  # exact two-sided binomial sign test p over up and down (ties dropped)
    t_low: float  # two-sided (1 - 2 alpha) paired-t interval, lower end
    t_high: float  # two-sided (1 - 2 alpha) paired-t interval, upper end
    t_p: float | None = None  # two-sided paired t-test p
    mde: float  # paired-t minimum detectable effect at one-sided alpha, power 0.8, the observed sd_diff
    n_for_margin: int | None  # questions needed to detect the margin at this sd_diff; None: no margin, or a margin of 0
    corr: float | None  # Pearson r of a's and b's scores over the questions; None when either arm is constant
    method: str | None = None  # the bootstrap interval: "percentile" or "bca" ([analysis] method)
    confidence: float  # 1 - 2 alpha: the two-sided intervals' level
    resamples: int | None = None  # bootstrap resamples drawn ([analysis] resamples)
    seed: int | None = None  # the bootstrap's seed ([analysis] seed)
    resampling: str = None  # what the bootstrap resamples: "questions", or "clusters" of questions
    units: int = None  # how many questions, or clusters, it resamples
    rule: str = None  # with `resampling` and `units`: absent in results decided before they were recorded
    # rule "bootstrap_and_t": the small-sample guarded t interval, lower end; None under other rules
    guard_low: float | None = None
    guard_high: float | None = None  # rule "bootstrap_and_t": the guarded t interval, upper end; None under other rules
    upper: float | None = None  # upper end of the interval the rule decides on (read by equivalence)
    # the rubric's lowest and highest score and K: absent in results decided before the score rule
    scale: tuple[int, int, int] = None
    tests: list[dict[str, Any]] | None = None  # rule "score": the one-sided tests at the boundaries (score_tests)


@dataclass(frozen=True)
class Calibration(Entry):
    """The decision rule's false-claim rate at the boundary, simulated on data shaped like these
    (judge.numbers.stats.calibration)."""

    WHAT: ClassVar[str] = "a comparison's calibration in numbers.json"

    boundary: float  # the true effect simulated: -margin (non-inferiority), 0 (superiority), -/+margin (equivalence)
    sims: int  # simulated experiments run at the boundary
    claims: int  # how many of them the rule claimed in
    rate: float  # claims / sims: the rule's false-claim rate at the boundary, for data shaped like these
    ceiling: float  # registered: a rate above it is flagged (a diagnostic: it withdraws nothing)
    seed: int  # the simulation's seed
    # "ppi" where the gold-corrected interval decides (judge.numbers.validity); absent: the judge's
    interval: str = None


@dataclass(frozen=True)
class FamilyTest(Entry):
    """One level a hypothesis was tested at by the family procedure (judge.numbers.bias_checks.apply_family)."""

    WHAT: ClassVar[str] = "a test of a comparison's family in numbers.json"

    alpha: float  # the one-sided level of this test
    verdict: str  # the verdict at that level (registration.vocabulary.VERDICTS)
    claim: bool  # the verdict is a claim of the hypothesis's kind (registration.vocabulary.CLAIMS)


@dataclass(frozen=True)
class ComparisonFamily(Entry):
    """Where the family procedure tested one hypothesis, and whether it claims there."""

    WHAT: ClassVar[str] = "a comparison's family in numbers.json"

    method: str  # the registered family procedure: "holm", "fixed-sequence" or "none"
    size: int  # registered hypotheses in the family
    # the one-sided alpha of its last test; None: never tested (a fixed sequence stopped before it)
    tested_at: float | None
    claimed: bool  # the family procedure claims it
    step: int | None  # the step at which it was claimed (Holm) or its place in the sequence (fixed-sequence)
    stopped_at: str | None  # fixed-sequence: the first hypothesis not claimed, where the sequence stopped
    tests: list[FamilyTest]  # every test the procedure made of it, highest alpha first


@dataclass(frozen=True)
class Stratum(Entry):
    """One stratum of a PPI++ estimate (judge.numbers.stats.ppi), named by `id` ((rest): the questions no
    complete stratum holds)."""

    WHAT: ClassVar[str] = "a stratum of a gold-corrected estimate in numbers.json"

    id: str  # the stratum's name, or "(rest)" for the questions no complete stratum holds
    name: str | None  # the stratum's name; None for the rest
    questions: int  # N_h: the stratum's questions
    labelled: int  # n_h: of them, those with gold
    weight: float  # N_h / N
    estimate: float  # theta_h: the stratum's estimate of the paired difference
    lam: float | None  # the power-tuning parameter used; None where no judge score enters (gold only, judge only)
    variance: float  # the rule's variance of theta_h


@dataclass(frozen=True, kw_only=True)
class Estimate(Entry):
    """A PPI++, gold-only or judge-only estimate of a paired difference (judge.numbers.stats.ppi)."""

    WHAT: ClassVar[str] = "a gold-corrected estimate in numbers.json"

    method: str  # "ppi" | "gold_only" | "judge_only"
    rule: str  # the interval: "guarded" or "normal" (registration.vocabulary.PPI_RULES)
    alpha: float  # the one-sided level it was computed at
    estimate: float  # the estimated paired difference b - a, in rubric points
    se: float  # its standard error
    df: float | None  # t degrees of freedom (rule "guarded"); None: normal quantile
    # rule "guarded"'s pseudo-residual, half the rubric's range; absent before it was anchored to the rubric (one score
    # point then), and under rule "normal"
    step: float = None
    low: float  # two-sided (1 - 2 alpha) interval's lower end: the one-sided (1 - alpha) lower bound
    high: float  # two-sided (1 - 2 alpha) interval's upper end
    questions: int  # N: the questions it estimates over
    labelled: int  # n: of them, those with gold
    strata: list[Stratum]  # its strata

    @property
    def width(self) -> float:
        return self.high - self.low

    @property
    def lam(self) -> float | None:
        """The single stratum's lam (None with several strata: see `strata`)."""
        return self.strata[0].lam if len(self.strata) == 1 else None


@dataclass(frozen=True)
class CorrectedPower(Entry):
    """The gold-corrected decision's power for a random sample of labelled questions
    (judge.numbers.validity.power_plan)."""

    WHAT: ClassVar[str] = "the power of a gold-corrected decision in numbers.json"

    basis: Literal["assumed", "measured"]  # sd_gold and correlation: registered assumption, or measured on the gold
    # rho of the gold and the judge's paired differences: measured, or [analysis] assumed_gold_correlation
    correlation: float
    sd_judge: float  # SD of the judge's paired differences over the comparison's questions
    sd_gold: float  # SD of the gold differences: measured, or assumed equal to sd_judge
    gold_questions: int  # random-sample questions with gold they were measured on (0: assumed)
    questions: int  # N: the comparison's paired questions
    labelled: int | None  # questions of the recorded draws among them; None: nothing drawn yet
    alpha: float  # the one-sided level the power is stated at (Holm: alpha / k; judge.numbers.validity.planning_alpha)
    step: float  # the guarded rule's pseudo-residual (judge.numbers.validity.step_of)
    target: float  # the registered target_power
    mde: float | None  # None: fewer than 2 labelled
    power_at_margin: float | None  # None: fewer than 2 labelled, or a margin of 0
    labels_needed: int | None  # None: a margin of 0, or more than `questions`
    labels_needed_gold_only: int | None  # the same at correlation 0


@dataclass(frozen=True)
class JudgeError(Entry):
    """A decision corrected for the judge's error against gold (judge.numbers.validity.apply); `ppi` None: no
    correction, `reason` says why."""

    WHAT: ClassVar[str] = "a comparison's judge_error in numbers.json"

    mode: str  # [analysis] judge_error: "report" (an interval beside the decision) or "decide" (its bound decides)
    # "random_sample", "complete_strata" or "convenience" (no correction); None: no gold on these questions
    design: str | None
    ppi: Estimate | None  # the PPI++ estimate (judge.numbers.stats.ppi.correct); None: no correction
    gold_only: Estimate | None  # the estimate from the gold labels alone, beside it; None: no correction
    reason: str  # how the correction was made, or why there is none
    verdict: str | None  # the verdict the corrected interval gives; None: no correction
    caution: str | None  # mode "report": why the corrected verdict differs from the decision; else None
    power: CorrectedPower = None  # under judge_error = "decide"; absent in folders decided before it was stated


@dataclass(frozen=True)
class JudgeEstimate(Entry):
    """One judge's estimate and verdict of a hypothesis (judge.numbers.bias_checks.self_preference)."""

    WHAT: ClassVar[str] = "a judge's estimate in a comparison's self_preference"

    family: str | None  # the registered model family of the judge's model; None when unregistered
    shares_family: bool  # that family is one of the two arms' model families
    n: int  # questions this judge scored in both arms
    estimate: float  # its mean paired difference b - a on them
    ci_low: float  # two-sided (1 - 2 alpha) bootstrap interval, lower end
    ci_high: float  # two-sided (1 - 2 alpha) bootstrap interval, upper end
    bound: float  # the one-sided lower bound the registered rule decides on
    verdict: str  # the verdict the registered rule gives on this judge's scores alone
    resampling: str | None = None  # what the bootstrap resamples: "questions", or "clusters" of questions
    units: int | None = None  # how many questions, or clusters, it resamples


@dataclass(frozen=True)
class Lift(Entry):
    """How much more one judge gives arm b over arm a than the other judges do (judge.numbers.biases.lift)."""

    WHAT: ClassVar[str] = "a judge's lift in a comparison's self_preference"

    judge: str  # the judge sharing a model family with an arm
    others: list[str]  # the other judges it is compared with
    n: int  # questions every judge of the comparison scored in both arms
    estimate: float  # the judge's mean difference b - a on those questions
    others_estimate: float  # the mean, over the other judges, of their mean difference on the same questions
    lift: float  # estimate - others_estimate
    ci_low: float  # percentile bootstrap interval of the lift, lower end
    ci_high: float  # percentile bootstrap interval of the lift, upper end
    confidence: float  # the interval's two-sided level (0.95)
    resamples: int  # bootstrap resamples ([analysis] resamples)
    seed: int  # the bootstrap's seed ([analysis] seed)
    resampling: str | None = None  # what the bootstrap resamples: "questions", or "clusters" of questions
    # how many questions, or clusters (a question without a cluster counts as one), it resamples
    units: int | None = None


@dataclass(frozen=True)
class SelfPreference(Entry):
    """Each judge's estimate of a hypothesis and the lift of the judges sharing a model family with an arm."""

    WHAT: ClassVar[str] = "a comparison's self_preference in numbers.json"

    judges: dict[str, JudgeEstimate]  # each judge's estimate and verdict, by judge name
    lifts: dict[str, Lift]  # each same-family judge's lift over the others, by judge name
    notes: list[str]  # cautions where the verdict differs by judge and a same-family judge is among them


@dataclass(frozen=True)
class Style(Entry):
    """The paired differences with the arms' style differences regressed out (judge.numbers.biases.style_adjustment)."""

    WHAT: ClassVar[str] = "a comparison's style in numbers.json"

    n: int  # the hypothesis's paired questions regressed over
    covariates: list[str]  # those regressed on: the style covariates whose paired difference is not 0 on every question
    raw: float  # the mean paired difference
    adjusted: float | None  # the intercept: the difference at equal style; None where it is not identified
    se: float | None  # its classical OLS standard error
    df: int | None  # n minus the parameters
    ci_low: float | None  # two-sided (1 - 2 alpha) t interval of the adjusted difference, lower end
    ci_high: float | None  # two-sided (1 - 2 alpha) t interval of the adjusted difference, upper end
    confidence: float  # 1 - 2 alpha
    slopes: dict[str, float] = field(default_factory=dict)  # each covariate's coefficient
    undefined: str | None = None  # why there is no adjusted difference; None when there is one


@dataclass(frozen=True, kw_only=True)
class Comparison(Entry):
    """A registered hypothesis decided, in numbers.json's `comparisons`: what verify and the report read most."""

    WHAT: ClassVar[str] = "a comparison of numbers.json"

    id: str  # the hypothesis's registered id
    text: str  # the hypothesis as registered, in words
    a: str  # the reference arm
    b: str  # the arm compared with it (d = b - a)
    quant: str  # the quantisation both arms are compared at
    kind: str  # "non_inferiority", "superiority" or "equivalence"
    margin: float  # the registered margin, in rubric points
    alpha: float  # the registered one-sided level
    subset: list[str]  # the registered tags a question must all carry to count
    # "pass^k": decided on each question's pass^k indicator (registration.vocabulary.STATISTICS); absent: its mean
    statistic: str = None
    questions_in_subset: int | None = None  # the run's questions carrying every subset tag
    paired_questions: list[str]  # ids of the subset's questions scored in both arms, in the run's question order
    unscored_rate: dict[str, float]  # per arm: (answer errors + unscored + judge errors) / answers of its cell
    result: Result | None  # None: no paired question was scored
    clusters: int | None  # registered clusters among the paired questions; None: the set declares none
    clustered_se: float | None  # cluster-robust SE of the mean difference; None: no clusters, or one unit
    calibration: Calibration | None  # the rule's simulated false-claim rate at the boundary; None: no paired result
    quant_notes: list[str]  # cautions when the effect changes sign at another quant, or arm a's own score moves with it
    length_notes: list[str] = None  # cautions where the style-adjusted interval would decide otherwise
    verdict: str  # registration.vocabulary.VERDICTS; after the family procedure, the gold check and the guards
    reason: str  # why: the numbers that decided, or the guard that made it inconclusive
    # each judge's view of it (judge.numbers.bias_checks.self_preference); None unless 2+ judges scored it
    self_preference: SelfPreference | None = None
    # the difference with style regressed out (judge.numbers.bias_checks.style_check); absent without a paired result
    style: Style = None
    family: ComparisonFamily = None  # absent in folders decided before the family
    judge_error: JudgeError = None  # absent without registered gold
