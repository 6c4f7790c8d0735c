"""PNG plots beside report.md, drawn from numbers.json only: a forest plot and score distributions."""
from __future__ import annotations

from pathlib import Path

from core.records import Numbers

PLOTS = {"forest": "plots/forest.png", "scores": "plots/scores.png"}


def write_plots(numbers: Numbers, run_dir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (run_dir / "plots").mkdir(exist_ok=True)
    meta = {"Software": None}  # no version/date stamps: the same numbers give the same bytes

    rows = [(c.id, c.result, c.margin, False) for c in numbers.comparisons]
    rows += [(s.id, s.result, None, True) for s in numbers.subsets]
    rows = [r for r in rows if r[1] is not None]
    fig, ax = plt.subplots(figsize=(7, 0.45 * max(len(rows), 2) + 1.2))
    for i, (_name, r, margin, secondary) in enumerate(reversed(rows)):
        color = "0.55" if secondary else "C0"
        ax.plot([r.ci_low, r.ci_high], [i, i], color=color, lw=2)
        ax.plot(r.diff, i, "o", color=color)
        if margin:
            ax.plot(-margin, i, "|", color="C3", ms=14, mew=2)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)], fontsize=8)
    ax.set_xlabel("mean difference b − a with CI · red tick: −margin · grey: secondary")
    fig.tight_layout()
    fig.savefig(run_dir / PLOTS["forest"], metadata=meta)
    plt.close(fig)

    cells = numbers.cells
    fig, ax = plt.subplots(figsize=(7, 0.4 * max(len(cells), 2) + 1.2))
    scale = list(cells[0].score_counts) if cells else []
    for i, c in enumerate(reversed(cells)):
        total = sum(c.score_counts.values()) + c.unscored + c.judge_errors + c.answer_errors
        left = 0.0
        for j, v in enumerate(scale):
            share = c.score_counts[v] / total if total else 0
            ax.barh(i, share, left=left, color=f"C{j}", label=f"score {v}" if i == 0 else None)
            left += share
        ax.barh(i, 1 - left if total else 0, left=left, color="0.85", label="no verdict" if i == 0 else None)
    ax.set_yticks(range(len(cells)), [f"{c.arm} {c.quant}" for c in reversed(cells)], fontsize=8)
    ax.set_xlabel("share of answers")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(run_dir / PLOTS["scores"], metadata=meta)
    plt.close(fig)
    return dict(PLOTS)
