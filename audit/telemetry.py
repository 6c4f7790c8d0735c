"""Reward-log telemetry: the questions docs/reward-telemetry.md asks of a training log, as plain functions over rows.

Every function returns JSON-ready numbers; the report and the charts are drawn from them only.
"""
from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Mapping

from core.errors import BadInput

from .log import Completion, Log

NUMBER_RE = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d])")
EQUAL = 1e-9  # rewards closer than this are "the same" (logged rewards are rounded floats)


@dataclass(frozen=True)
class Signatures:
    """Registered hack signatures (docs/reward-telemetry.md): which components are "form" and which "correctness"."""

    form: tuple[str, ...] = ()
    correctness: str | None = None
    high: float = 0.9  # form component at or above this ...
    low: float = 0.1  # ... while correctness is at or below this
    advantage_above: float = 1.0  # rewarded for being the least bad of its group


def _mean(xs: list[float]) -> float | None:
    return round(statistics.fmean(xs), 4) if xs else None


def value_of(row: Completion, name: str) -> float:
    return row.reward if name == "reward" else row.components[name]


def check_component(log: Log, name: str, option: str) -> str:
    if name != "reward" and name not in log.component_names:
        raise BadInput(option, f"{name!r} is not a component of {log.path.name}; "
                       f"components: {', '.join(log.component_names) or '(none)'}")
    return name


def step_means(log: Log) -> dict:
    """Mean of the total reward and of every component at every step (the component curves)."""
    by_step: dict[int, list[Completion]] = defaultdict(list)
    for r in log.rows:
        by_step[r.step].append(r)
    steps = sorted(by_step)
    names = ("reward", *log.component_names)
    return {"steps": steps, "means": {n: [_mean([value_of(r, n) for r in by_step[s]]) for s in steps] for n in names}}


