"""Stability across a question's K samples: pass^k, pass@k, the per-sample pass rate, and how often the samples' scores
agree, each a mean over questions with a bootstrap interval that resamples questions (whole clusters when the set
registers them), so a model right on 2 of 3 samples is told apart from one right on every sample.

Per question, with its K samples scored s_1..s_K and the registered pass score t:
* pass^k (``pass_hat_k``): 1 when every s_i >= t, else 0 (every sample passes);
* pass@k (``pass_at_k``): 1 when at least one s_i >= t;
* pass rate (``pass_rate``): the share of its K samples with s_i >= t (pass@1 in expectation);
* unanimous (``unanimous``): 1 when all K scores are equal (K >= 2; undefined for K = 1);
* agreement (``agreement``): the share of its K(K-1)/2 pairs of samples whose scores are equal (K >= 2).
Each statistic is the mean of these over the questions all K of whose samples were scored. At K = 1 pass^1, pass@1 and
the pass rate are one number. A question with a sample that has no score (an answer error, an unscored verdict, a
judge error) is left out and counted (``incomplete``): a missing verdict is neither a pass nor a fail.

The interval is the two-sided 95% percentile bootstrap of that mean, drawn by the decisions' documented scheme
(judge.numbers.stats.bootstrap: `units`, `tally`, `draw_counts`, `exact_interval`) from the registered resamples and
seed, computed exactly. verify's second path recomputes it by its own code (judge.verify.second_path.stability).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Mapping, Sequence

from core.records import StabilityEstimate

from .bootstrap import decimal, draw_counts, exact_interval, tally, units

CONFIDENCE = 0.95  # the two-sided level of every stability interval
STATISTICS = ("pass_hat_k", "pass_at_k", "pass_rate", "unanimous", "agreement")


def question_values(scores: Sequence[int], pass_score: float) -> dict[str, Fraction | None]:
    """One question's value of each statistic (STATISTICS) from the scores of its K samples; unanimous and agreement
    are None for K = 1 (one sample agrees with nothing)."""
    k = len(scores)
    if k < 1:
        raise ValueError("a question needs at least one scored sample")
    passed = [s >= pass_score for s in scores]
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    return {
        "pass_hat_k": Fraction(int(all(passed))),
        "pass_at_k": Fraction(int(any(passed))),
        "pass_rate": Fraction(sum(passed), k),
        "unanimous": Fraction(int(len(set(scores)) == 1)) if k > 1 else None,
        "agreement": Fraction(sum(scores[i] == scores[j] for i, j in pairs), len(pairs)) if pairs else None,
    }


def mean_interval(values: Sequence[Fraction], labels: Sequence | None, resamples: int, seed: int,
                  confidence: float = CONFIDENCE) -> StabilityEstimate:
    """The mean of `values` (one per question) and its two-sided percentile bootstrap interval; `labels`: each
    question's resampling unit (judge.numbers.stats.rule.cluster_units), None to resample questions one by one."""
    unit_list = units(values, labels)
    kinds, freq = tally(unit_list)
    lo, hi = exact_interval(kinds, freq, draw_counts(freq, resamples, seed), (1 - decimal(confidence)) / 2,
                            "percentile")
    return StabilityEstimate(estimate=float(sum(values) / len(values)), ci_low=float(lo), ci_high=float(hi))


def stability(samples: Mapping[str, Sequence[int]], pass_score: float, labels: Sequence | None, resamples: int,
              seed: int) -> dict[str, StabilityEstimate | None]:
    """Each statistic over the questions of `samples` (question id -> its K scores, every sample scored), with its
    interval; None where it is undefined (no question, or unanimous and agreement at K = 1)."""
    per_q = [question_values(s, pass_score) for s in samples.values()]
    out: dict[str, StabilityEstimate | None] = {}
    for name in STATISTICS:
        values = [v[name] for v in per_q]
        out[name] = (mean_interval(values, labels, resamples, seed)
                     if values and all(v is not None for v in values) else None)
    return out
