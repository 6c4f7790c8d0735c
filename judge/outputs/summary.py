"""The answer first: a few sentences that head report.md and review.html, from numbers.json alone.

One line per registered hypothesis (its verdict, the estimate that decided it and its interval in words, the one
reason that decided it, and what would change it), then one line on what the judge's measured agreement with gold
means for these decisions. Every number is a numbers.json value rounded as the tables round it, except the questions
a not-shown decision would need, which is stated as an approximation (the interval's half-width taken to shrink as
1/sqrt(n) around the same estimate) and is not part of numbers.json: verify re-renders the report from numbers.json,
so these lines must be a function of it alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from core.records import Comparison, Numbers, RunComparison

# Landis and Koch's (1977) conventional words for Cohen's kappa, highest first: (lowest kappa, words)
KAPPA_WORDS = ((0.8, "almost perfectly"), (0.6, "substantially"), (0.4, "moderately"), (0.2, "only fairly"),
               (0.0, "barely above chance"))
TRUSTED_KAPPA = 0.6  # from here a judge's own verdicts may be read as they stand
USABLE_KAPPA = 0.4  # below it, a judge's verdicts are unreliable


@dataclass(frozen=True)
class Line:
    """One line of the summary: `head` (what it is about and the verdict, shown bold) and `text` (why)."""

    head: str
    text: str


def summary(numbers: Numbers) -> list[Line]:
    """The summary of a numbers.json document: one line per registered comparison, then the judge's."""
    return [*(decision_line(c) for c in numbers.comparisons),
            *(previous_run_line(c) for c in numbers.run_comparisons or ()), judge_line(numbers)]


def markdown(lines: list[Line]) -> str:
    """The summary as report.md's bullet list."""
    return "".join(f"- **{s.head}** {s.text}\n" for s in lines)


def _pct(confidence: float) -> str:
    return f"{100 * confidence:.4g}%"


def _signed(x: float) -> str:
    return f"{x:+.3f}"


def _claim(c: Comparison) -> str:
    """What the hypothesis claims: its registered text, else the claim its kind makes."""
    if c.text:
        return f'"{c.text}"'
    m = f"{c.margin:g}"
    what = {"non_inferiority": f"{c.b} is not worse than {c.a} by more than {m}",
            "superiority": f"{c.b} scores higher than {c.a}",
            "equivalence": f"{c.b} and {c.a} are within {m} of each other"}[c.kind]
    return f"{what} at {c.quant}" + (f", on {'+'.join(c.subset)}" if c.subset else "")


def _difference(c: Comparison, d: float) -> str:
    """`d` = b − a in words."""
    if d == 0:
        return f"{c.b} and {c.a} scored the same on average"
    return f"{c.b} scored {abs(d):.3f} points {'higher' if d > 0 else 'lower'} than {c.a}"


@dataclass(frozen=True)
class Interval:
    """The estimate and interval a verdict was decided on: the judge's (the registered rule's interval) or the
    gold-corrected one (PPI++, under judge_error = "decide")."""

    estimate: float
    low: float
    high: float
    confidence: float  # two-sided
    n: int  # questions paired (judge) or labelled (gold-corrected)
    corrected: bool


def deciding(c: Comparison) -> Interval | None:
    """The interval that decided comparison `c`: under judge_error = "decide" the gold-corrected one, else the
    judge's: from the registered rule's lower bound to its upper end (the bootstrap interval's, in results written
    before the upper end was recorded). None: no estimate."""
    je = c.judge_error
    if je and je.mode == "decide":
        p = je.ppi
        return None if p is None else Interval(p.estimate, p.low, p.high, 1 - 2 * p.alpha, p.labelled, True)
    r = c.result
    if r is None:
        return None
    return Interval(r.diff, r.bound, r.ci_high if r.upper is None else r.upper, r.confidence, r.n, False)


def _category(kind: str, margin: float, low: float, high: float) -> str:
    """The verdict the registered rule gives on [low, high] (registration.vocabulary.VERDICTS; strict at a margin)."""
    if kind == "equivalence":
        if low > -margin and high < margin:
            return "equivalent"
        return "not equivalent" if low >= margin or high <= -margin else "inconclusive"
    if low > 0:
        return "superior"
    return "non-inferior" if kind == "non_inferiority" and low > -margin else "not shown"


