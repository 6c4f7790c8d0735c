"""Each registered comparison with a previous run ([[comparisons]]) decided like a hypothesis (numbers.json's
`run_comparisons`): the previous folder's arm is a, this run's arm b, on the questions both runs hold (matched by the
sha256 of their text, judge.numbers.matched), by the registered kind, margin and alpha and the [analysis] settings.

The previous folder is refused unless its anchor is the one registered: a comparison registered against a run is a
test of that run, and a folder edited since (or another folder at the same path) is not it.
"""
from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from core.errors import BadInput
from core.records import Cell, RunComparison
from registration.comparisons import RegisteredComparison
from registration.prereg import Experiment
from registration.questions import Question

from ..results.files import anchor, read_numbers
from .cells import unscored_rate
from .comparisons import cluster_of
from .matched import Side, cautions, read_side, same_questions, text_sha256
from .stats.hypothesis import decision
from .stats.rule import Scale


def previous_folder(exp: Experiment, c: RegisteredComparison) -> Path:
    """The registered previous folder, refused (exit 2) unless its anchor is the registered one."""
    folder = c.folder_path(exp.dir)
    found = anchor(folder)
    if found != c.anchor:
        raise BadInput(exp.dir / "prereg.toml", f"[[comparisons]] {c.id!r}: the previous results folder {folder} "
                       f"has anchor {found or 'none (not a finished, bound results folder)'}, not the registered "
                       f"{c.anchor}: it is not the run the comparison was registered against", field="anchor")
    return folder


def registered_comparisons(exp: Experiment, run_dir: Path, arms: list[str], judge: str, rubric: str | None,
                           points: tuple[int, ...], questions: dict[str, Question],
                           scores: dict[tuple[str, str], dict[str, Fraction]],
                           cells: list[Cell]) -> list[RunComparison] | None:
    """Each registered comparison whose arm this run ran; None when none is registered (the section is absent)."""
    if not exp.comparisons:
        return None
    return [decide_one(exp, c, run_dir, judge, rubric, points, questions, scores, cells)
            for c in exp.comparisons if c.arm in arms]


def unscored_rates(c: RegisteredComparison, previous: Path, cells: list[Cell]) -> dict[str, float]:
    """The share of each side's answers without a score: the previous folder's from its numbers.json (anchored with
    it), this run's from its cells; 1 for a side without the cell."""
    def rate(of: list[Cell], arm: str) -> float:
        return next((unscored_rate(x) for x in of if (x.arm, x.quant) == (arm, c.quant)), 1.0)
    return {"previous": rate(read_numbers(previous).cells, c.previous_arm), "this": rate(cells, c.arm)}


def decide_one(exp: Experiment, c: RegisteredComparison, run_dir: Path, judge: str, rubric: str | None,
               points: tuple[int, ...], questions: dict[str, Question], scores, cells: list[Cell]) -> RunComparison:
    folder = previous_folder(exp, c)
    previous = read_side(folder, c.previous_arm, c.quant)
    sha_of = {q.id: text_sha256(q) for q in questions.values()}
    mine = {sha_of[q]: s for q, s in scores.get((c.arm, c.quant), {}).items() if q in sha_of}
    this = Side(Path(run_dir), None, c.arm, c.quant, judge, rubric, points, exp.arm(c.arm).samples,
                {sha_of[q]: questions[q] for q in questions}, mine, exp)
    same_questions([previous, this])
    if previous.points != points:
        raise BadInput(previous.folder, f"its rubric's scale {list(previous.points)} is not this run's "
                       f"{list(points)}: [[comparisons]] {c.id!r} cannot pair scores on different scales",
                       field="judge.rubric")
    both = [sha for sha in this.questions if sha in previous.scores and sha in this.scores]
    ids = [this.questions[sha].id for sha in both]
    out = RunComparison(id=c.id, text=c.text, folder=c.folder, anchor=c.anchor, previous_arm=c.previous_arm,
                        arm=c.arm, quant=c.quant, kind=c.kind, margin=c.margin, alpha=c.alpha,
                        previous_judge=previous.judge, judge=judge, n=len(both), paired_questions=ids,
                        unscored_rate=unscored_rates(c, folder, cells), result=None,
                        calibration=None, cautions=cautions(previous, this), verdict="inconclusive",
                        reason=f"only {len(both)} question(s) scored in both runs")
    if len(both) < 2:
        return out
    scale = Scale(min(points), max(points), max(previous.samples, this.samples))
    d = decision([previous.scores[s] for s in both], [this.scores[s] for s in both], kind=c.kind, margin=c.margin,
                 alpha=c.alpha, scale=scale, cluster_of=cluster_of(ids, list(questions.values())),
                 settings=exp.analysis)
    out = replace(out, result=d.result, calibration=d.calibration, verdict=d.verdict, reason=d.reason)
    if max(out.unscored_rate.values()) > exp.analysis.max_unscored:
        who = ", ".join(f"{k} {v:.0%}" for k, v in out.unscored_rate.items())
        out = replace(out, verdict="inconclusive", reason=f"unscored or failed answers ({who}) exceed the registered "
                      f"{exp.analysis.max_unscored:.0%}; the statistic alone would say: {d.statistic.verdict}")
    return out
