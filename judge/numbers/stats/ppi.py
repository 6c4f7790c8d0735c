"""Prediction-powered inference (PPI++) for a paired mean difference when gold covers part of the questions.

Every decision of the harness trusts the judge. Where gold scores exist for some questions, the judge's
error on those questions can be measured and subtracted, so that a decision survives a biased judge.

Setting and estimand
--------------------
N questions. For each, the judge's paired difference ``f_i = judge_b,i - judge_a,i`` (every question) and, on n
of them, the gold difference ``d_i = gold_b,i - gold_a,i``. The estimand is the mean gold difference E[d] over
the population of questions the set is a sample of: the estimand of the judge-only decision (stats.paired
resamples questions), so the three estimates below (PPI, gold-only, judge-only) answer the same question.

The estimator (Angelopoulos et al., Science 2023; Angelopoulos, Duchi & Zrnic 2023, "PPI++")
-----------------------------------------------------------------------------------------------
L = the n labelled questions, U = the m = N - n others (the judge scored them too)::

    theta(lam)  = lam * mean_U(f) + mean_L(d - lam * f)
    var(lam)    = lam^2 * s2_U(f) / m  +  s2_L(d - lam * f) / n
    lam (tuned) = cov_L(d, f) / ((1 + n / m) * s2_{L+U}(f)),  clipped to [0, 1]

with ppi_py's conventions exactly (``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``_calc_lam_glm``): ``cov_L`` and
``s2_U``/``s2_L`` divide by the count (ddof 0), ``s2_{L+U}`` by the count - 1 (np.cov); rule "normal" is its
interval, theta -/+ z_{1-alpha} sqrt(var). lam = 0 is the gold-only estimate; lam = 1 is plain PPI.

Why this (disjoint) form, when the judge scored all N. With labels on a random subsample of the N questions one
might write the "labelled within all" form ``theta_all(mu) = mu * mean_all(f) + mean_L(d - mu * f)``. Since
``mean_all = (n mean_L + m mean_U) / N``, ``theta_all(mu) = theta(mu * m / N)``: the two forms are one family of
estimators, the all-form's plain rectifier (mu = 1) being lam = m/N here. Its variance, derived directly
(Cov(mean_all(f), mean_L(r)) = Cov(f, r) / N), is ``s2(d - mu f) / n + (2 mu cov(d, f) - mu^2 s2(f)) / N``, which
equals var(lam) at lam = mu m / N for population variances: the same estimator, the same variance. Its minimiser
mu* = cov(d, f) / s2(f) is the regression coefficient of two-phase (double) sampling, with
``var* = s2(d) / n * (1 - (1 - n/N) rho^2)``: narrower than gold-only whenever the judge's difference correlates
with the gold one. The disjoint form is used because a random split of exchangeable questions leaves L and U
independent samples, the premise ppi_py's variance is derived under, so every number here can be checked
against ppi_py (tests/test_ppi.py); the coverage of both forms is checked by simulation there too.

Small samples: rule "guarded" (the default)
-------------------------------------------
n is often 20 to 40, where the normal interval with ddof-0 variances undercovers, and a judge that agreed with
gold on every labelled question leaves a rectifier without spread. "guarded" keeps theta and lam and widens
the interval: ddof-1 variances; ``s2(f)`` of the imputed term from all N_h judge scores of the stratum (L is a
random part of them, so all N_h estimate it); two pseudo-residuals ``mean_L(r) -/+ step`` added to the
rectifier's spread, as stats.guarded_t_interval adds a pseudo-loss and a pseudo-win, but centred so the estimate
(and its correction of the judge's bias) is not shrunk; and Student t with the Welch-Satterthwaite degrees of
freedom of the variance's parts in place of z. ``step`` is the score rule's guard step, half the rubric's range
(stats.t_bounds.guard_step: one point on 0-2, five on 0-10), so the guard means the same on every scale and the
verdict does not change when scores and margin are multiplied together; the rule has no default step (a fixed
one point made the guard a fifth as wide, relative to the scale, on a 0-10 rubric as on 0-2, and 10 labels claimed
falsely at 3 alpha there).
BENCHMARKS.md measures the false-claim rate at the boundary over 0-1, 0-2 and 0-10 rubrics.

Strata (Fisch et al. 2024, stratified PPI)
------------------------------------------
``theta = sum_h W_h theta_h``, ``var = sum_h W_h^2 var_h``, ``W_h = N_h / N`` (the strata are registered tags:
their shares are fixed by the question set, not estimated), lam tuned per stratum (the total variance is a sum
over strata, so minimising each term minimises it). A stratum with gold on every question contributes its gold
mean exactly (variance s2(d) / N_h: its questions are still a sample); one with gold on part of its questions
uses PPI within the stratum, which needs n_h >= 2 labels drawn at random from that stratum; one with no gold
cannot be corrected, and then nothing is (the estimate would keep that stratum's judge bias).

Design: only labels from a seeded random sample (``label_sample``) or from whole strata correct a decision;
labels picked by hand ("convenience") measure agreement only (judge/numbers/stats/judge_error.py), never a correction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from core.records import Estimate, Stratum
from registration.vocabulary import GOLD_DESIGNS, PPI_RULES

__all__ = [
    "Correction",
    "tuned_lambda",
    "ppi_mean",
    "stratified_ppi_mean",
    "gold_only_mean",
    "judge_only_mean",
    "correct",
    "split",
    "label_sample",
]



@dataclass(frozen=True)
class Correction:
    """PPI beside gold-only and judge-only for one comparison; ``ppi`` None when the design cannot correct."""

    design: str
    ppi: Estimate | None
    gold_only: Estimate | None
    judge_only: Estimate
    reason: str  # why there is no correction ("" when there is one)


# ----------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------


def _vector(x, what: str) -> np.ndarray:
    v = np.asarray(x, dtype=float).reshape(-1)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what} must be finite numbers")
    return v


def _check_rule(rule: str, alpha: float, step: float | None) -> None:
    if rule not in PPI_RULES:
        raise ValueError(f"rule must be one of {PPI_RULES}, got {rule!r}")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha (one-sided) must be in (0, 0.5)")
    if rule == "guarded" and (step is None or not step > 0):
        raise ValueError(f"rule \"guarded\" needs the guard's step, half the rubric's range "
                         f"(stats.t_bounds.guard_step), got {step!r}")


def tuned_lambda(gold, judge_labelled, judge_unlabelled) -> float:
    """PPI++'s power-tuning lam for a mean, as ppi_py's ``_calc_lam_glm`` computes it (clip=True).

    ``cov_L(d, f) / ((1 + n/m) s2_{L+U}(f))`` (ddof 0 and 1, as there), clipped to [0, 1]; 0 when the judge's
    differences do not vary (they carry no information, where ppi_py would return NaN).
    """
    d, fl, fu = _vector(gold, "gold"), _vector(judge_labelled, "judge_labelled"), _vector(judge_unlabelled,
                                                                                         "judge_unlabelled")
    n, m = d.size, fu.size
    if n != fl.size or n < 1 or m < 1:
        raise ValueError("need gold and judge_labelled of equal length >= 1, and judge_unlabelled non-empty")
    cov = float(np.mean((d - d.mean()) * (fl - fl.mean())))
    var = float(np.var(np.concatenate([fl, fu]), ddof=1))
    if var == 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / m) * var), 0.0, 1.0))


def _part_of(name, questions: int, labelled: int, weight: float, estimate: float, lam: float | None,
             variance: float) -> Stratum:
    """One stratum's part of an estimate (the whole set is one stratum named None, whose id is "(rest)")."""
    return Stratum(id="(rest)" if name is None else name, name=name, questions=questions, labelled=labelled,
                   weight=weight, estimate=estimate, lam=lam, variance=variance)


