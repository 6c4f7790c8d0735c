"""`python -m judge verify RESULTS_DIR`: adversarial recomputation from the raw files alone.

Four checks, each naming what no longer matches:
1. the seal of the experiment; every sha256 the folder records (binding.json's registration, run.json's hashes)
   against the experiment folder; run.json's registered part (scope, judges, settings: judge.runinfo) against
   binding.json and the registration, whose values every later check uses instead of run.json's; and the sha256 of
   every raw file numbers.json was computed from;
2. every number in numbers.json, recomputed twice: by the main analysis and by a separate, plain-Python path
   (own loops for means and counts here; exact per-question means; every statistic by judge.second_path, which
   imports nothing of the main path's decision code: the bootstrap, or cluster bootstrap, on the same resamples
   drawn again in exact Fractions, its own implementation of the score rule, its own verdicts; here the count of
   registered clusters and the calibration ceiling). Decisions are recomputed with the rule the registration names
   (the default when it names none), never with one recorded in the folder. The calibration itself (thousands of
   simulated decisions) is recomputed from that path's own inputs by judge.stats.calibration, seeded, and the
   power figures (mde, n_for_margin) by the main path only;
3. report.md, re-rendered from the verified numbers and compared line by line;
4. the raw files themselves, re-derived from the rawest evidence they hold, and checked complete against the
   scope binding.json registered (judge.rederive), against the call caches the verifier names or its own
   environment's, never a location the folder names.
The anchor (judge.analysis.anchor) is returned to be printed, and compared with one a reviewer recorded.
A list in numbers.json whose entries repeat a name (two comparisons with one id) is a finding, and
each entry is compared on its own, so a second entry cannot hide an edit to the first.
The retry rule of answers.jsonl and judgments.jsonl (a key's last record is its current one; every
earlier record of the key is an `error` superseded by the next, whose `retry_of` is its line) is
read by hand here, not through core.jsonl.current, and checked: a duplicate that is not a retry of
an error is a finding naming file, line and field, and the main path must refuse the same file.
A raw record that breaks its contract (core.records: a field missing or of the wrong type) is not a
finding but bad input, exit 2, as on the main path: neither path can read it.
The amendment chain is checked twice too: by registration.seal and judge.analysis, and by hand from the raw
amendments.jsonl and judgments.jsonl (hash chain, numbering, and the rule that an amendment dated at or
after the first judgment of this run cannot govern it unless marked post hoc); the two must agree.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import sys
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from arms.folder import BINDING, read_binding, registration
from core import jsonl
from core.errors import BadInput, BadRecord
from models.cache import cache_dir
from registration.prereg import Experiment, load_experiment
from registration.questions import load_questions
from registration.rubric import load_rubric, rubric_dir
from registration.seal import verify_seal

from . import second_path
from .analysis import RAW_FILES, anchor, compute_numbers, late_amendments, raw_sha256
from .cost import costs
from .folder import binding_findings
from .rederive import Replies, rederive
from .report import render
from .runinfo import Scope, bound_scope, merged, registered
from .stats.calibration import calibrate
from .stats.rule import Scale

TOL = 1e-9


def _key(v: dict) -> str | None:
    """How a row of a list in numbers.json is named in a mismatch: by id, hypothesis, judges or cell."""
    if "id" in v:
        return str(v["id"])
    if "hypothesis" in v:
        return str(v["hypothesis"])
    if "judges" in v and isinstance(v["judges"], list):
        return " vs ".join(map(str, v["judges"]))
    if "arm" in v and "quant" in v:
        return f"{v['arm']}/{v['quant']}"
    return None


def _leaves(x: Any, path: str = "") -> dict[str, Any]:
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(x, list) and x and all(isinstance(v, dict) and _key(v) for v in x):
        out = {}
        for name, v in zip(_names(x), x, strict=False):
            out.update(_leaves(v, f"{path}[{name}]"))
        return out
    return {path: x}


def _names(rows: list[dict]) -> list[str]:
    """Each row's name; a repeated name gets its occurrence (`H1#2`), so a second entry can never hide the first."""
    seen: dict[str, int] = defaultdict(int)
    out = []
    for v in rows:
        seen[_key(v)] += 1
        out.append(_key(v) if seen[_key(v)] == 1 else f"{_key(v)}#{seen[_key(v)]}")
    return out


