"""What a decision rule is on the main path: a frozen object with the three things the decision code asks of it,
and the records it is handed and gives back. A rule is registered by name in judge.numbers.stats.decision_rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from ..rule import Scale


@dataclass(frozen=True)
class Sample:
    """One paired comparison as a rule sees it (d = b - a per question), after the bootstrap interval is drawn."""

    d: np.ndarray  # each question's difference, as a float
    exact: list[Fraction]  # each question's difference, exact
    alpha: float  # one-sided
    margin: float | None  # the registered margin (None: none)
    scale: Scale | None  # the rubric's scale and K (None: a rule that needs none)
    clusters: Sequence | None  # each question's resampling unit (None: the questions themselves)
    units: list[tuple[Fraction, int]] | None  # the clusters as (sum of differences, questions); None: questions
    n_units: int  # how many units the bootstrap resamples
    ci_low: float  # the two-sided (1 - 2 alpha) bootstrap interval, reported whatever the rule
    ci_high: float


@dataclass(frozen=True)
class Bounds:
    """The interval a rule decides on (``bound``: its one-sided lower bound), with what it records beside it."""

    bound: float
    upper: float
    guard_low: float | None = None  # a guard interval the rule widened the bootstrap's by
    guard_high: float | None = None
    tests: list[dict[str, Any]] | None = None  # tests the rule decides by, where it decides by tests


@dataclass(frozen=True)
class Simulation:
    """A calibration's data sets, as a rule decides them: the differences shifted onto the hypothesis's boundary."""

    shifted: list[Fraction]  # each question's difference, exact, shifted so that their mean is the boundary
    kind: str
    margin: float  # the registered margin
    alpha: float
    method: str  # the bootstrap interval (registration.vocabulary.METHODS)
    resamples: int
    scale: Scale | None
    clusters: Sequence | None  # each question's resampling unit, or None
    sims: int
    seed: int


@dataclass(frozen=True)
class DecisionRule:
    """A decision rule: the interval it decides on (``bounds``), its verdict and the reason quoting its numbers
    (``decide``, on the core.records.Result of judge.numbers.stats.paired), and how many of a calibration's
    simulated data sets it makes its claim on (``calibrate``). ``needs_scale``: it reads the rubric's scale (the
    bootstrap alone does not)."""

    name: str
    needs_scale: bool
    bounds: Callable[[Sample], Bounds]
    decide: Callable[[Any, str, float], tuple[str, str]]
    calibrate: Callable[[Simulation], int]
