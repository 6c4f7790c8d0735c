"""verify's second path, the comparisons with previous runs ([[comparisons]], numbers.json's `run_comparisons`)
recomputed by its own code: each folder's current verdicts read by hand (raw_files), each question's mean over its
scored samples, the questions matched by the sha256 of their text, and the comparison decided again by this path's
`comparison` and `verdict` (decisions). The previous folder's anchor is checked apart (judge.verify.previous_runs);
here it is read as it is now."""
from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

from core import jsonl
from registration.prereg import Experiment, load_experiment
from registration.questions import load_questions

from .decisions import comparison, rubric_scale, verdict
from .raw_files import by_hand, kind_of


def _means(folder: Path, judge: str, arm: str, quant: str) -> dict[str, Fraction]:
    """question id -> the judge's mean score of (arm, quant) over the question's scored samples, exact."""
    keys = {r["label"]: r for _, r in jsonl.read(folder / "blinding.jsonl") if r.get("type") == "blinding"}
    per: dict[str, list[int]] = defaultdict(list)
    for j in by_hand(folder / "judgments.jsonl", ("judge", "label")).last.values():
        k = keys.get(j["label"])
        if (j["judge"] == judge and kind_of(j) == "single" and j["status"] == "scored" and k
                and (k["arm"], k["quant"]) == (arm, quant)):
            per[k["question_id"]].append(j["score"])
    return {q: Fraction(sum(v), len(v)) for q, v in per.items()}


def _text_sha(exp: Experiment, ids: list[str]) -> dict[str, str]:
    """question id -> the sha256 of its text, for the run's questions."""
    wanted = set(ids)
    return {q.id: hashlib.sha256(q.question.encode("utf-8")).hexdigest()
            for q in load_questions(exp.set_paths(), exp.set_formats_by_path()) if q.id in wanted}


def _rate(cells: list[dict], arm: str, quant: str) -> float:
    """(answer errors + unscored + judge errors) / answers of the cell; 1 without the cell or an answer."""
    c = next((x for x in cells if (x["arm"], x["quant"]) == (arm, quant)), None)
    if not c or not c["answers"]:
        return 1.0
    return (c["answer_errors"] + c["unscored"] + c["judge_errors"]) / c["answers"]


def recompute(numbers: dict, run: dict, run_dir: Path, exp: Experiment, clusters: dict[str, str | None],
              cells: list[dict]) -> list[dict[str, Any]]:
    """Each comparison with a previous run: its paired questions, result (the fields numbers.json holds), the share of
    each side's answers without a score (this run's from this path's `cells`, the previous run's from its
    numbers.json, anchored with it) and verdict."""
    stored = {c["id"]: c for c in numbers.get("run_comparisons") or []}
    mine = _text_sha(exp, run["question_ids"])
    lo, hi = min(rubric_scale(exp)), max(rubric_scale(exp))
    an, out = run["analysis"], []
    for c in (c for c in exp.comparisons if c.arm in run["arms"]):
        folder = c.folder_path(exp.dir)
        prev_run = json.loads((folder / "run.json").read_text())
        prev_exp = load_experiment(Path(prev_run["experiment_dir"]))
        theirs = {sha: q for q, sha in _text_sha(prev_exp, prev_run["question_ids"]).items()}
        a_m = _means(folder, prev_run["judge"]["primary"], c.previous_arm, c.quant)
        b_m = _means(Path(run_dir), run["judge"]["primary"], c.arm, c.quant)
        ids = [q for q in run["question_ids"] if q in b_m and theirs.get(mine.get(q)) in a_m]
        rates = {"previous": _rate(json.loads((folder / "numbers.json").read_text())["cells"], c.previous_arm,
                                   c.quant), "this": _rate(cells, c.arm, c.quant)}
        entry: dict[str, Any] = {"id": c.id, "n": len(ids), "paired_questions": ids, "unscored_rate": rates,
                                 "verdict": "inconclusive"}
        if len(ids) >= 2:
            labels = ([("cluster", clusters[q]) if clusters[q] else ("question", q) for q in ids]
                      if any(clusters[q] for q in ids) else None)
            k = max(prev_exp.arm(c.previous_arm).samples, exp.arm(c.arm).samples)
            chk = comparison([a_m[theirs[mine[q]]] for q in ids], [b_m[q] for q in ids], alpha=c.alpha,
                             margin=c.margin, rule=exp.analysis.rule, method=an["method"],
                             resamples=an["resamples"], seed=an["seed"], scale=(lo, hi, k), labels=labels)
            entry["result"] = {k: v for k, v in chk.items() if k in ((stored.get(c.id) or {}).get("result") or {})}
            registered = len({clusters[q] for q in ids if clusters[q]})
            too_few = labels is not None and registered < exp.analysis.min_clusters
            missing = max(rates.values()) > an["max_unscored"]
            entry["verdict"] = "inconclusive" if too_few or missing else verdict(c.kind, c.margin, chk)
        out.append(entry)
    return out
