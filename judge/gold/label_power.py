"""What a `judge label --sample` draw buys, said before its first label is asked: per registered hypothesis, the
gold-corrected (PPI++) decision's power with the drawn questions, and the labelled questions the registered
``target_power`` needs (judge.numbers.validity.power_plan, from the primary judge's scores and the registered
``assumed_gold_correlation``: no label is read, so the figures are those of the plan; the report restates them once
gold exists, measured)."""
from __future__ import annotations

import math
from typing import Any

from registration.prereg import Hypothesis

from ..numbers.cells import per_question
from ..numbers.stats.rule import Scale
from ..numbers.stats.t_bounds import guard_step
from ..numbers.validity import planning_alpha, power_plan
from ..results.files import Folder


def power_line(h: Hypothesis, p: dict[str, Any], run_questions: int) -> str:
    """One hypothesis's power line (``p``: validity.power_plan); ``run_questions``: the questions a draw is taken
    from, which may be more than the comparison's (a subset, or questions unscored in an arm)."""
    pct = f"{100 * p['target']:.0f}%"
    head = (f"{h.id} ({h.kind.replace('_', '-')}, margin {h.margin:g}, one-sided α {p['alpha']:.5g}, "
            f"{p['questions']} paired questions): ")
    if p["labelled"] is None:
        now = "no labels drawn yet"
    elif p["mde"] is None:
        now = f"{p['labelled']} of them drawn, too few for a corrected interval"
    else:
        what = "smallest margin it shows equivalence within" if h.kind == "equivalence" else \
            "smallest difference beyond the boundary it detects"
        now = f"with {p['labelled']} of them labelled, the {what} with {pct} power is {p['mde']:.3f}"
        if p["power_at_margin"] is not None:
            now += f"; its power at the margin is {p['power_at_margin']:.2f}"

    def labels(k: int) -> str:
        if p["questions"] == run_questions:
            return str(k)
        return f"{k} (about --sample {min(run_questions, math.ceil(k * run_questions / p['questions']))})"

    k, k0 = p["labels_needed"], p["labels_needed_gold_only"]
    if not h.margin:
        need = "With a margin of 0 no labelled count is tied to a difference"
    elif k is None:
        need = f"{pct} power at the margin is out of reach: gold on all {p['questions']} questions falls short"
    else:
        need = (f"{pct} power at the margin needs {labels(k)} labelled questions ("
                + (f"{labels(k0)} if the judge's scores carry nothing" if k0 is not None else
                   "gold alone, the judge's scores carrying nothing, would fall short") + ")")
    return (f"{head}{now}. {need}. Assumed: judge–gold correlation of the paired differences "
            f"{p['correlation']:.2f} (`assumed_gold_correlation`), gold differences spreading as the judge's "
            f"(SD {p['sd_judge']:.3f}).")


def sample_power(d: Folder, picked: set[str]) -> list[str]:
    """The lines `judge label --sample` prints before its first label: a heading, then ``power_line`` per registered
    hypothesis of the run with at least 2 questions scored in both arms (``picked``: the drawn question ids)."""
    exp = d.exp
    hyps = [h for h in exp.hypotheses if h.a in d.run.arms and h.b in d.run.arms]
    scores = per_question(d.raw.keys, d.raw.judgments, d.run.judge.primary)
    lines = []
    for h in hyps:
        a, b = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
        ids = [q.id for q in d.questions.values() if all(t in q.tags for t in h.subset) and q.id in a and q.id in b]
        if len(ids) < 2:
            continue
        f = [float(b[q] - a[q]) for q in ids]
        p = power_plan(exp, h, f, planning_alpha(exp, h, len(hyps)), len(picked & set(ids)),
                       guard_step(Scale(min(d.scale), max(d.scale)))).to_dict()
        lines.append(power_line(h, p, len(d.questions)))
    if not lines:
        return []
    mode = exp.analysis.judge_error
    role = ("decides each hypothesis" if mode == "decide" else
            f"is reported beside each decision (judge_error = \"{mode}\"; under \"decide\" it would decide)")
    return [f"Power of the gold-corrected (PPI++) interval, which {role}, with this draw:", *lines]