def windows(log: Log, n: int | None) -> dict:
    """Means over the first n and the last n logged steps, with deltas (docs/motivating-experiment.md, section 5)."""
    steps = log.steps
    n = max(1, len(steps) // 5) if n is None else n
    if n < 1 or 2 * n > len(steps):
        raise BadInput("--window", f"must be between 1 and half the {len(steps)} logged steps, got {n}")
    first, last = set(steps[:n]), set(steps[-n:])
    rows = []
    for name in ("reward", *log.component_names):
        a = _mean([value_of(r, name) for r in log.rows if r.step in first])
        b = _mean([value_of(r, name) for r in log.rows if r.step in last])
        rows.append({"component": name, "first": a, "last": b, "delta": round(b - a, 4)})
    return {"n": n, "first_steps": [steps[0], steps[n - 1]], "last_steps": [steps[-n], steps[-1]], "rows": rows}


def zero_variance(log: Log) -> dict:
    """Groups (same step and prompt) whose completions all got the same reward: GRPO learns nothing there."""
    groups: dict[tuple[int, str], list[float]] = defaultdict(list)
    for r in log.rows:
        groups[(r.step, r.prompt_id)].append(r.reward)
    sized = {g: v for g, v in groups.items() if len(v) >= 2}
    flat = sorted(g for g, v in sized.items() if max(v) - min(v) <= EQUAL)
    per_step = Counter(s for s, _ in flat)
    return {"groups": len(sized), "singletons": len(groups) - len(sized), "zero_variance": len(flat),
            "share": round(len(flat) / len(sized), 4) if sized else None,
            "per_step": {str(s): per_step.get(s, 0) for s in log.steps},
            "list": [{"step": s, "prompt_id": p, "n": len(sized[(s, p)]), "reward": sized[(s, p)][0]} for s, p in flat]}


def parse_failures(log: Log, parse: Callable[[str], object], zero_of: str,
                   collapse: tuple[int, int] | None = None) -> dict:
    """Per step: completions the parse function rejects next to zero scores (the two rows in docs/reward-telemetry.md).

    A parse function fails by raising or by returning False. The collapse window is the run of
    consecutive steps with zero scores that holds the most of them, with one step either side for
    context, unless given.
    """
    per: dict[int, Counter] = defaultdict(Counter)
    errors: Counter = Counter()
    for r in log.rows:
        try:
            ok = parse(r.completion) is not False
        except Exception as e:  # the parse check is the user's: any exception is a parse failure
            ok = False
            errors[f"{type(e).__name__}: {str(e).split(':')[0]}"] += 1
        zero = abs(value_of(r, zero_of)) <= EQUAL
        c = per[r.step]
        c["n"] += 1
        c["parse_failures"] += not ok
        c["zero_scores"] += zero
        c["both"] += zero and not ok
        c["zero_parsed"] += zero and ok
        c["failed_nonzero"] += (not ok) and not zero
    steps = sorted(per)
    keys = ("n", "parse_failures", "zero_scores", "both", "zero_parsed", "failed_nonzero")
    per_step = [{"step": s, **{k: per[s][k] for k in keys}} for s in steps]
    totals = {k: sum(p[k] for p in per_step) for k in keys}
    window = _collapse_window(per_step, collapse)
    fails = totals["parse_failures"]
    return {
        "zero_of": zero_of, "per_step": per_step, "totals": totals,
        "identical_steps": sum(p["parse_failures"] == p["zero_scores"] for p in per_step), "steps": len(steps),
        "errors": [{"error": e, "count": n, "share": round(n / fails, 4)} for e, n in errors.most_common(5)],
        "window": window,
    }


def _collapse_window(per_step: list[dict], given: tuple[int, int] | None) -> dict | None:
    if given:
        idx = [i for i, p in enumerate(per_step) if given[0] <= p["step"] <= given[1]]
        if not idx:
            raise BadInput("--collapse", f"no logged step in {given[0]}-{given[1]}")
        how = "given"
    else:
        runs, cur = [], []
        for i, p in enumerate(per_step):
            if p["zero_scores"] and (not cur or per_step[cur[-1]]["step"] == p["step"] - 1):
                cur.append(i)
            else:
                if cur:
                    runs.append(cur)
                cur = [i] if p["zero_scores"] else []
        if cur:
            runs.append(cur)
        if not runs:
            return None
        best = max(runs, key=lambda run: (sum(per_step[i]["zero_scores"] for i in run), -run[0]))
        idx = list(range(max(0, best[0] - 1), min(len(per_step), best[-1] + 2)))
        how = "auto"
    rows = [per_step[i] for i in idx]
    return {"how": how, "steps": [p["step"] for p in rows], "parse_failures": [p["parse_failures"] for p in rows],
            "zero_scores": [p["zero_scores"] for p in rows],
            "identical": all(p["parse_failures"] == p["zero_scores"] for p in rows),
            "zeros_that_failed_parse": sum(p["both"] for p in rows), "zeros": sum(p["zero_scores"] for p in rows)}


def _flagged(rows: list[Completion], limit: int = 10) -> dict:
    prompts = Counter(r.prompt_id for r in rows)
    steps = Counter(r.step for r in rows)
    return {"count": len(rows), "steps": len(steps), "max_per_step": max(steps.values(), default=0),
            "top_prompts": [[p, n] for p, n in prompts.most_common(5)],
            "examples": [r.completion_id for r in rows[:limit]]}


def habitual_constant(rows: list[Completion]) -> dict:
    """The number the model states most often that its prompt did not give it (0.85 in docs/reward-telemetry.md)."""
    stated = Counter()
    with_number = 0
    for r in rows:
        own = set(NUMBER_RE.findall(r.completion)) - set(NUMBER_RE.findall(r.prompt))
        with_number += bool(own)
        stated.update(own)
    if not stated:
        return {"completions": len(rows), "stating_a_number": 0, "literal": None, "count": 0, "share": None}
    literal, count = min(stated.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"completions": len(rows), "stating_a_number": with_number, "literal": literal, "count": count,
            "share": round(count / with_number, 4)}


def signatures(log: Log, sig: Signatures) -> dict:
    """Hack signatures: form high while correctness is low; a habitual constant; advantage > x with low quality."""
    for name in sig.form:
        check_component(log, name, "--form")
    if sig.correctness:
        check_component(log, sig.correctness, "--correctness")
    out: dict = {"registered": {"form": list(sig.form), "correctness": sig.correctness, "high": sig.high,
                                "low": sig.low, "advantage_above": sig.advantage_above}}
    low = [r for r in log.rows if sig.correctness and value_of(r, sig.correctness) <= sig.low]
    hacked = [r for r in low if any(value_of(r, f) >= sig.high for f in sig.form)]
    out["form_high_correctness_low"] = _flagged(hacked) if sig.form and sig.correctness else None
    out["habitual_constant"] = {"all": habitual_constant(log.rows),
                                "low_correctness": habitual_constant(low) if sig.correctness else None,
                                "form_high_correctness_low": habitual_constant(hacked) if sig.form and sig.correctness
                                else None}
    has_adv = any(r.advantage is not None for r in log.rows)
    out["advantage_low_quality"] = (
        _flagged([r for r in low if r.advantage is not None and r.advantage > sig.advantage_above])
        if sig.correctness and has_adv else None)
    out["advantage_logged"] = has_adv
    return out


def fidelity(log: Log, regrade: Callable, spec: str, tolerance: float) -> dict:
    """Re-grade stored completions with the user's reward function; the largest drift from the log.

    The function takes a Completion and returns the total reward (a number) or a mapping of
    component names (and optionally "reward") to numbers; every returned value is compared.
    """
    drift: dict[str, float] = {}
    worst = (0.0, None, None)
    over = 0
    for r in log.rows:
        try:
            got = regrade(r)
        except Exception as e:  # the user's function failed on this row: bad input, named
            raise BadInput(spec, f"raised {type(e).__name__}: {e}", line=r.line, field="--regrade") from None
        got = {"reward": got} if isinstance(got, (int, float)) and not isinstance(got, bool) else got
        if not isinstance(got, Mapping) or not got:
            raise BadInput(spec, f"must return a number or a mapping of components, got {got!r}", line=r.line)
        row_over = False
        for name, value in got.items():
            if name != "reward" and name not in r.components:
                raise BadInput(spec, f"returned {name!r}, which the log does not hold", line=r.line, field=name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise BadInput(spec, f"returned a non-number {value!r}", line=r.line, field=name)
            d = abs(float(value) - value_of(r, name))
            drift[name] = max(drift.get(name, 0.0), d)
            row_over |= d > tolerance
            if d > worst[0]:
                worst = (d, r.completion_id, name)
        over += row_over
    return {"function": spec, "tolerance": tolerance, "rows": len(log.rows), "max_drift": worst[0],
            "max_drift_at": {"completion_id": worst[1], "field": worst[2]} if worst[1] else None,
            "by_field": drift, "rows_over_tolerance": over, "passed": worst[0] <= tolerance}
