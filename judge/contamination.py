"""numbers.json's `contamination` section: each hypothesis about an arm trained on the registered training data
([contamination] arms) decided again on the clean questions, beside its decision on all of them.

A fine-tune that saw some questions in training can win them by memory; if the decision holds only with them, the
report says so (judge.report's caution). The contaminated questions are computed here from the sealed sets and the
training files (registration.contamination), never read from the record `python -m audit contamination` wrote, so
the section is what the sealed inputs give; verify's second path derives them again by its own code
(judge.second_path.contamination). The clean decision is the rule's verdict on the primary judge's scores, as a
subset analysis is (judge.analysis.subset_analyses): no calibration, no family adjustment.
"""
from __future__ import annotations

from typing import Any, Callable

from registration.contamination import overlap, questions_and_training
from registration.prereg import Experiment, Hypothesis
from registration.questions import Question

from .stats.decide import decide
from .stats.paired import Paired

# (hypothesis, its clean questions) -> (the paired question ids, the paired result or None below two)
Block = Callable[[Hypothesis, list[Question]], tuple[list[str], dict[str, Any] | None]]


def trained(exp: Experiment, h: Hypothesis) -> bool:
    """A hypothesis about an arm trained on the registered training data."""
    return exp.contamination is not None and bool({h.a, h.b} & set(exp.contamination.arms))


def contamination_section(exp: Experiment, hyps: list[Hypothesis], qmap: dict[str, Question],
                          comparisons: list[dict[str, Any]], block: Block) -> dict[str, Any]:
    """{"contamination": ...} when [contamination] is registered, else {}: the contaminated questions, the training
    files by sha256, and per hypothesis about a trained arm its clean decision and whether it differs."""
    c = exp.contamination
    if c is None:
        return {}
    questions, training = questions_and_training(exp)
    found, sources = overlap(questions, training, c)
    bad = {q.id for q in found if q.contaminated}
    rows = []
    for h, comp in zip(hyps, comparisons, strict=True):
        if not trained(exp, h):
            continue
        clean = [q for q in qmap.values() if all(t in q.tags for t in h.subset) and q.id not in bad]
        ids, result = block(h, clean)
        verdict = "inconclusive" if result is None else decide(Paired(**result), h.kind, h.margin).verdict
        rows.append({"id": h.id, "questions": len(clean), "paired_questions": ids, "result": result,
                     "verdict": verdict, "all_questions_verdict": comp["verdict"],
                     "differs": verdict != comp["verdict"]})
    return {"contamination": {"n": c.n, "threshold": c.threshold, "decide": c.decide, "arms": list(c.arms),
                              "training": {s.file: s.sha256 for s in sources},
                              "contaminated": [q.id for q in found if q.contaminated],
                              "comparisons": rows}}


def report_lines(numbers: dict[str, Any]) -> list[str]:
    """The report's lines on contamination: how many questions, and per hypothesis about a trained arm its clean
    verdict, with a CAUTION where it differs from the verdict on all questions."""
    s = numbers.get("contamination")
    if not s:
        return []
    bad = s["contaminated"]
    out = [f"Contamination ({s['n']}-gram overlap with {', '.join(s['training'])}, the training "
           f"data of {', '.join(s['arms'])}): {len(bad)} sealed question(s) contaminated"
           + (f" ({', '.join(bad)})." if bad else ".")]
    for r in s["comparisons"]:
        line = (f"{r['id']} on the {len(r['paired_questions'])} clean questions paired: {r['verdict']} (all "
                f"questions: {r['all_questions_verdict']})")
        if r["differs"]:
            line = (f"CAUTION: {line}: the decision depends on questions the trained arm may have memorised; the "
                    "clean verdict is the one that says what was learned.")
        out.append(line if line.endswith(".") else line + ".")
    return out