@dataclass(frozen=True)
class _Part:
    """One stratum's estimate and its variance split into parts, each (variance, degrees of freedom)."""

    stratum: Stratum
    parts: tuple[tuple[float, float], ...]


def _spread(x: np.ndarray, rule: str, step: float | None, pseudo: bool) -> tuple[float, float]:
    """(variance of one value, its degrees of freedom): ddof 0 ("normal"); ddof 1, plus two pseudo-values
    mean -/+ step when ``pseudo`` ("guarded")."""
    if rule == "normal":
        return float(np.var(x)), math.inf
    ss = float(np.sum((x - x.mean()) ** 2))
    if pseudo:
        return (ss + 2 * step * step) / (x.size + 1), float(x.size + 1)
    if x.size < 2:
        return 0.0, math.inf
    return ss / (x.size - 1), float(x.size - 1)


def _stratum(name, d: np.ndarray, fl: np.ndarray, fu: np.ndarray, weight: float, rule: str, step: float | None,
             lam: float | None) -> _Part:
    """PPI within one stratum; lam 0, or no unlabelled question, is its gold mean."""
    n, m = d.size, fu.size
    if m == 0 or lam == 0:
        v, df = _spread(d, rule, step, pseudo=True)
        used = None if m == 0 else 0.0
        return _Part(_part_of(name, n + m, n, weight, float(d.mean()), used, v / n), ((weight ** 2 * v / n, df),))
    if n < 2:
        raise ValueError(f"stratum {name!r}: gold on {n} of its {n + m} questions; PPI needs at least 2 "
                         "(or gold on all of them)")
    lam = tuned_lambda(d, fl, fu) if lam is None else float(lam)
    r = d - lam * fl
    theta = lam * float(fu.mean()) + float(r.mean())
    if rule == "normal":
        v_imp, df_imp = lam * lam * float(np.var(fu)), math.inf
    else:
        v_imp, df_imp = lam * lam * float(np.var(np.concatenate([fl, fu]), ddof=1)), float(n + m - 1)
    v_rect, df_rect = _spread(r, rule, step, pseudo=True)
    var = v_imp / m + v_rect / n
    w2 = weight ** 2
    parts = ((w2 * v_imp / m, df_imp), (w2 * v_rect / n, df_rect))
    return _Part(_part_of(name, n + m, n, weight, theta, lam, var), parts)