def duplicate_names(x: Any, path: str = "") -> list[str]:
    """Every list in numbers.json whose rows repeat a name (hypothesis id, cell, judges): a finding each."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            out += duplicate_names(v, f"{path}.{k}" if path else str(k))
    elif isinstance(x, list) and x and all(isinstance(v, dict) and _key(v) for v in x):
        names = [_key(v) for v in x]
        for name in dict.fromkeys(n for n in names if names.count(n) > 1):
            out.append(f"numbers.json {path}: {names.count(name)} entries are named {name!r}; each must be unique, "
                       "and every entry is compared on its own")
        for v in x:
            out += duplicate_names(v, f"{path}[{_key(v)}]")
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal, floats within TOL (also inside lists, such as a kappa interval)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=False))
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


@dataclass(frozen=True)
class Final:
    """A raw file read by hand under the retry rule: each key's last record, how many records each key
    has, and every breach of the rule (file, line, field)."""

    last: dict[tuple, dict]
    records: dict[tuple, int]
    problems: list[str]


BULK = ("attempts", "calls", "raw_output", "trace", "effective", "settings")  # kept on disk, never recomputed from
# the answer fields verify reads (the main path's records are not imported here)
VERIFY_ANSWER_FIELDS = ("row", "arm", "quant", "question_id", "sample", "status", "text", "truncated")


def _error_kind(rec: dict) -> str:
    """An error record's cause: an answer's `error.kind`, a verdict's last attempt's `error.kind`; else `other`."""
    err = rec.get("error")
    if "attempts" in rec:
        last = (rec["attempts"] or [None])[-1]
        err = last.get("error") if isinstance(last, dict) else None
    return (err.get("kind") if isinstance(err, dict) else None) or "other"


def _kind(j: dict) -> str:
    """What a verdict judged, read by hand: its `kind`, or in a folder written before verdicts carried one, a pair
    label's P (single answers' labels start with L). Never the rubric's name: any name must verify."""
    return j.get("kind") or ("pairwise" if str(j.get("label", "")).startswith("P") else "single")


def by_hand(path: Path, key: tuple[str, ...], fields: tuple[str, ...] | None = None) -> Final:
    """Walk the raw records in file order, keep each key's last one (only `fields` if given, and never the
    BULK fields: 100,000 records' raw outputs need not be held in memory; an error record keeps its cause
    as `error_kind` instead), and check every later record of a key against the one before it: that one
    must be an `error`, and `retry_of` must be its line."""
    last: dict[tuple, tuple[int, dict]] = {}
    records: dict[tuple, int] = defaultdict(int)
    problems: list[str] = []
    for no, rec in jsonl.read(path):
        k = tuple(rec.get(f) for f in key)
        what = " ".join(f"{f}={v}" for f, v in zip(key, k, strict=False))
        retry_of = rec.get("retry_of")
        if k in last:
            line, prev = last[k]
            if prev.get("status") != "error":
                problems.append(f"{path}:{no}: field {key[-1]!r}: a duplicate record of {what}: line {line} already "
                                f"holds its {prev.get('status')!r} record, and only an error record may be "
                                "superseded by a retry")
            if not (type(retry_of) is int and retry_of == line):
                problems.append(f"{path}:{no}: field 'retry_of': reads {retry_of!r}, but the record of {what} it "
                                f"supersedes is at line {line}")
        elif retry_of is not None:
            problems.append(f"{path}:{no}: field 'retry_of': reads {retry_of!r}, but no earlier record of {what} "
                            "exists for it to retry")
        # keys from `fields` or interned: 100,000 records then share one copy of each field name
        kept = {f: rec[f] for f in fields if f in rec} if fields else {sys.intern(f): v for f, v in rec.items()
                                                                     if f not in BULK}
        if rec.get("status") == "error":
            kept["error_kind"] = sys.intern(_error_kind(rec))
        last[k] = (no, kept)
        records[k] += 1
    return Final({k: rec for k, (_, rec) in last.items()}, dict(records), problems)


