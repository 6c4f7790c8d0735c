"""numbers.json's `run_comparisons`: each registered comparison with a previous run ([[comparisons]]), decided like
a hypothesis on the questions both runs hold (matched by the sha256 of their text)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Entry
from .comparisons import Calibration, Result


@dataclass(frozen=True, kw_only=True)
class RunComparison(Entry):
    """One registered comparison of this run's arm (b) against a previous results folder's arm (a)
    (judge.numbers.registered_comparisons)."""

    WHAT: ClassVar[str] = "a comparison with a previous run in numbers.json"

    id: str  # the registered id
    text: str  # the registered text
    folder: str  # the previous results folder as registered
    anchor: str  # its anchor, as registered and as found when the numbers were computed
    previous_arm: str  # a: the previous folder's arm
    arm: str  # b: this run's arm; the estimate is mean(b) - mean(a)
    quant: str  # the quant of both arms
    kind: str  # the registered kind (registration.vocabulary.KINDS)
    margin: float  # the registered margin, in rubric points
    alpha: float  # the registered one-sided alpha
    previous_judge: str  # the previous folder's primary judge, whose scores are a's
    judge: str  # this run's primary judge, whose scores are b's
    n: int  # questions scored in both runs
    paired_questions: list[str]  # their ids in this run
    # "previous", "this": the share of the arm's answers without a score (answer errors, unscored, judge errors)
    unscored_rate: dict[str, float]
    result: Result | None  # the paired result; None below two paired questions
    calibration: Calibration | None  # the rule's false-claim rate at the boundary; None below two paired questions
    cautions: list[str]  # what may explain a difference besides the arms (a different judge or rubric)
    verdict: str  # registration.vocabulary.VERDICTS
    reason: str  # why
