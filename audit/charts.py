"""PNG charts of `audit rewards`, drawn from its numbers only: component curves and the collapse window."""
from __future__ import annotations

from pathlib import Path

CHARTS = {"components": "components.png", "collapse": "collapse.png"}


def write_charts(numbers: dict, out_dir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta = {"Software": None}  # no version stamp: the same numbers give the same bytes
    curves = numbers["step_means"]
    steps = curves["steps"]
    w = numbers["windows"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, height_ratios=(1, 2))
    top.plot(steps, curves["means"]["reward"], color="k", lw=1.5)
    top.set_ylabel("total reward")
    for name, ys in curves["means"].items():
        if name != "reward":
            bottom.plot(steps, ys, lw=1.2, label=name)
    for ax in (top, bottom):
        for lo, hi in (w["first_steps"], w["last_steps"]):
            ax.axvspan(lo - 0.5, hi + 0.5, color="0.9", zorder=0)
    if len(curves["means"]) > 1:
        bottom.legend(fontsize=8, ncol=2)
    bottom.set_ylabel("component mean")
    bottom.set_xlabel("step (grey: the compared windows)")
    fig.tight_layout()
    fig.savefig(out_dir / CHARTS["components"], metadata=meta)
    plt.close(fig)

    p = numbers["parse"]
    xs = [r["step"] for r in p["per_step"]]
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar([x - 0.2 for x in xs], [r["parse_failures"] for r in p["per_step"]], width=0.4, label="parse failures")
    ax.bar([x + 0.2 for x in xs], [r["zero_scores"] for r in p["per_step"]], width=0.4,
           label=f"zero {p['zero_of']}")
    if p["window"]:
        ax.axvspan(p["window"]["steps"][0] - 0.5, p["window"]["steps"][-1] + 0.5, color="C3", alpha=0.12,
                   label=f"collapse window ({p['window']['how']})")
    ax.set_xlabel("step")
    ax.set_ylabel("completions")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / CHARTS["collapse"], metadata=meta)
    plt.close(fig)
    return dict(CHARTS)