def independent(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                clusters: dict[str, str | None], answer_rows: Final, verdicts: Final) -> dict:
    """Recompute the numeric heart of numbers.json with plain loops (no judge.analysis code)."""
    keys = {r["label"]: r for _, r in jsonl.read(run_dir / "blinding.jsonl") if r.get("type") == "blinding"}
    judge = run["judge"]["primary"]
    per: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    status: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    kinds: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # (cell, "answer"/"judge") -> kind -> n
    for j in verdicts.last.values():
        if j["judge"] != judge or _kind(j) != "single":
            continue
        k = keys[j["label"]]
        cell = (k["arm"], k["quant"])
        status[cell][j["status"]] += 1
        if j["status"] == "error":
            kinds[(cell, "judge")][j["error_kind"]] += 1
        if j["status"] == "scored":
            per[cell][k["question_id"]].append(j["score"])
            counts[cell][str(j["score"])] += 1
            status[cell]["harmful"] += (j.get("fields") or {}).get("harmful") is True
    answers = defaultdict(lambda: defaultdict(int))
    for k, a in answer_rows.last.items():
        if a["arm"] in run["arms"] and a["question_id"] in questions:
            cell = answers[(a["arm"], a["quant"])]
            cell["n"] += 1
            cell["error"] += a["status"] == "error"
            if a["status"] == "error":
                kinds[((a["arm"], a["quant"]), "answer")][a["error_kind"]] += 1
            cell["retried"] += answer_rows.records[k] > 1
            cell["truncated"] += bool(a.get("truncated"))
            if a["status"] == "ok":
                cell["ok"] += 1
                cell["words"] += len((a.get("text") or "").split())
    marks = defaultdict(lambda: defaultdict(int))
    for k in keys.values():
        marks[(k["arm"], k["quant"])]["scrubbed"] += k["scrubbed"]
        marks[(k["arm"], k["quant"])]["injection"] += k.get("injection", 0) > 0
    qmeans = {cell: {q: Fraction(sum(v), len(v)) for q, v in qs.items()} for cell, qs in per.items()}
    out: dict[str, Any] = {"cells": [], "comparisons": []}
    for c in numbers["cells"]:
        cell = (c["arm"], c["quant"])
        m = qmeans.get(cell, {})
        out["cells"].append({"arm": c["arm"], "quant": c["quant"], "answers": answers[cell]["n"],
                             "answer_errors": answers[cell]["error"], "answer_retries": answers[cell]["retried"],
                             "answer_error_kinds": dict(kinds[(cell, "answer")]),
                             "scored": status[cell]["scored"],
                             "unscored": status[cell]["unscored"], "judge_errors": status[cell]["error"],
                             "judge_error_kinds": dict(kinds[(cell, "judge")]),
                             "harmful": status[cell]["harmful"], "questions_scored": len(m),
                             "score_counts": {v: counts[cell][v] for v in c["score_counts"]},
                             "truncated": answers[cell]["truncated"], "scrubbed": marks[cell]["scrubbed"],
                             "injection_flagged": marks[cell]["injection"],
                             "mean_words": (answers[cell]["words"] / answers[cell]["ok"]
                                            if answers[cell]["ok"] else None),
                             "mean": (math.fsum(m.values()) / len(m)) if m else None})
    an, rule = run["analysis"], exp.analysis.rule
    points = load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)).scale
    lo, hi = min(points), max(points)

    def labels(ids: list[str]) -> list[tuple] | None:
        """Each question's unit: its registered cluster, or itself when it has none; None when none has one."""
        if not any(clusters[q] for q in ids):
            return None
        return [("cluster", clusters[q]) if clusters[q] else ("question", q) for q in ids]

    def registered(ids: list[str]) -> int | None:
        return len({clusters[q] for q in ids if clusters[q]}) if labels(ids) else None

    def check(a_m: dict, b_m: dict, ids: list[str], alpha: float, margin: float, h) -> dict | None:
        if len(ids) < 2:
            return None
        return second_path.comparison([a_m[q] for q in ids], [b_m[q] for q in ids], alpha=alpha, margin=margin,
                                      rule=rule, method=an["method"], resamples=an["resamples"], seed=an["seed"],
                                      scale=(lo, hi, max(exp.arm(h.a).samples, exp.arm(h.b).samples)),
                                      labels=labels(ids))

    for s in numbers["subsets"]:
        h = next(h for h in exp.hypotheses if h.id == s["hypothesis"])
        a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
        tags = sorted({t for q, ts in questions.items() if all(x in ts for x in h.subset) for t in ts} - set(h.subset))
        ids = [q for q, ts in questions.items() if all(x in ts for x in h.subset) and s["tag"] in ts
               and q in a_m and q in b_m]
        chk = check(a_m, b_m, ids, h.alpha / len(tags), h.margin, h)
        out.setdefault("subsets", []).append({"id": s["id"], "tests": len(tags), "paired_questions": ids,
                                              "result": chk and {k: v for k, v in chk.items()
                                                                 if k in (s["result"] or chk)}})
    for c in numbers["comparisons"]:
        h = next(h for h in exp.hypotheses if h.id == c["id"])
        a_m, b_m = qmeans.get((h.a, h.quant), {}), qmeans.get((h.b, h.quant), {})
        ids = [q for q, tags in questions.items() if all(t in tags for t in h.subset) and q in a_m and q in b_m]
        entry: dict[str, Any] = {"id": h.id, "paired_questions": ids}
        if len(ids) >= 2:
            chk = check(a_m, b_m, ids, h.alpha, h.margin, h)
            entry["result"] = {k: v for k, v in chk.items() if k in (c.get("result") or {})}
            lab = labels(ids)
            entry["clusters"] = registered(ids)
            entry["clustered_se"] = (second_path.clustered_se([float(b_m[q] - a_m[q]) for q in ids], lab)
                                     if lab and len(set(lab)) > 1 else None)
            cap = exp.analysis.calibration_ceiling
            cal = calibrate([a_m[q] for q in ids], [b_m[q] for q in ids], h.kind, h.margin, alpha=h.alpha,
                            method=an["method"], resamples=an["resamples"], rule=rule,
                            sims=exp.analysis.calibration_sims, seed=an["seed"],
                            ceiling=float(cap) if cap is not None else 2 * h.alpha, clusters=lab,
                            scale=Scale(*chk["scale"]))
            entry["calibration"] = cal.to_dict()
            rates = []
            for arm in (h.a, h.b):
                cc = next(x for x in out["cells"] if x["arm"] == arm and x["quant"] == h.quant)
                miss = cc["answer_errors"] + cc["unscored"] + cc["judge_errors"]
                rates.append(miss / cc["answers"] if cc["answers"] else 1.0)
            verdict = second_path.verdict(h.kind, h.margin, chk)
            claim = second_path.claims(h.kind, verdict)
            too_few = lab is not None and entry["clusters"] < exp.analysis.min_clusters
            miscalibrated = claim and cal.rate > cal.ceiling
            entry["verdict"] = ("inconclusive" if max(rates) > an["max_unscored"] or too_few or miscalibrated
                                else verdict)
        else:
            entry["verdict"] = "inconclusive"
        out["comparisons"].append(entry)
    return out


