"""`python -m audit rewards FILE`: reward-log telemetry, written as numbers.json, report.md and PNG charts.

No curve shows a parse-failure collapse or a hack signature (docs/reward-telemetry.md); these tables put the
completions' own properties next to their scores. report.md and the charts are rendered from
numbers.json alone. The fidelity gate (re-grading stored completions) is the one check that can
fail the command: exit 1 when the re-graded rewards drift from the logged ones beyond tolerance.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from core.atomic import write_text

from .charts import write_charts
from .hooks import load_function
from .log import Columns, read_log
from .telemetry import (
    Signatures,
    check_component,
    fidelity,
    parse_failures,
    signatures,
    step_means,
    windows,
    zero_variance,
)

DEFAULT_PARSE = "audit.hooks:parse_json"


@dataclass(frozen=True)
class Settings:
    window: int | None = None  # steps per window; default a fifth of the logged steps
    parse: str = DEFAULT_PARSE
    zero_of: str = "reward"  # the score whose zeros are counted: the total or one component
    collapse: tuple[int, int] | None = None
    signatures: Signatures = Signatures()
    regrade: str | None = None
    tolerance: float = 1e-6


def telemetry(log_path: Path, out_dir: Path, settings: Settings = Settings(), columns: Columns | None = None) -> dict:
    log = read_log(log_path, columns)
    check_component(log, settings.zero_of, "--zero-of")
    numbers = {
        "input": {"path": str(log.path), "sha256": log.sha256, "format": log.format, "rows": len(log.rows),
                  "steps": len(log.steps), "components": list(log.component_names), "columns": log.columns.as_dict()},
        "settings": {**asdict(settings), "collapse": list(settings.collapse) if settings.collapse else None},
        "windows": windows(log, settings.window),
        "step_means": step_means(log),
        "zero_variance": zero_variance(log),
        "parse": {"function": settings.parse,
                  **parse_failures(log, load_function(settings.parse, "--parse"), settings.zero_of, settings.collapse)},
        "signatures": signatures(log, settings.signatures),
        "fidelity": (fidelity(log, load_function(settings.regrade, "--regrade"), settings.regrade, settings.tolerance)
                     if settings.regrade else None),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    numbers["charts"] = write_charts(numbers, out_dir)
    write_text(out_dir / "numbers.json", json.dumps(numbers, indent=1) + "\n")
    write_text(out_dir / "report.md", render(numbers))
    return numbers


def _f(x: float | None, signed: bool = False) -> str:
    return "–" if x is None else (f"{x:+.3f}" if signed else f"{x:.3f}")


def render(n: dict) -> str:
    i, w, z, p, s, fd = n["input"], n["windows"], n["zero_variance"], n["parse"], n["signatures"], n["fidelity"]
    out = [f"# Reward-log telemetry: `{Path(i['path']).name}`", "",
           f"{i['rows']} completions over {i['steps']} steps ({i['format']}, sha256 `{i['sha256'][:16]}…`); "
           f"components: {', '.join(i['components']) or 'none logged'}. Every number is in `numbers.json`.", ""]
    a, b = w["first_steps"], w["last_steps"]
    out += ["## Component means: first vs last steps", "",
            f"| Reward component | Steps {a[0]}–{a[1]} | Steps {b[0]}–{b[1]} | Δ |", "|---|---|---|---|"]
    out += [f"| {r['component']} | {_f(r['first'])} | {_f(r['last'])} | {_f(r['delta'], True)} |" for r in w["rows"]]
    out += ["", f"![component curves]({n['charts']['components']})", "",
            "## Zero-variance groups", "",
            f"{z['zero_variance']} of {z['groups']} groups (same step and prompt) gave every completion the same reward"
            + (f" ({z['share']:.1%})" if z["share"] is not None else "")
            + ": GRPO's advantage is zero there and the step teaches nothing about that prompt.", ""]
    if z["list"]:
        out += ["| step | prompt | completions | reward |", "|---|---|---|---|"]
        out += [f"| {g['step']} | {g['prompt_id']} | {g['n']} | {g['reward']:.3f} |" for g in z["list"][:20]]
        if len(z["list"]) > 20:
            out.append(f"| … | {len(z['list']) - 20} more in numbers.json | | |")
        out.append("")
    t = p["totals"]
    out += ["## Parse failures next to zero scores", "",
            f"Parse check `{p['function']}` on every completion; zero scores of `{p['zero_of']}`. "
            f"{t['parse_failures']} of {t['n']} completions fail to parse and {t['zero_scores']} score zero; "
            f"{t['both']} do both. Per-step counts are identical in {p['identical_steps']} of {p['steps']} steps.", ""]
    win = p["window"]
    if win:
        how = "the longest run of steps with zero scores, ±1 step" if win["how"] == "auto" else "as given"
        out += [f"Collapse window ({how}):", "",
                "| step | " + " | ".join(str(x) for x in win["steps"]) + " |",
                "|---|" + "---|" * len(win["steps"]),
                "| parse failures | " + " | ".join(str(x) for x in win["parse_failures"]) + " |",
                "| zero scores | " + " | ".join(str(x) for x in win["zero_scores"]) + " |", "",
                f"{win['zeros_that_failed_parse']} of the window's {win['zeros']} zeros are parse failures"
                + (" — identical, step by step." if win["identical"] else "."), ""]
    else:
        out += ["No zero scores: no collapse window.", ""]
    if p["errors"]:
        out += ["Most common parse errors: " + "; ".join(f"{e['error']} ({e['share']:.0%})" for e in p["errors"]), ""]
    out += [f"![parse failures and zero scores]({n['charts']['collapse']})", "", "## Hack signatures", ""]
    reg = s["registered"]
    fh = s["form_high_correctness_low"]
    if fh is None:
        out += ["Form high while correctness low: not registered (give `--form` and `--correctness`).", ""]
    else:
        out += [f"Form ({', '.join(reg['form'])}) ≥ {reg['high']} while {reg['correctness']} ≤ {reg['low']}: "
                f"**{fh['count']}** completions over {fh['steps']} steps (at most {fh['max_per_step']} in one step)"
                + _prompts(fh), ""]
    out += ["Habitual constant (the number stated most often that the prompt did not give):", "",
            "| completions | stating a number | most common | count | share |", "|---|---|---|---|---|"]
    for key, h in s["habitual_constant"].items():
        if h is not None:
            out.append(f"| {key.replace('_', ' ')} ({h['completions']}) | {h['stating_a_number']} | "
                       f"{h['literal'] or '–'} | {h['count']} | {_f(h['share'])} |")
    out.append("")
    adv = s["advantage_low_quality"]
    if adv is None:
        why = "no advantage column in the log" if not s["advantage_logged"] else "no `--correctness` registered"
        out += [f"Advantage above {reg['advantage_above']} with low quality: not computed ({why}).", ""]
    else:
        out += [f"Advantage > {reg['advantage_above']} while {reg['correctness']} ≤ {reg['low']} (rewarded for being "
                f"the least bad of the group): **{adv['count']}** completions" + _prompts(adv), ""]
    out += ["## Fidelity gate", ""]
    if fd is None:
        out += ["Not run (give `--regrade module:function` to re-grade the stored completions).", ""]
    else:
        at = fd["max_drift_at"]
        out += [f"Re-graded {fd['rows']} completions with `{fd['function']}`: max drift **{fd['max_drift']:.3g}** "
                + (f"(at {at['completion_id']}, {at['field']}) " if at else "")
                + f"against tolerance {fd['tolerance']:g}; {fd['rows_over_tolerance']} rows over. "
                f"**{'PASS' if fd['passed'] else 'FAILED'}**.", "",
                "| field | max drift |", "|---|---|"]
        out += [f"| {k} | {v:.3g} |" for k, v in fd["by_field"].items()]
        out.append("")
    return "\n".join(out)


def _prompts(flagged: dict) -> str:
    if not flagged["top_prompts"]:
        return "."
    return "; most often prompts " + ", ".join(f"{p} ({k})" for p, k in flagged["top_prompts"][:3]) + "."