def _combine(method: str, parts: Sequence[_Part], alpha: float, rule: str, step: float | None) -> Estimate:
    """The weighted estimate and its interval: z ("normal") or t with Welch-Satterthwaite df ("guarded")."""
    from scipy import special
    from scipy import stats as sps

    theta = math.fsum(p.stratum.weight * p.stratum.estimate for p in parts)
    pieces = [x for p in parts for x in p.parts if x[0] > 0]
    var = math.fsum(v for v, _ in pieces)
    se = math.sqrt(var)
    df = None
    if rule == "normal":
        crit = float(-special.ndtri(alpha))
    else:
        den = math.fsum(v * v / k for v, k in pieces if math.isfinite(k))
        df = math.inf if den == 0 else var * var / den
        crit = float(sps.t.ppf(1 - alpha, df)) if math.isfinite(df) else float(-special.ndtri(alpha))
    strata = tuple(p.stratum for p in parts)
    return Estimate(method=method, rule=rule, alpha=float(alpha), estimate=theta, se=se,
                    df=None if df is None or not math.isfinite(df) else float(df),
                    step=None if rule == "normal" else float(step), low=theta - crit * se,
                    high=theta + crit * se, questions=sum(s.questions for s in strata),
                    labelled=sum(s.labelled for s in strata), strata=list(strata))


# ----------------------------------------------------------------------------------------
# Estimates
# ----------------------------------------------------------------------------------------


def ppi_mean(gold, judge_labelled, judge_unlabelled, *, alpha: float, lam: float | None = None,
             rule: str = "guarded", step: float | None = None) -> Estimate:
    """PPI++ estimate of the mean difference, in ppi_py's argument order (Y, Yhat, Yhat_unlabeled).

    ``gold``/``judge_labelled``: d and f on the labelled questions; ``judge_unlabelled``: f on the others (module
    doc: the disjoint form). ``lam`` None tunes it (``tuned_lambda``); a number fixes it (0: gold only). ``step``:
    rule "guarded"'s pseudo-residual, half the rubric's range (required by that rule; module doc).
    """
    return stratified_ppi_mean({None: (gold, judge_labelled, judge_unlabelled)}, alpha=alpha, lam=lam, rule=rule,
                               step=step)


def stratified_ppi_mean(strata: Mapping[Any, tuple], *, alpha: float, lam: float | None = None,
                        rule: str = "guarded", step: float | None = None, method: str = "ppi") -> Estimate:
    """Stratified PPI++: ``strata`` maps a stratum's name to (gold, judge_labelled, judge_unlabelled).

    Each stratum is weighted by its share of the questions; one labelled whole contributes its gold mean, one
    labelled in part PPI with its own tuned lam (module doc). A stratum without gold is an error: its judge
    bias would stay in the estimate.
    """
    _check_rule(rule, alpha, step)
    data = {k: (_vector(g, "gold"), _vector(fl, "judge_labelled"), _vector(fu, "judge_unlabelled"))
            for k, (g, fl, fu) in strata.items()}
    if not data:
        raise ValueError("need at least one stratum")
    total = sum(d.size + fu.size for d, _, fu in data.values())
    parts = []
    for name, (d, fl, fu) in data.items():
        if d.size != fl.size:
            raise ValueError(f"stratum {name!r}: gold and judge_labelled differ in length")
        if d.size == 0:
            raise ValueError(f"stratum {name!r} has no gold: it cannot be corrected")
        parts.append(_stratum(name, d, fl, fu, (d.size + fu.size) / total, rule, step, lam))
    return _combine(method, parts, alpha, rule, step)


def gold_only_mean(strata: Mapping[Any, tuple], *, alpha: float, rule: str = "guarded",
                   step: float | None = None) -> Estimate:
    """The gold labels alone (PPI at lam = 0): per stratum the gold mean, weighted by the stratum's share."""
    return stratified_ppi_mean(strata, alpha=alpha, lam=0.0, rule=rule, step=step, method="gold_only")


