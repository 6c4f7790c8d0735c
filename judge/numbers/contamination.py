"""numbers.json's `contamination` section: each hypothesis about an arm trained on the registered training data
([contamination] arms) decided again on the clean questions, beside its decision on all of them.

A fine-tune that saw some questions in training can win them by memory; if the decision holds only with them, the
report says so (judge.outputs.report's caution). Registered decide = "clean_only", each such hypothesis is decided on
its clean questions only (`left_out`), and the section lists no second decision. The contaminated questions are computed
here from the sealed sets and the training files (registration.contamination), never read from the record
`python -m audit contamination` wrote, so the section is what the sealed inputs give; verify's second path derives
them again by its own code (judge.verify.second_path.contamination). The clean decision of decide = "both" is the rule's
verdict on the primary judge's scores, as a subset analysis is (judge.numbers.comparisons.subset_analyses): no
calibration, no family adjustment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from core.records import CleanComparison, Comparison, ContaminationSection, Result
from registration.contamination import overlap, questions_and_training
from registration.prereg import Experiment, Hypothesis
from registration.questions import Question

from .stats.decide import decide

# (hypothesis, its clean questions) -> (the paired question ids, the paired result or None below two)
Block = Callable[[Hypothesis, list[Question]], tuple[list[str], Result | None]]


def trained(exp: Experiment, h: Hypothesis) -> bool:
    """A hypothesis about an arm trained on the registered training data."""
    return exp.contamination is not None and bool({h.a, h.b} & set(exp.contamination.arms))


@dataclass(frozen=True)
class Found:
    """The contaminated sealed questions (in set order) and the training files they were found against."""

    contaminated: tuple[str, ...]
    training: dict[str, str]  # registered name -> sha256


def found(exp: Experiment) -> Found | None:
    """What the sealed sets and training files give now; None when [contamination] is not registered."""
    if exp.contamination is None:
        return None
    questions, training = questions_and_training(exp)
    result, sources = overlap(questions, training, exp.contamination)
    return Found(tuple(q.id for q in result if q.contaminated), {s.file: s.sha256 for s in sources})


def left_out(exp: Experiment, f: Found | None, h: Hypothesis) -> frozenset[str]:
    """The questions a hypothesis is not decided on: under decide = "clean_only" a hypothesis about a trained arm
    leaves the contaminated ones out (its decision, the family's tests of it, its self-preference check and its
    subsets); otherwise none."""
    if f is None or exp.contamination.decide != "clean_only" or not trained(exp, h):
        return frozenset()
    return frozenset(f.contaminated)


def contamination_section(exp: Experiment, f: Found | None, hyps: list[Hypothesis], qmap: dict[str, Question],
                          comparisons: list[Comparison], block: Block) -> ContaminationSection | None:
    """The section when [contamination] is registered, else None: the contaminated questions, the training
    files by sha256, and (decide = "both") per hypothesis about a trained arm its clean decision and whether it
    differs; under "clean_only" those decisions are already on the clean questions (`left_out`)."""
    c = exp.contamination
    if f is None:
        return None
    rows = []
    for h, comp in zip(hyps, comparisons, strict=True):
        if not trained(exp, h) or c.decide == "clean_only":
            continue
        clean = [q for q in qmap.values() if all(t in q.tags for t in h.subset) and q.id not in f.contaminated]
        ids, result = block(h, clean)
        verdict = "inconclusive" if result is None else decide(result, h.kind, h.margin).verdict
        rows.append(CleanComparison(id=h.id, questions=len(clean), paired_questions=ids, result=result,
                                    verdict=verdict, all_questions_verdict=comp.verdict,
                                    differs=verdict != comp.verdict))
    return ContaminationSection(n=c.n, threshold=c.threshold, decide=c.decide, arms=list(c.arms),
                                training=dict(f.training), contaminated=list(f.contaminated), comparisons=rows)