def independent_judges(numbers: dict, run: dict, run_dir: Path, questions: dict[str, list[str]], exp,
                       answer_rows: Final, verdicts: Final) -> dict:
    """Per-judge means, agreement (exact, quadratic kappa), length bias and pairwise counts, by plain loops."""
    keys, pairs = {}, {}
    for _, r in jsonl.read(run_dir / "blinding.jsonl"):
        (pairs if r.get("type") == "pair" else keys)[r["label"]] = r
    text = {a["row"]: a.get("text") or "" for a in answer_rows.last.values()}
    judgments = list(verdicts.last.values())
    panel = numbers["judges"]["panel"]
    hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
    out: dict[str, Any] = {"means": {}, "length_bias": {}, "pairwise": {}}
    scored: dict[str, dict[str, int]] = {}
    for name in panel:
        rows = [(keys[j["label"]], j["score"]) for j in judgments if j["judge"] == name
                and _kind(j) == "single" and j["status"] == "scored" and j["label"] in keys]
        scored[name] = {k["label"]: sc for k, sc in rows}
        by_cell: dict[str, list[int]] = defaultdict(list)
        for k, sc in rows:
            by_cell[f"{k['arm']}/{k['quant']}"].append(sc)
        out["means"][name] = {c: math.fsum(v) / len(v) for c, v in by_cell.items()}
        pts = [(k["arm"], k["quant"], len(text.get(k["row"], "").split()), sc) for k, sc in rows]
        lb: dict[str, Any] = {"answers": len(pts), "comparisons": []}
        if len(pts) >= 3 and len({p[2] for p in pts}) > 1 and len({p[3] for p in pts}) > 1:
            lb["length_spearman"] = second_path.pearson(second_path.ranks([p[2] for p in pts]),
                                                        second_path.ranks([p[3] for p in pts]))
        for h in hyps:
            sel = [(p[0] == h.b, math.log1p(p[2]), p[3]) for p in pts if p[1] == h.quant and p[0] in (h.a, h.b)]
            sa, sb = [s for isb, _, s in sel if not isb], [s for isb, _, s in sel if isb]
            entry: dict[str, Any] = {"id": h.id, "raw_difference": None, "length_adjusted_difference": None}
            if sa and sb:
                entry["raw_difference"] = math.fsum(sb) / len(sb) - math.fsum(sa) / len(sa)
                xs = [[1.0, float(isb), ll] for isb, ll, _ in sel]
                xtx = [[math.fsum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
                xty = [math.fsum(x[i] * s for x, (_, _, s) in zip(xs, sel, strict=False)) for i in range(3)]
                beta = second_path.solve3(xtx, xty)
                entry["length_adjusted_difference"] = beta[1] if beta else None
            lb["comparisons"].append(entry)
        out["length_bias"][name] = lb
        if pairs:
            rows_p = []
            verdicts = {j["label"]: j for j in judgments if j["judge"] == name and _kind(j) == "pairwise"}
            for h in hyps:
                per_q: dict[str, list] = defaultdict(list)
                for label, k in pairs.items():
                    if k["hypothesis"] == h.id and label in verdicts:
                        v = verdicts[label]
                        w = None if v["status"] != "scored" else {0: "tie", 1: k["first"], 2: k["second"]}[v["score"]]
                        per_q[k["question_id"]].append(w)
                both = {q: ws for q, ws in per_q.items() if len(ws) == 2 and None not in ws}
                final = [ws[0] if ws[0] == ws[1] else "tie" for ws in both.values()]
                rows_p.append({"hypothesis": h.id, "pairs": len(per_q), "both_orders_scored": len(both),
                               "consistent": sum(ws[0] == ws[1] for ws in both.values()),
                               "wins_b": final.count(h.b), "wins_a": final.count(h.a), "ties": final.count("tie")})
            out["pairwise"][name] = rows_p
    names = sorted(j for j in scored if scored[j])
    if len(names) >= 2:
        common = sorted(set.intersection(*(set(scored[j]) for j in names)))
        scale = [int(v) for v in next(iter(numbers["cells"]))["score_counts"]] if numbers["cells"] else []
        agree = []
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                both = sorted(set(scored[x]) & set(scored[y]))
                a, b = [scored[x][lab] for lab in both], [scored[y][lab] for lab in both]
                if len(a) >= 2:
                    boots = [k for k in second_path.kappa_boots(a, b, scale, exp.analysis.seed) if math.isfinite(k)]
                    agree.append({"judges": [x, y], "answers": len(a),
                                  "exact_agreement": sum(p == q for p, q in zip(a, b, strict=False)) / len(a),
                                  "kappa_quadratic": second_path.kappa_quadratic(a, b, scale),
                                  "kappa_ci95": ([second_path.percentile(boots, q) for q in (2.5, 97.5)]
                                                 if len(boots) > 100 else None)})
        pairable = sorted(lab for lab in set().union(*(scored[j] for j in names))
                          if sum(lab in scored[j] for j in names) >= 2)
        out["agreement"] = {"answers": len(common), "pairs": agree, "pairable_answers": len(pairable),
                            "krippendorff_alpha_ordinal": second_path.alpha_ordinal(
                                [[scored[j].get(lab) for lab in pairable] for j in names]) if pairable else None}
    return out


def _utc(text: Any) -> dt.datetime | None:
    """An ISO 8601 time with its UTC offset, else None: a time without a zone cannot be ordered."""
    try:
        t = dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return t if t.tzinfo else None


def _first_judgment(run_dir: Path, problems: list[str]) -> tuple[dt.datetime, str] | None:
    """The earliest recorded judgment time in the raw judgments.jsonl, parsed (not compared as text)."""
    first = None
    for no, j in jsonl.read(run_dir / "judgments.jsonl"):
        if j.get("time") is None:
            continue
        t = _utc(j["time"])
        if t is None:
            problems.append(f"amendments: {run_dir / 'judgments.jsonl'}:{no}: field 'time': {j['time']!r} is not an "
                            "ISO 8601 time with a UTC offset")
        elif first is None or t < first[0]:
            first = (t, j["time"])
    return first


def amendment_check(exp_dir: Path, run_dir: Path, stored: list[dict]) -> dict[str, Any]:
    """Re-check amendments.jsonl from its raw bytes, by hand, without registration.seal or judge.analysis.

    The chain is rebuilt as registration.seal defines it: amendment 1's `prev` is the sha256 of MANIFEST, each
    later `prev` the sha256 of the previous record in canonical JSON (sorted keys, no spaces, UTF-8).
    The last record has no successor to chain it, so each record is also compared with the
    `amendments` numbers.json was computed from. Returns every finding (`problems`), the line of the
    first break the main seal check would also see (`broken_at`, else None), and the numbers of the
    amendments dated at or after the first judgment and not marked post hoc (`late`).
    """
    path, manifest = exp_dir / "amendments.jsonl", exp_dir / "MANIFEST"
    out: dict[str, Any] = {"problems": [], "broken_at": None, "late": set()}

    def finding(line: int, field: str | None, message: str, chain: bool = False) -> None:
        out["problems"].append(f"amendments: {path}:{line}:{f' field {field!r}:' if field else ''} {message}")
        if chain and out["broken_at"] is None:
            out["broken_at"] = line

    first = _first_judgment(run_dir, out["problems"])
    prev = hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.exists() else None
    prev_line, k = 0, 0
    lines = path.read_bytes().split(b"\n") if path.exists() else [b""]
    for no, raw in enumerate(lines[:-1], start=1):  # the last piece is "" or a partial record a kill left
        if not raw.strip():
            continue
        k += 1
        try:
            rec = jsonl.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:  # ValueError: invalid JSON, or a key repeated in an object
            finding(no, None, f"amendment {k} is not valid JSON ({e}); nothing after it can be chained", chain=True)
            break
        if not isinstance(rec, dict):
            finding(no, None, f"amendment {k} is not a JSON object; nothing after it can be chained", chain=True)
            break
        missing = [f for f in ("date", "text", "prev") if f not in rec]
        for f in missing:
            finding(no, f, f"amendment {k} is missing it; nothing after it can be chained", chain=True)
        if missing:
            break
        link = "MANIFEST" if prev_line == 0 else f"line {prev_line}"
        if prev is None:
            finding(no, "prev", f"amendment {k} cannot be chained: {manifest} is missing", chain=True)
        elif rec["prev"] != prev:
            finding(no, "prev", f"hash chain broken at amendment {k}, the link from {link} to line {no}: expected "
                    f"{prev[:12]}…, found {str(rec['prev'])[:12]}…; {link} was changed after amendment {k} was "
                    "chained to it, or an amendment was inserted or removed here", chain=True)
        if rec.get("n") != k:
            finding(no, "n", f"reads {rec.get('n')!r}, but this is amendment {k} of the chain")
        post_hoc = rec.get("post_hoc", False)
        if not isinstance(post_hoc, bool):
            finding(no, "post_hoc", f"amendment {k} reads {post_hoc!r}; it must be true or false")
        date = _utc(rec["date"])
        if date is None:
            finding(no, "date", f"amendment {k} reads {rec['date']!r}, not an ISO 8601 time with a UTC offset")
        elif first and date >= first[0] and post_hoc is not True:
            out["late"].add(k)
            finding(no, "date", f"amendment {k} is dated {rec['date']}, not before the first judgment of this run "
                    f"({first[1]}), and is not marked post hoc: it cannot govern this run (record such an "
                    "amendment with `judge amend --post-hoc`)")
        if k > len(stored):
            finding(no, None, f"amendment {k} is not in numbers.json: it was added after the numbers were computed")
        else:
            raw_fields = {"n": rec.get("n"), "date": rec["date"], "text": rec["text"], "post_hoc": post_hoc}
            for f, raw_value in raw_fields.items():
                if stored[k - 1].get(f) != raw_value:
                    finding(no, f, f"amendment {k} reads {raw_value!r}, but numbers.json was computed with "
                            f"{stored[k - 1].get(f)!r}")
        prev = hashlib.sha256(json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
                              .encode("utf-8")).hexdigest()
        prev_line = no
    if len(stored) > k:
        out["problems"].append(f"amendments: numbers.json lists {len(stored)} amendment(s), {path} has {k}: "
                               "amendments were removed after the numbers were computed")
    return out


def _disagreement(what: str, main: Any, independent: Any) -> list[str]:
    """A finding when the main path and the independent path reach different results on the same files."""
    if main == independent:
        return []
    return [f"amendments: the two paths disagree on {what}: the main path (registration.seal, judge.analysis) gives "
            f"{main}, the independent plain-Python check gives {independent}"]


def _subset_of(stored: dict, independent_numbers: dict) -> dict:
    """The stored numbers restricted to the fields the independent path recomputes."""
    def restrict(s: Any, r: Any) -> Any:
        if isinstance(r, dict):
            return {k: restrict(s.get(k) if isinstance(s, dict) else None, v) for k, v in r.items()}
        if isinstance(r, list) and r and isinstance(r[0], dict):
            by = (dict(zip(_names(s), s, strict=False))
                  if isinstance(s, list) and all(isinstance(v, dict) and _key(v) for v in s) else {})
            return [restrict(by.get(name, {}), v) for name, v in zip(_names(r), r, strict=False)]
        return s
    return restrict(stored, independent_numbers)


def earlier_rule_findings(numbers: dict, exp) -> list[str]:
    """A folder whose decisions were made by another rule than the one its registration names now (the default
    rule changed: a registration naming none was decided by `bootstrap_and_t` before), or by decision code that
    did not yet know the rubric's scale. verify recomputes with the registered rule only, so a folder can never
    be passed on a rule of the writer's choosing; this line says why its decisions differ and what re-decides
    them."""
    results = [c.get("result") for c in numbers.get("comparisons", []) if isinstance(c.get("result"), dict)]
    rules = sorted({str(r.get("rule")) for r in results if r.get("rule") != exp.analysis.rule})
    if rules:
        return [f"numbers.json: decided by rule {', '.join(rules)}, but the registration's rule is "
                f"{exp.analysis.rule!r} (the default when [analysis] names none; before it, the default was "
                "'bootstrap_and_t'): `judge run` into the folder re-decides it without any model call"]
    if any("scale" not in r for r in results):
        return ["numbers.json: decided by an earlier version of the decision rules (its results record no rubric "
                "scale): `judge run` into the folder re-decides it without any model call"]
    return []


def cost_findings(run: dict, run_dir: Path, exp) -> list[str]:
    """run.json's cost table against the one the raw files and batches.jsonl give (none before costs were kept)."""
    if "cost" not in run:
        return []
    again = {(c["role"], c["name"]): c for c in costs(exp, run["arms"], run["judge"]["panel"],
                                                       set(run["question_ids"]), run_dir)}
    out = []
    for c in run["cost"]:
        other = again.get((c.get("role"), c.get("name")), {})
        for k in sorted(set(c) | set(other)):
            if c.get(k) != other.get(k):
                out.append(f"run.json cost of {c.get('role')} {c.get('name')}: {k} reads {c.get(k)!r}, the raw files "
                           f"and batches.jsonl give {other.get(k)!r}")
    return out


def _json(path: Path) -> Any:
    try:
        return jsonl.loads(path.read_text())
    except jsonl.DuplicateKey as e:
        raise BadInput(path, "appears twice in one JSON object", field=e.key) from None
    except json.JSONDecodeError as e:
        raise BadInput(path, f"not valid JSON: {e}") from None


@dataclass(frozen=True)
class Verification:
    """What `judge verify` found: every mismatch (exit 1 if any), what it could not check (printed, never
    silent), and the folder's anchor (judge.analysis.anchor; None without binding.json)."""

    problems: list[str]
    unchecked: list[str]
    anchor: str | None


def cache_file(path: Path) -> Path:
    """A call cache named on the command line: its folder (BLINDEVAL_CACHE's form) or its calls.sqlite."""
    return Path(path) / "calls.sqlite" if Path(path).is_dir() else Path(path)


def folder_scope(run_dir: Path, run: dict, exp: Experiment) -> tuple[Scope, list[str]]:
    """The scope the folder's binding.json registered. A folder written before folders were bound has none: its
    scope is read from run.json for the checks that follow, and that is a finding of its own."""
    doc = read_binding(run_dir)
    if doc is not None:
        return bound_scope(doc, exp, run_dir / BINDING), []
    judges = {j.name: j for j in exp.judges}
    j = run["judge"]
    scope = Scope(list(run["arms"]), run.get("limit"), list(run["question_ids"]),
                  [judges[n] for n in j.get("panel", [j["primary"]])], j.get("mode", "single"),
                  run.get("label_key") or f"blinding:{exp.seed}:{run['name']}")
    return scope, [f"{run_dir / BINDING}: missing: this folder was written before results folders were bound to "
                   "their registration, so nothing registered its scope (arms, questions, judges) to check it "
                   "complete against, and it has no anchor. Run the experiment into a new folder (no call the cache "
                   "holds is paid for again)"]


def bound_registration(exp: Experiment, scope: Scope, bound: dict | None) -> tuple[dict, frozenset, list[str]]:
    """binding.json's registration entries as the experiment folder gives them now (judge.folder.registration);
    the entries that cannot be computed here (a glue module that does not import on this machine), and why."""
    rubric = load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir))
    kinds = [("single", rubric)] + ([("pairwise", load_rubric("pairwise", rubric_dir("pairwise", exp.dir)))]
                                    if scope.mode != "single" else [])
    rubrics = {(j.name, kind): j.rubric(r) for j in scope.panel for kind, r in kinds}
    try:
        return registration(exp, scope.arms, scope.panel, scope.mode, rubrics), frozenset(), []
    except BadInput as e:  # a glue imported from the Python path that this machine cannot import
        plain = [a for a in scope.arms if not exp.arm(a).glue]
        now = registration(exp, plain, scope.panel, scope.mode, rubrics)
        skipped = frozenset(k for k in (bound or {}) if k not in now and k.startswith(("glue ", "chat template")))
        return now, skipped, [f"{BINDING}: {', '.join(sorted(skipped))}: not compared with the experiment folder: {e}"]