def _why(c: Comparison, i: Interval) -> str:
    """The one reason the interval gives for the verdict."""
    m, lo = c.margin, _signed(i.low)
    v = c.verdict
    if v == "superior":
        return f"the interval's lower end, {lo}, is above 0, so {c.b} scores higher"
    if v == "non-inferior":
        return f"the interval's lower end, {lo}, is above -{m:g}, so a loss as large as the margin is ruled out"
    if v == "not shown" and c.kind == "non_inferiority":
        return (f"the interval's lower end, {lo}, reaches -{m:g} or below, so a loss as large as the margin is not "
                "ruled out")
    if v == "not shown":
        return f"the interval's lower end, {lo}, is at or below 0, so a gain is not shown"
    if v == "equivalent":
        return f"it lies wholly inside -{m:g} to +{m:g}"
    if v == "not equivalent":
        return f"it lies wholly outside -{m:g} to +{m:g}, so the arms differ by more than the margin"
    return f"it reaches past -{m:g} or +{m:g}, so neither equivalence nor a difference beyond the margin is shown"


def questions_needed(c: Comparison, i: Interval) -> int | None:
    """About how many questions the interval would need to clear the margin, were the estimate to stay and the
    half-width to shrink as 1/sqrt(n); None: no number does (the estimate itself is at or past the boundary), or
    the interval has no width below the estimate to shrink."""
    d, m = i.estimate, c.margin
    below, above = d - i.low, i.high - d
    if c.kind == "equivalence":
        room = min((d + m) / below if below > 0 else math.inf, (m - d) / above if above > 0 else math.inf)
        if d <= -m or d >= m or room == math.inf:
            return None
        return math.ceil(i.n / room ** 2)
    boundary = 0.0 if c.kind == "superiority" else -m
    if d <= boundary or below <= 0:
        return None
    return math.ceil(i.n * (below / (d - boundary)) ** 2)


def _change(c: Comparison, i: Interval) -> str:
    """What would change a statistical verdict that made no claim: the questions or labels needed."""
    v = c.verdict
    if v in ("superior", "equivalent", "not equivalent") or (v == "non-inferior" and c.kind == "non_inferiority"):
        return ""
    m = c.margin
    if c.kind == "equivalence" and abs(i.estimate) >= m:
        return f" No sample size would show equivalence: the estimate itself is at or beyond ±{m:g}."
    if c.kind == "superiority" and i.estimate <= 0:
        return " No sample size would show it: the estimate itself is at or below 0."
    if c.kind == "non_inferiority" and i.estimate <= -m:
        return f" No sample size would show it: the estimate itself is at or below -{m:g}."
    if i.corrected:
        p = c.judge_error.power if c.judge_error else None
        if not p:
            return ""
        pct = f"{100 * p.target:.0f}%"
        if p.labels_needed is None:
            return (f" {pct} power at the margin is out of reach even with gold on all {p.questions} questions; "
                    "a judge that agrees better with gold would narrow the interval.")
        now = "none drawn yet" if p.labelled is None else f"{p.labelled} now"
        return (f" {pct} power at the margin needs {p.labels_needed} of the {p.questions} questions labelled "
                f"at random ({now}; `judge label --sample`).")
    need = questions_needed(c, i)
    if need is None:
        return ""
    return (f" Roughly {need} questions would be needed to show it (now {i.n}), if the estimate held and the "
            "interval narrowed as 1/√n: an approximation, not a power calculation.")


def _gold_aside(c: Comparison) -> str:
    """Under judge_error = "report": the gold-corrected estimate beside the judge's verdict, where one exists."""
    je = c.judge_error
    p = je.ppi if je else None
    if je is None or je.mode != "report" or p is None:
        return ""
    said = ("agrees" if je.verdict == c.verdict else "would differ")
    return (f" Corrected against gold ({p.labelled} of {p.questions} questions with gold), the estimate is "
            f"{_signed(p.estimate)} ({_pct(1 - 2 * p.alpha)} interval {_signed(p.low)} to "
            f"{_signed(p.high)}), whose verdict \"{je.verdict}\" {said}.")


def _family_changed(c: Comparison) -> bool:
    """Whether the family of hypotheses gave `c` its verdict: it was last tested at another level than its own, and
    its own level's test said otherwise."""
    fam = c.family
    if fam is None:
        return False
    own = next((t.verdict for t in fam.tests if t.alpha == c.alpha), None)
    return fam.tested_at not in (None, c.alpha) and own is not None and own != c.verdict