def judge_only_mean(judge, *, alpha: float, rule: str = "guarded", step: float | None = None) -> Estimate:
    """The judge's mean difference over all N questions with an interval built as PPI's is (same rule, same
    guard), so widths compare like for like. The registered judge-only decision stays stats.paired's."""
    _check_rule(rule, alpha, step)
    f = _vector(judge, "judge")
    if f.size < 2:
        raise ValueError("need at least 2 questions")
    v, df = _spread(f, rule, step, pseudo=True)
    part = _Part(_part_of(None, f.size, 0, 1.0, float(f.mean()), None, v / f.size), ((v / f.size, df),))
    return _combine("judge_only", [part], alpha, rule, step)


def correct(judge, gold, *, design: str, alpha: float, strata: Sequence | None = None, rule: str = "guarded",
            step: float | None = None, lam: float | None = None) -> Correction:
    """PPI, gold-only and judge-only estimates of one comparison, from per-question arrays.

    ``judge``: the judge's difference b - a on every question; ``gold``: the gold difference, NaN (or None) where
    a question has no gold; ``strata``: a stratum label per question, or None. The design (GOLD_DESIGNS) says whether
    the labels may correct: "convenience" never does, and "complete_strata" requires every labelled stratum to be
    labelled whole. Every stratum needs gold (whole, or at least 2 questions of a random sample): otherwise no
    correction, with the reason.
    """
    if design not in GOLD_DESIGNS:
        raise ValueError(f"design must be one of {GOLD_DESIGNS}, got {design!r}")
    f = _vector(judge, "judge")
    g = np.array([math.nan if x is None else float(x) for x in gold], dtype=float)
    if g.size != f.size:
        raise ValueError("judge and gold must have one entry per question")
    if np.any(np.isinf(g)):
        raise ValueError("gold must be finite numbers or NaN (no gold)")
    labels = [None] * f.size if strata is None else list(strata)
    if len(labels) != f.size:
        raise ValueError("strata must have one label per question")
    judge_only = judge_only_mean(f, alpha=alpha, rule=rule, step=step)
    parts, reason = split(f, g, design=design, strata=strata)
    if not parts:
        return Correction(design, None, None, judge_only, reason)
    ppi = stratified_ppi_mean(parts, alpha=alpha, lam=lam, rule=rule, step=step)
    return Correction(design, ppi, gold_only_mean(parts, alpha=alpha, rule=rule, step=step), judge_only, "")


def split(judge, gold, *, design: str, strata: Sequence | None = None) -> tuple[dict[Any, tuple], str]:
    """The strata a correction is computed on, in the order of their names (as text): name -> (gold, judge on the
    labelled questions, judge on the others); empty, with the reason, when the design or the gold cannot correct
    (``correct``'s arguments and rules)."""
    if design not in GOLD_DESIGNS:
        raise ValueError(f"design must be one of {GOLD_DESIGNS}, got {design!r}")
    f = _vector(judge, "judge")
    g = np.array([math.nan if x is None else float(x) for x in gold], dtype=float)
    labels = [None] * f.size if strata is None else list(strata)
    if design == "convenience":
        return {}, "labels picked by hand: agreement only, no correction"
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(labels):
        groups.setdefault(s, []).append(i)
    out = {}
    for name, idx in sorted(groups.items(), key=lambda kv: str(kv[0])):
        ix = np.array(idx)
        have = ~np.isnan(g[ix])
        n, size = int(have.sum()), ix.size
        where = "the questions" if name is None else f"stratum {name!r}"
        if n == 0:
            return {}, f"{where}: no gold on any of its {size} questions, so its judge bias cannot be corrected"
        if design == "complete_strata" and n < size:
            return {}, f"{where}: gold on {n} of {size} questions, not whole, under design complete_strata"
        if n < size and n < 2:
            return {}, f"{where}: gold on {n} of {size} questions; a random sample needs at least 2"
        out[name] = (g[ix][have], f[ix][have], f[ix][~have])
    return out, ""


def label_sample(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """The seeded simple random sample of ``n`` question ids to label (design "random_sample"), in id order.

    Draws from the sorted distinct ids with ``numpy.random.default_rng(seed).choice(..., replace=False)``, so
    anyone holding the ids and the seed can re-draw the sample and see that the labels were not picked.
    """
    pool = sorted(set(ids))
    if not 0 <= n <= len(pool):
        raise ValueError(f"cannot sample {n} of {len(pool)} questions")
    picked = np.random.default_rng(seed).choice(len(pool), size=n, replace=False)
    return [pool[i] for i in sorted(picked.tolist())]