def record_findings(run: dict, expected: dict, path: Path) -> list[str]:
    """run.json against what the binding and the registration give for its registered part (judge.runinfo)."""
    stored, want = _leaves(run), _leaves(expected)
    return [f"{path}: field {k!r}: reads {stored.get(k, '<missing>')!r}, but binding.json and the experiment folder "
            f"give {want[k]!r}" for k in want if k not in stored or not _same(stored[k], want[k])]


def verify(run_dir: Path, exp_dir: Path | None = None, caches: list[Path] | None = None,
           recorded: str | None = None) -> Verification:
    """Every mismatch in a results folder. `caches`: the call caches to compare recorded calls with (None: the
    environment's, BLINDEVAL_CACHE or ~/.cache/blindeval; []: none, reported as unchecked); never the location
    the folder names. `recorded`: the anchor a reviewer recorded when the run finished."""
    run_dir = Path(run_dir)
    for name in ("run.json", "numbers.json", "report.md", *RAW_FILES):
        if not (run_dir / name).exists():
            raise BadInput(run_dir / name, "missing: not a finished results folder")
    run, numbers = (_json(run_dir / name) for name in ("run.json", "numbers.json"))
    exp_dir = Path(exp_dir or run["experiment_dir"])
    digest = anchor(run_dir)
    problems: list[str] = []
    if recorded is not None and recorded != digest:
        problems.append(f"anchor: this folder's anchor is {digest}, not the {recorded} recorded: something a decision "
                        "depends on (binding.json, run.json, the raw files or numbers.json) changed since")
    amend = amendment_check(exp_dir, run_dir, numbers.get("amendments", []))
    try:
        verify_seal(exp_dir)
    except BadInput as e:
        problems.append(f"seal: {e}")
        problems += amend["problems"]
        if Path(e.file).name == "amendments.jsonl":  # otherwise the seal stopped before it read the amendments
            problems += _disagreement("the first broken line of the amendment chain", e.line, amend["broken_at"])
        return Verification(list(dict.fromkeys(problems)), [], digest)
    problems += _disagreement("the first broken line of the amendment chain", None, amend["broken_at"])
    exp = load_experiment(exp_dir)
    scope, unbound = folder_scope(run_dir, run, exp)
    problems += unbound
    now, skipped, unchecked = bound_registration(exp, scope, (read_binding(run_dir) or {}).get("registration"))
    problems += binding_findings(run_dir, exp, now, skipped, amend["late"])
    expected = registered(exp, scope, load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)))
    problems += record_findings(run, expected, run_dir / "run.json")
    run = merged(run, expected)  # from here on the scope, judges and settings are the bound ones, never run.json's
    for name, sha in raw_sha256(run_dir).items():
        if numbers.get("raw_sha256", {}).get(name) != sha:
            problems.append(f"raw file {name}: sha256 {sha[:12]}… differs from the one numbers.json was computed "
                            f"from ({str(numbers.get('raw_sha256', {}).get(name))[:12]}…)")
    all_q = load_questions(exp.set_paths())
    wanted = set(scope.question_ids)
    questions = {q.id: list(q.tags) for q in all_q if q.id in wanted}
    clusters = {q.id: q.cluster for q in all_q}
    answer_rows = by_hand(run_dir / "answers.jsonl", ("row",), VERIFY_ANSWER_FIELDS)
    verdicts = by_hand(run_dir / "judgments.jsonl", ("judge", "label"))
    rule = answer_rows.problems + verdicts.problems
    problems += rule
    if not rule:  # a file that breaks the retry rule has no current records to re-derive: named above
        replies = Replies([cache_file(p) for p in caches] if caches is not None
                               else [cache_dir() / "calls.sqlite"])
        try:
            found, not_checked = rederive(run_dir, run, exp, all_q, scope, replies)
            cache_problems, cache_unchecked = replies.findings()
        finally:
            replies.close()
        problems += found + cache_problems
        unchecked += not_checked + cache_unchecked
    try:
        main = compute_numbers(exp, all_q, run_dir, run)
    except BadRecord:  # a record missing a field cannot be read by either path: bad input, not a finding
        raise
    except BadInput as e:  # the main path refuses the raw files (e.g. the retry rule): nothing to compare with
        problems.append(f"the main path refuses the raw files: {e}")
        return Verification(list(dict.fromkeys(problems + amend["problems"])), unchecked, digest)
    if rule:
        problems.append("retry rule: the two paths disagree: the independent plain-Python check finds the breaches "
                        "above, the main path (core.jsonl.current) accepted the raw files")
    problems += duplicate_names(numbers)
    problems += earlier_rule_findings(numbers, exp)
    problems += diff_numbers(numbers, main, "recomputation from raw files")
    problems += amend["problems"]
    problems += _disagreement("which amendments are dated after the first judgment and not marked post hoc",
                              sorted(a["n"] for a in late_amendments(main)), sorted(amend["late"]))
    ind = independent(numbers, run, run_dir, questions, exp, clusters, answer_rows, verdicts)
    ind["judges"] = independent_judges(numbers, run, run_dir, questions, exp, answer_rows, verdicts)
    totals: dict[str, dict[str, int]] = {}
    for j in verdicts.last.values():
        t = totals.setdefault(f"{j['judge']}/{j.get('rubric', 'correctness')}",
                              {"scored": 0, "unscored": 0, "error": 0, "repaired": 0})
        t[j["status"]] += 1
        t["repaired"] += bool(j.get("repaired"))
    ind["judge_totals"] = totals
    ind["quant_check"] = {"means": {c["arm"]: {} for c in ind["cells"]}}
    for c in ind["cells"]:
        ind["quant_check"]["means"][c["arm"]][c["quant"]] = c["mean"]
    problems += diff_numbers(_subset_of(numbers, ind), ind, "independent plain-Python recomputation")
    problems += cost_findings(run, run_dir, exp)
    expected_report = render(numbers, _json(run_dir / "run.json"), digest).splitlines()
    actual = (run_dir / "report.md").read_text().splitlines()
    for i in range(max(len(expected_report), len(actual))):
        e = expected_report[i] if i < len(expected_report) else "<missing>"
        a = actual[i] if i < len(actual) else "<missing>"
        if e != a:
            problems.append(f"report.md line {i + 1}: reads {a!r}, numbers.json renders {e!r}")
    return Verification(list(dict.fromkeys(problems)), list(dict.fromkeys(unchecked)), digest)
