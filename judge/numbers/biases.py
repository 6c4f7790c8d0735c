"""Judge biases in numbers: a judge's self-preference, its test-retest reliability, the answers' style, and the
family of registered hypotheses. Pure functions; judge.numbers.analysis puts their results beside each decision.

- Self-preference: a judge that shares a model family with an arm may favour it. With several judges, each
  judge's estimate on the same questions, and a judge's *lift*: its per-question difference minus the mean of the
  other judges' on the same question, averaged, with a percentile bootstrap interval over questions, or over whole
  clusters when the question set registers them (`lift`).
- Test-retest: a verdict asked again (`[judge] retest`) either repeats the first or flips. The flip rate with its
  exact (Clopper-Pearson) interval, and the quadratic-weighted Cohen's kappa between test and retest with the
  bootstrap interval the judges' agreement uses (`retest_agreement`).
- Style: the paired differences of one hypothesis regressed by least squares on the paired differences of the
  answers' style (log length in words always; markdown headers, list items and citations where registered). The
  intercept is the difference expected between answers of the same style, with its t interval (`style_adjustment`).
- Family: the registered hypotheses as one family of claims, Holm's step-down or a fixed sequence in the
  registered order (`family_decisions`): the chance of any false claim among them stays at most the largest
  registered alpha, where unadjusted it grows with their number.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from core.records import FamilySection, FamilyStep, Lift, RetestRow, Style

from .agreement import kappa_with_ci
from .stats.bootstrap import decimal, draw_counts, exact, exact_interval, tally, units

# What counts as a citation in an answer (the gaming audit's citation-stuffing detector counts the same): an article,
# section, rule or clause number, a paragraph sign, a bracketed number, or a code such as ABC-12.
CITATION_RE = re.compile(r"\b(?:Article|Section|Art\.|Rule|Clause)\s+\d+(?:\.\d+)*|§\s*\d+(?:\.\d+)*|\[\d+\]"
                         r"|\b[A-Z]{2,}-\d+\b")
HEADER_RE = re.compile(r"(?m)^ {0,3}#{1,6}(?:[ \t]|$)")  # a markdown ATX heading line
LIST_ITEM_RE = re.compile(r"(?m)^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")  # a markdown list item line


def style_counts(text: str) -> dict[str, float]:
    """An answer's style covariates (registration.analysis.STYLES): `length` is log(1 + words), so a difference of
    two is the log of the ratio of their lengths; the others are counts."""
    return {"length": math.log1p(len(text.split())), "headers": len(HEADER_RE.findall(text)),
            "list_items": len(LIST_ITEM_RE.findall(text)), "citations": len(CITATION_RE.findall(text))}


# ---- self-preference ------------------------------------------------------------------------------------------


def lift(d: Mapping[str, Mapping[str, Any]], judge: str, *, resamples: int, seed: int,
         confidence: float = 0.95, clusters: Mapping[str, Any] | None = None) -> Lift | None:
    """`d`: judge -> question id -> that judge's paired difference b - a (exact or float). The lift of `judge` over
    the others on the questions every judge scored; None with fewer than two such questions or no other judge.

    Per question, lift_q = d[judge][q] - mean over the other judges of d[other][q]; the lift is their mean, and its
    interval the percentile bootstrap of that mean, drawn by the decisions' seeded scheme (judge.numbers.stats.bootstrap
    `units`, `tally`, `draw_counts`, `exact_interval`). `clusters` (question id -> registered cluster, None for a
    question without one): when any of the questions has one, whole clusters are resampled and a question without
    one is a unit of its own, as the decisions resample."""
    others = sorted(j for j in d if j != judge)
    if judge not in d or not others:
        return None
    common = sorted(set(d[judge]).intersection(*(set(d[j]) for j in others)))
    if len(common) < 2:
        return None
    own = [exact(d[judge][q]) for q in common]
    rest = [sum(exact(d[j][q]) for j in others) / len(others) for q in common]
    per_q = [x - y for x, y in zip(own, rest, strict=True)]
    labels = unit_labels(common, clusters)
    unit_list = units(per_q, labels)
    kinds, freq = tally(unit_list)
    lo, hi = exact_interval(kinds, freq, draw_counts(freq, resamples, seed), (1 - decimal(confidence)) / 2,
                            "percentile")
    n = len(common)
    return Lift(judge=judge, others=others, n=n, estimate=float(sum(own) / n), others_estimate=float(sum(rest) / n),
                lift=float(sum(per_q) / n), ci_low=float(lo), ci_high=float(hi), confidence=confidence,
                resamples=resamples, seed=seed, resampling="questions" if labels is None else "clusters",
                units=len(unit_list))


def unit_labels(ids: Sequence[str], clusters: Mapping[str, Any] | None) -> list[tuple] | None:
    """Each question's resampling unit: its registered cluster, or the question itself when it has none; None when
    none of `ids` has a cluster (the questions are then resampled one by one)."""
    of = [(clusters or {}).get(q) or None for q in ids]
    if not any(of):
        return None
    return [("cluster", c) if c else ("question", q) for q, c in zip(ids, of, strict=True)]


def shares_family(judge_family: str | None, arm_families: Sequence[str | None]) -> bool:
    """Whether a judge shares a registered model family with one of the arms (an unregistered family shares none)."""
    return bool(judge_family) and judge_family in arm_families


# ---- test-retest ----------------------------------------------------------------------------------------------


def retest_agreement(judge: str, drawn: int, pairs: Sequence[tuple[int, int]], scale: Sequence[int],
                     seed: int) -> RetestRow:
    """`pairs`: (original score, retest score) of each label scored both times."""
    from scipy import stats as sps  # inside: importing scipy costs ~0.6 s

    n = len(pairs)
    if n == 0:
        return RetestRow(judge=judge, drawn=drawn, n=0, flips=0, flip_rate=None, flip_ci95=None, kappa_quadratic=None,
                         kappa_ci95=None)
    flips = sum(a != b for a, b in pairs)
    ci = sps.binomtest(flips, n).proportion_ci(0.95, method="exact")
    kappa, kci = kappa_with_ci([a for a, _ in pairs], [b for _, b in pairs], scale, seed) if n >= 2 else (None, None)
    return RetestRow(judge=judge, drawn=drawn, n=n, flips=flips, flip_rate=flips / n,
                     flip_ci95=[float(ci.low), float(ci.high)], kappa_quadratic=kappa, kappa_ci95=kci)


# ---- style ----------------------------------------------------------------------------------------------------


def style_adjustment(d: Sequence[float], deltas: Mapping[str, Sequence[float]], alpha: float) -> Style:
    """`d`: the paired differences b - a, one per question; `deltas`: covariate -> b's style minus a's on the same
    questions (`style_counts`, averaged over a question's samples). A covariate that is 0 on every question has
    nothing to adjust and is left out; when the rest cannot be told apart from the intercept (every pair differs by
    the same amount) or from each other, or leave no residual degree of freedom, the adjusted difference is
    undefined, and says why."""
    from scipy import stats as sps

    y = np.asarray(d, dtype=float)
    n = y.size
    used = [c for c, v in deltas.items() if any(float(x) != 0 for x in v)]
    x = np.column_stack([np.ones(n)] + [np.asarray(deltas[c], dtype=float) for c in used])
    base = dict(n=n, covariates=used, raw=float(y.mean()) if n else math.nan, confidence=1 - 2 * alpha)
    p = x.shape[1]
    if n - p < 1:
        return Style(**base, adjusted=None, se=None, df=None, ci_low=None, ci_high=None,
                               undefined=f"{n} paired questions leave no degree of freedom for {p} parameters")
    if np.linalg.matrix_rank(x) < p:
        what = ("every pair differs by the same amount in " + ", ".join(used) if p == 2
                else "the style differences are linearly dependent")
        return Style(**base, adjusted=None, se=None, df=None, ci_low=None, ci_high=None,
                               undefined=f"{what}: the difference at equal style is not identified")
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    df = n - p
    sigma2 = float(resid @ resid) / df
    se = math.sqrt(sigma2 * float(np.linalg.inv(x.T @ x)[0, 0]))
    t = float(sps.t.ppf(1 - alpha, df))
    b0 = float(beta[0])
    return Style(**base, adjusted=b0, se=se, df=df, ci_low=b0 - t * se, ci_high=b0 + t * se,
                           slopes={c: float(b) for c, b in zip(used, beta[1:], strict=True)})


# ---- the family of registered hypotheses ----------------------------------------------------------------------


def family_decisions(method: str, ids: Sequence[str], alphas: Sequence[float],
                     claims: Callable[[int, float], bool]) -> FamilySection:
    """Decide the registered hypotheses `ids` (in registered order, each with its one-sided alpha) as one family.
    `claims(i, a)`: whether hypothesis i makes its claim when tested at one-sided level a (False for one this run
    cannot decide).

    "holm": step-down. While hypotheses remain unclaimed, each remaining one is tested at its alpha divided by how
    many remain; those that claim leave, and the rest are tested again at the larger level; when none claims, the
    procedure stops. With equal alphas this is Holm's procedure (a claim at a level stays a claim at any larger one,
    as it does for every registered rule), and the chance of any false claim is at most the largest alpha, under
    any dependence between the hypotheses. "fixed-sequence": each in the registered order at its own alpha, until the
    first that does not claim; the ones after it are not tested. "none": each at its own alpha."""
    m = len(ids)
    if method == "none":
        out = [_step(h, a, a, claims(i, a), None) for i, (h, a) in enumerate(zip(ids, alphas, strict=True))]
        return FamilySection(method=method, size=m, stopped_at=None, steps=out)
    if method == "fixed-sequence":
        steps, stopped = [], None
        for i, (h, a) in enumerate(zip(ids, alphas, strict=True)):
            if stopped is not None:
                steps.append(_step(h, a, None, False, i + 1))
                continue
            ok = claims(i, a)
            steps.append(_step(h, a, a, ok, i + 1))
            if not ok:
                stopped = h
        return FamilySection(method=method, size=m, stopped_at=stopped, steps=steps)
    if method != "holm":
        raise ValueError(f"family must be 'holm', 'fixed-sequence' or 'none', not {method!r}")
    remaining, tested, claimed_at = list(range(m)), {}, {}
    step = 0
    while remaining:
        step += 1
        level = {i: alphas[i] / len(remaining) for i in remaining}
        tested.update(level)
        now = [i for i in remaining if claims(i, level[i])]
        if not now:
            break
        claimed_at.update((i, step) for i in now)
        remaining = [i for i in remaining if i not in claimed_at]
    return FamilySection(method=method, size=m, stopped_at=None,
                         steps=[_step(h, alphas[i], tested[i], i in claimed_at, claimed_at.get(i))
                                for i, h in enumerate(ids)])


def _step(h: str, alpha: float, tested_at: float | None, claimed: bool, step: int | None) -> FamilyStep:
    return FamilyStep(id=h, alpha=alpha, tested_at=tested_at, claimed=claimed, step=step)
