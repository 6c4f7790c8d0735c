"""`python -m judge compare`: an arm of one run beside an arm of another, and the history of one arm over runs.

Checkpoint after checkpoint is evaluated in its own results folder; this puts two of them side by side. Questions
are matched by the sha256 of their text, never by id alone: a set whose question `q7` was reworded between runs is
not the same exam, and a run over another set is not comparable. Any question that is not in both runs with the
same text is bad input naming it (exit 2). Scores are the primary judge's, each question's mean over its scored
samples, exact; the paired statistics are the ones a registered hypothesis is decided by (judge.numbers.stats.paired,
with the later run's registered [analysis] settings and clusters), at 95% two-sided. Nothing here was registered, so
nothing is decided: the table is labelled exploratory, and a comparison made after seeing both runs is a look, not a
test (its registered form is [[comparisons]]: judge.numbers.registered_comparisons). A different judge, rubric
or scale on the two sides is named above the table.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import BadInput
from core.records import Result

from ..numbers.comparisons import cluster_labels
from ..numbers.matched import Side, cautions, same_questions
from ..numbers.stats.bootstrap import bootstrap_means, percentile_interval, resample_indices
from ..numbers.stats.paired import paired
from ..numbers.stats.rule import Scale
from ..results.files import RUN

ALPHA = 0.025  # one-sided: the two-sided interval is 95%


def compare_sides(a: Side, b: Side) -> Result:
    """b against a on the questions both scored (d = b - a), with b's registered [analysis] settings."""
    same_questions([a, b])
    if a.points != b.points:
        raise BadInput(b.folder / RUN, f"its rubric's scale {list(b.points)} is not {a.folder}'s "
                       f"{list(a.points)}: scores on different scales cannot be paired", field="judge.rubric")
    both = [sha for sha in a.questions if sha in a.scores and sha in b.scores]
    if len(both) < 2:
        raise BadInput(b.folder, f"only {len(both)} question(s) are scored in both runs: nothing to compare")
    qs = [b.questions[sha] for sha in both]
    an = b.exp.analysis
    scale = Scale(min(a.points), max(a.points), max(a.samples, b.samples))
    return paired([a.scores[s] for s in both], [b.scores[s] for s in both], resamples=an.resamples, seed=an.seed,
                  method=an.method, alpha=ALPHA, clusters=cluster_labels([q.id for q in qs], qs), rule=an.rule,
                  scale=scale)


def _name(s: Side) -> str:
    return f"{s.folder.name}: {s.arm} {s.quant}"


def render_comparison(a: Side, b: Side, p: Result) -> str:
    lines = [f"# Comparison (exploratory): {_name(b)} against {_name(a)}", "",
             "Not registered: this compares two finished runs and decides nothing. Questions are matched by the "
             "sha256 of their text.", ""]
    lines += [f"> Caution: {c}." for c in cautions(a, b)] + ([""] if cautions(a, b) else [])
    lines += ["| side | folder | anchor | arm | quant | judge | mean |", "|---|---|---|---|---|---|---|",
              f"| A | {a.folder} | {(a.anchor or 'none')[:16]} | {a.arm} | {a.quant} | {a.judge} | {p.mean_a:.3f} |",
              f"| B | {b.folder} | {(b.anchor or 'none')[:16]} | {b.arm} | {b.quant} | {b.judge} | {p.mean_b:.3f} |",
              "", "| questions | B − A | 95% interval | paired-t 95% | B better | A better | ties | sign p |",
              "|---|---|---|---|---|---|---|---|",
              f"| {p.n} | {p.diff:+.3f} | [{p.ci_low:+.3f}, {p.ci_high:+.3f}] | [{p.t_low:+.3f}, {p.t_high:+.3f}] "
              f"| {p.up} | {p.down} | {p.ties} | {p.sign_p:.3g} |", "",
              f"The interval is a {p.method} bootstrap over {p.units} resampled {p.resampling} ({p.resamples} "
              f"resamples, seed {p.seed}), B's registered settings. To decide a comparison, register it in "
              "prereg.toml's [[comparisons]] (naming A's folder by its anchor) before the next run."]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Point:
    """One run of the history: the arm's mean score and its 95% bootstrap interval over questions."""

    folder: Path
    anchor: str | None
    n: int
    mean: float
    low: float
    high: float


def history(sides: list[Side]) -> list[Point]:
    """Each run's mean over the questions it scored, with a percentile bootstrap over them (its [analysis] seed
    and resamples). Every run must hold the first run's questions, by text."""
    same_questions(sides)
    out = []
    for s in sides:
        x = np.array([float(v) for v in s.scores.values()])
        if x.size < 2:
            raise BadInput(s.folder, f"arm {s.arm} {s.quant} has {x.size} scored question(s): no interval")
        an = s.exp.analysis
        boot = bootstrap_means(x, resample_indices(x.size, an.resamples, an.seed))
        low, high = percentile_interval(boot, 1 - 2 * ALPHA)
        out.append(Point(s.folder, s.anchor, int(x.size), float(x.mean()), float(low), float(high)))
    return out


def render_history(sides: list[Side], points: list[Point]) -> str:
    s0 = sides[0]
    lines = [f"# History (exploratory): {s0.arm} {s0.quant} over {len(points)} runs", "",
             "Each run's mean score with a 95% percentile bootstrap interval over its questions (matched by text).",
             "", "| run | folder | anchor | judge | questions | mean | 95% interval |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {i} | {p.folder} | {(p.anchor or 'none')[:16]} | {s.judge} | {p.n} | {p.mean:.3f} | "
              f"[{p.low:.3f}, {p.high:.3f}] |" for i, (s, p) in enumerate(zip(sides, points, strict=True), 1)]
    return "\n".join(lines) + "\n"


def plot_history(points: list[Point], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4, 1 + 0.8 * len(points)), 3.2))
    xs = range(1, len(points) + 1)
    below, above = [p.mean - p.low for p in points], [p.high - p.mean for p in points]
    ax.errorbar(xs, [p.mean for p in points], yerr=[below, above], fmt="o-", capsize=4)
    ax.set_xticks(list(xs), [p.folder.name for p in points], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("mean score (95% interval)")
    fig.tight_layout()
    fig.savefig(out, metadata={"Software": None})
    plt.close(fig)
