"""`python -m judge verify RESULTS_DIR`: adversarial recomputation from the raw files alone.

Three checks, each naming what no longer matches:
1. the seal of the experiment and the sha256 of every raw file numbers.json was computed from;
2. every number in numbers.json, recomputed twice: by the main analysis and by a separate,
   plain-Python path (own loops for means and counts; stats.check_paired for the bootstrap on
   the same resample indices; its own decision rule);
3. report.md, re-rendered from the verified numbers and compared line by line.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from arms import jsonl
from arms.errors import BadInput
from arms.questions import load_questions

from . import stats
from .analysis import RAW_FILES, compute_numbers, late_amendments, raw_sha256
from .prereg import load_experiment
from .report import render
from .seal import verify_seal

TOL = 1e-9


def _leaves(x: Any, path: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(x, list) and x and all(isinstance(v, dict) and ("arm" in v or "id" in v) for v in x):
        out = {}
        for v in x:
            key = v.get("id") or f"{v['arm']}/{v['quant']}"
            out.update(_leaves(v, f"{path}[{key}]"))
        return out
    return {path: x}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        if isinstance(a, bool) or isinstance(b, bool):
            return a == b
        return math.isclose(float(a), float(b), rel_tol=TOL, abs_tol=TOL)
    return a == b


def diff_numbers(stored: dict, recomputed: dict, label: str) -> list[str]:
    s, r = _leaves(stored), _leaves(recomputed)
    out = []
    for k in sorted(set(s) | set(r)):
        if k not in r:
            out.append(f"numbers.json {k} = {s[k]!r}: not produced by the {label}")
        elif k not in s:
            out.append(f"numbers.json is missing {k} (the {label} gives {r[k]!r})")
        elif not _same(s[k], r[k]):
            out.append(f"numbers.json {k} = {s[k]!r}, but the {label} gives {r[k]!r}")
    return out


def _clustered_se(d: list[float], labels: list[str]) -> float | None:
    if len(set(labels)) == len(labels):
        return None
    mean = math.fsum(d) / len(d)
    sums: dict[str, float] = defaultdict(float)
    for x, c in zip(d, labels):
        sums[c] += x - mean
    return math.sqrt(math.fsum(v * v for v in sums.values())) / len(d)


def independent(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                clusters: dict[str, str]) -> dict:
    """Recompute the numeric heart of numbers.json with plain loops (no judge.analysis code)."""
    keys = {r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
    judge, rubric = run["judge"]["primary"], run["judge"]["rubric"]
    per: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    status: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for _, j in jsonl.read(run_dir / "judgments.jsonl"):
        if j["judge"] != judge or j.get("rubric", "correctness") != rubric:
            continue
        k = keys[j["label"]]
        cell = (k["arm"], k["quant"])
        status[cell][j["status"]] += 1
        if j["status"] == "scored":
            per[cell][k["question_id"]].append(j["score"])
            counts[cell][str(j["score"])] += 1
            status[cell]["harmful"] += (j.get("fields") or {}).get("harmful") is True
    answers = defaultdict(lambda: defaultdict(int))
    for _, a in jsonl.read(run_dir / "answers.jsonl"):
        if a["arm"] in run["arms"] and a["question_id"] in questions:
            answers[(a["arm"], a["quant"])]["n"] += 1
            answers[(a["arm"], a["quant"])]["error"] += a["status"] == "error"
    qmeans = {cell: {q: sum(v) / len(v) for q, v in qs.items()} for cell, qs in per.items()}
    out: dict[str, Any] = {"cells": [], "comparisons": []}
    for c in numbers["cells"]:
        cell = (c["arm"], c["quant"])
        m = qmeans.get(cell, {})
        out["cells"].append({"arm": c["arm"], "quant": c["quant"], "answers": answers[cell]["n"],
                             "answer_errors": answers[cell]["error"], "scored": status[cell]["scored"],
                             "unscored": status[cell]["unscored"], "judge_errors": status[cell]["error"],
                             "harmful": status[cell]["harmful"], "questions_scored": len(m),
                             "score_counts": {v: counts[cell][v] for v in c["score_counts"]},
                             "mean": (math.fsum(m.values()) / len(m)) if m else None})
    an = run["analysis"]

    def check(a_m: dict, b_m: dict, ids: list[str], alpha: float, margin: float) -> dict | None:
        if len(ids) < 2:
            return None
        a, b = [a_m[q] for q in ids], [b_m[q] for q in ids]
        res = stats.resample_counts([y - x for x, y in zip(a, b)], an["resamples"], an["seed"])
        return stats.check_paired(a, b, res, an["method"], alpha, margin=margin)

    for s in numbers["subsets"]:
        h = next(h for h in exp.hypotheses if h.id == s["hypothesis"])
        a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
        tags = sorted({t for q, ts in questions.items() if all(x in ts for x in h.subset) for t in ts} - set(h.subset))
        ids = [q for q, ts in questions.items() if all(x in ts for x in h.subset) and s["tag"] in ts
               and q in a_m and q in b_m]
        chk = check(a_m, b_m, ids, h.alpha / len(tags), h.margin)
        out.setdefault("subsets", []).append({"id": s["id"], "tests": len(tags), "paired_questions": ids,
                                              "result": chk and {k: v for k, v in chk.items() if k in (s["result"] or chk)}})
    for c in numbers["comparisons"]:
        h = next(h for h in exp.hypotheses if h.id == c["id"])
        a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
        ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a_m and q in b_m]
        entry: dict[str, Any] = {"id": h.id, "paired_questions": ids}
        if len(ids) >= 2:
            chk = check(a_m, b_m, ids, h.alpha, h.margin)
            entry["result"] = {k: v for k, v in chk.items() if k in (c.get("result") or {})}
            entry["clustered_se"] = _clustered_se([b_m[q] - a_m[q] for q in ids], [clusters[q] for q in ids])
            bound = chk["bound"]
            rates = []
            for arm in (h.a, h.b):
                cc = next(x for x in out["cells"] if x["arm"] == arm and x["quant"] == h.quant)
                miss = cc["answer_errors"] + cc["unscored"] + cc["judge_errors"]
                rates.append(miss / cc["answers"] if cc["answers"] else 1.0)
            if max(rates) > an["max_unscored"]:
                entry["verdict"] = "inconclusive"
            elif h.kind == "equivalence":
                lo, hi = chk["ci_low"], chk["ci_high"]
                entry["verdict"] = ("equivalent" if lo > -h.margin and hi < h.margin else
                                    "not equivalent" if lo >= h.margin or hi <= -h.margin else "inconclusive")
            elif bound > 0:
                entry["verdict"] = "superior"
            elif h.kind == "non_inferiority" and bound > -h.margin:
                entry["verdict"] = "non-inferior"
            else:
                entry["verdict"] = "not shown"
        else:
            entry["verdict"] = "inconclusive"
        out["comparisons"].append(entry)
    return out


def _subset_of(stored: dict, independent_numbers: dict) -> dict:
    """The stored numbers restricted to the fields the independent path recomputes."""
    def restrict(s: Any, r: Any) -> Any:
        if isinstance(r, dict):
            return {k: restrict(s.get(k) if isinstance(s, dict) else None, v) for k, v in r.items()}
        if isinstance(r, list) and r and isinstance(r[0], dict):
            key = (lambda v: v.get("id") or f"{v.get('arm')}/{v.get('quant')}")
            by = {key(v): v for v in (s or [])}
            return [restrict(by.get(key(v), {}), v) for v in r]
        return s
    return restrict(stored, independent_numbers)


def verify(run_dir: Path, exp_dir: Path | None = None) -> list[str]:
    run_dir = Path(run_dir)
    for name in ("run.json", "numbers.json", "report.md", *RAW_FILES):
        if not (run_dir / name).exists():
            raise BadInput(run_dir / name, "missing: not a finished results folder")
    try:
        run = json.loads((run_dir / "run.json").read_text())
        numbers = json.loads((run_dir / "numbers.json").read_text())
    except json.JSONDecodeError as e:
        raise BadInput(run_dir / "numbers.json", f"not valid JSON: {e}") from None
    exp_dir = Path(exp_dir or run["experiment_dir"])
    problems: list[str] = []
    try:
        verify_seal(exp_dir)
    except BadInput as e:
        problems.append(f"seal: {e}")
        return problems
    exp = load_experiment(exp_dir)
    for name, sha in raw_sha256(run_dir).items():
        if numbers.get("raw_sha256", {}).get(name) != sha:
            problems.append(f"raw file {name}: sha256 {sha[:12]}… differs from the one numbers.json was computed "
                            f"from ({str(numbers.get('raw_sha256', {}).get(name))[:12]}…)")
    all_q = load_questions(exp.set_paths())
    wanted = set(run["question_ids"])
    questions = {q.id: list(q.tags) for q in all_q if q.id in wanted}
    clusters = {q.id: q.cluster or q.id for q in all_q}
    main = compute_numbers(exp, all_q, run_dir, run)
    problems += diff_numbers(numbers, main, "recomputation from raw files")
    for a in late_amendments(main):
        problems.append(f"amendment {a['n']} ({a['date']}) is dated after the first judgment of this run and is "
                        "not marked post hoc")
    ind = independent(numbers, run, run_dir, questions, exp, clusters)
    problems += diff_numbers(_subset_of(numbers, ind), ind, "independent plain-Python recomputation")
    expected = render(numbers, run).splitlines()
    actual = (run_dir / "report.md").read_text().splitlines()
    for i in range(max(len(expected), len(actual))):
        e = expected[i] if i < len(expected) else "<missing>"
        a = actual[i] if i < len(actual) else "<missing>"
        if e != a:
            problems.append(f"report.md line {i + 1}: reads {a!r}, numbers.json renders {e!r}")
    return list(dict.fromkeys(problems))