def decision_line(c: Comparison) -> Line:
    """One registered hypothesis in a sentence or three."""
    head = f"{c.id}, {_claim(c)}:"
    fam = c.family
    if fam and fam.method == "fixed-sequence" and fam.tested_at is None:
        return Line(f"{head} not tested.", f"The fixed sequence stopped at {fam.stopped_at}, which made no claim, "
                    f"so this hypothesis was never tested; it is tested only once {fam.stopped_at} is shown.")
    i = deciding(c)
    if i is None:
        return Line(f"{head} {c.verdict}.", f"No estimate decided it: {c.reason}.")
    whose, interval = (("Corrected against gold (PPI++)", "gold-corrected interval") if i.corrected else
                       ("By the judge", "interval of the registered rule"))
    said = (f"{whose}, {_difference(c, i.estimate)} ({_pct(i.confidence)} {interval}, {_signed(i.low)} to "
            f"{_signed(i.high)}, {i.n} questions{' with gold' if i.corrected else ''})")
    if i.corrected:
        said += f"; the judge alone says {_signed(c.result.diff)}"
    if _category(c.kind, c.margin, i.low, i.high) == c.verdict:
        text = f"{said}: {_why(c, i)}.{_change(c, i)}"
    elif _family_changed(c):
        text = (f"{said}; as one of {fam.size} hypotheses ({fam.method}) it was tested at one-sided "
                f"α = {fam.tested_at:.5g}, where it is \"{c.verdict}\".")
    else:  # a guard withheld or changed what the interval says: the recorded reason
        text = f"{said}, but the verdict rests on something else: {c.reason}."
    return Line(f"{head} {c.verdict}.", text + _gold_aside(c))


def _kappa_words(kappa: float) -> str:
    if kappa < 0:
        return "worse than chance"
    return next(words for low, words in KAPPA_WORDS if kappa >= low)


def previous_run_line(c: RunComparison) -> Line:
    """One registered comparison with a previous run in a sentence."""
    what = (f"{c.arm} here against {c.previous_arm} in {c.folder} (anchor {c.anchor[:12]}…), {c.quant}, on "
            f"{c.n} questions matched by text")
    if c.result is None:
        return Line(f"{c.id}: {c.verdict}.", f"{what}: {c.reason}.")
    r = c.result
    return Line(f"{c.id}: {c.verdict}.", f"{what}: estimate {_signed(r.diff)}, one-sided bound {_signed(r.bound)} "
                f"against the margin {c.margin:.2f} ({c.kind.replace('_', '-')}, α = {c.alpha}).")


def judge_line(numbers: Numbers) -> Line:
    """What the judge's measured agreement with gold means for the decisions above."""
    jv = numbers.judge_validity
    if jv is None:
        return Line("The judge's quality is not measured.", "The run has no gold scores, so every verdict above "
                    "takes the judge's scores at face value; label a random sample of answers (`judge label "
                    "--sample`) or register a gold program to measure it.")
    primary = next(j for j in jv.judges if j.id == jv.primary)
    a = primary.agreement
    if a is None:
        return Line("The judge's quality is not measured.", f"No answer {jv.primary} scored has a gold score, so "
                    "every verdict above takes its scores at face value.")
    k = a.kappa
    if k is None:
        return Line("The judge's agreement with gold is undefined.", f"Weighted κ is undefined on the "
                    f"{a.answers} answers with gold (every score alike), so the verdicts above cannot be judged by "
                    "it; label answers across the scale.")
    interval = (f", {_pct(1 - 2 * a.alpha)} interval {a.kappa_low:.3f} to {a.kappa_high:.3f}"
                if a.kappa_low is not None else "")
    measured = (f"Quadratic-weighted κ {k:.3f}{interval}, on {a.answers} answers with gold "
                f"(exact agreement {a.exact:.3f})")
    head = f"The judge agrees with gold {_kappa_words(k)}."
    decided_by_gold = jv.mode == "decide"
    if k < USABLE_KAPPA:
        meaning = ("the gold-corrected decisions above rest on the gold labels far more than on the judge; more "
                   "labels or a better judge would narrow them" if decided_by_gold else
                   "treat every verdict above that rests on its scores as unreliable, and read the gold-corrected "
                   "estimates beside them; label more gold or use a better judge")
    elif k < TRUSTED_KAPPA:
        meaning = ("its scores inform the gold-corrected decisions above, which account for its error"
                   if decided_by_gold else "its verdicts above are informative but noisy; where a gold-corrected "
                   "estimate disagrees, trust the corrected one")
    else:
        meaning = "its verdicts above can be read as they stand"
        if a.kappa_low is not None and a.kappa_low < USABLE_KAPPA:
            meaning += f", though with {a.answers} answers with gold its κ may be as low as {a.kappa_low:.3f}"
    floor = jv.min_gold_agreement
    registered = (f" The registered floor for κ's lower bound is {floor:g}: below it a decision is inconclusive."
                  if floor is not None else "")
    return Line(head, f"{measured}: {meaning}.{registered}")
