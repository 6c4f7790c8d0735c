"""numbers.json: every number the report prints, derived only from the raw files.

Scores are averaged over a question's samples first, then over questions. Unscored and errored
answers are counted, never scored; a comparison whose arms are too often unscored is
inconclusive (principle 1, docs/principles.md). Every count is of the final state: each key's current record
under the retry rule (core.jsonl), so an error retried into an answer is not an error.
judge.verify.checks recomputes all of this by a separate path.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from core import jsonl
from core.atomic import write_text
from core.errors import BadInput
from core.records import (
    Judgment,
    KeyRow,
    Numbers,
    judgment_kind,
)
from registration.prereg import Experiment, Hypothesis
from registration.questions import Question

from ..judging.pairwise import summarise
from ..results.files import RETESTS, load_raw, raw_sha256, utc
from . import validity
from .agreement import agreement, length_bias
from .bias_checks import apply_family, panel_verdict, retest_section, self_preference, style_check, unrelated_scores
from .contamination import contamination_section, found, left_out
from .stability import stability_section
from .stats.decide import decide
from .stats.hypothesis import decision
from .stats.paired import Paired, paired
from .stats.rule import Scale, cluster_units
from .stats.t_bounds import clustered_se


def refuse_off_scale(run_dir: Path, points: tuple[int, ...]) -> None:
    """A single answer's scored verdict (judgments.jsonl, retests.jsonl) whose score is not a point of the registered
    rubric's scale is bad input naming file, line and field: the registered parser gives none, so the file was
    edited, and no statistic is computed on it."""
    for path in (run_dir / "judgments.jsonl", run_dir / RETESTS):
        for no, r in jsonl.read(path):
            if judgment_kind(r) == "single" and r.get("status") == "scored" and r.get("score") not in points:
                raise BadInput(path, f"reads {r.get('score')!r}, which is not a point of the rubric's scale "
                               f"{list(points)}", line=no, field="score")


def per_question(keys: list[KeyRow], judgments: list[Judgment],
                 judge: str) -> dict[tuple[str, str], dict[str, Fraction]]:
    """(arm, quant) -> question id -> mean score over that question's scored samples, exact (a Fraction: with K
    samples a mean such as 1/3 must not round before the decision compares a bound with its margin). Only
    single-answer verdicts count, whatever their rubric is called."""
    by_label = {k.label: k for k in keys}
    acc: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for j in judgments:
        if j.judge != judge or j.kind != "single" or j.status != "scored":
            continue
        k = by_label.get(j.label)
        if k is None:
            raise BadInput("judgments.jsonl", f"label {j.label} is not in blinding.jsonl", field="label")
        acc[(k.arm, k.quant)][k.question_id].append(j.score)
    return {cell: {q: Fraction(sum(v), len(v)) for q, v in qs.items()} for cell, qs in acc.items()}


def error_kind(error: Any) -> str:
    """The `kind` of an error dict from models.retry.describe(); rows written before it had one are `other`."""
    return (error.get("kind") if isinstance(error, dict) else None) or "other"


def _kinds(errors: list[Any]) -> dict[str, int]:
    """kind -> count, only the kinds that occur, sorted by kind."""
    out: dict[str, int] = defaultdict(int)
    for e in errors:
        out[error_kind(e)] += 1
    return dict(sorted(out.items()))


def _cells(exp: Experiment, arms: list[str], answers, keys, judgments, judge, scores,
           qids: set[str], retried: frozenset[str]) -> list[dict[str, Any]]:
    by_label = {k.label: k for k in keys}
    status = defaultdict(lambda: defaultdict(int))
    judge_errors: dict[tuple, list[Any]] = defaultdict(list)  # the error of each error verdict's last attempt
    counts = defaultdict(lambda: defaultdict(int))
    words: dict[tuple, list[int]] = defaultdict(list)
    for a in answers:
        if a.status == "ok" and a.question_id in qids:
            words[(a.arm, a.quant)].append(len((a.text or "").split()))
    for j in judgments:
        if j.judge == judge and j.kind == "single" and j.label in by_label:
            k = by_label[j.label]
            status[(k.arm, k.quant)][j.status] += 1
            if j.status == "error":
                judge_errors[(k.arm, k.quant)].append(j.attempts[-1].get("error") if j.attempts else None)
            if j.status == "scored":
                counts[(k.arm, k.quant)][str(j.score)] += 1
            if j.status == "scored" and (j.fields or {}).get("harmful") is True:
                status[(k.arm, k.quant)]["harmful"] += 1
    scrubbed, injection = defaultdict(int), defaultdict(int)
    for k in keys:
        scrubbed[(k.arm, k.quant)] += k.scrubbed
        injection[(k.arm, k.quant)] += k.injection > 0
    cells = []
    for arm in arms:
        for quant in exp.arm(arm).quants:
            rows = [a for a in answers if a.arm == arm and a.quant == quant and a.question_id in qids]
            qs = scores.get((arm, quant), {})
            st = status[(arm, quant)]
            cells.append({
                "arm": arm, "quant": quant,
                "answers": len(rows),
                "answer_errors": sum(a.status == "error" for a in rows),
                "answer_error_kinds": _kinds([a.error for a in rows if a.status == "error"]),
                "answer_retries": sum(a.row in retried for a in rows),
                "truncated": sum(a.truncated for a in rows),
                "scored": st["scored"], "unscored": st["unscored"], "judge_errors": st["error"],
                "judge_error_kinds": _kinds(judge_errors[(arm, quant)]),
                "questions_scored": len(qs),
                "mean": float(sum(qs.values()) / len(qs)) if qs else None,
                "harmful": st["harmful"],
                "scrubbed": scrubbed[(arm, quant)],
                "injection_flagged": injection[(arm, quant)],
                "mean_words": (sum(words[(arm, quant)]) / len(words[(arm, quant)])) if words[(arm, quant)] else None,
                "score_counts": {str(v): counts[(arm, quant)][str(v)] for v in exp_scale(exp)},
            })
    return cells


def exp_scale(exp: Experiment) -> tuple[int, ...]:
    from registration.rubric import load_rubric, rubric_dir

    return load_rubric(exp.rubric, rubric_dir(exp.rubric, exp.dir)).scale


def late_amendments(numbers: dict[str, Any]) -> list[dict[str, Any]]:
    """Amendments written after judging began that do not say so: they cannot govern this run."""
    return [a for a in numbers["amendments"] if not a["before_first_judgment"] and not a["post_hoc"]]


def _unscored_rate(cell: dict[str, Any]) -> float:
    missing = cell["answer_errors"] + cell["unscored"] + cell["judge_errors"]
    return missing / cell["answers"] if cell["answers"] else 1.0


def _paired_block(exp: Experiment, a_scores: dict, b_scores: dict, qs: list[Question], alpha: float,
                  margin: float, scale: Scale) -> tuple[list[str], dict | None]:
    ids = [q.id for q in qs if q.id in a_scores and q.id in b_scores]
    if len(ids) < 2:
        return ids, None
    an = exp.analysis
    labels = cluster_labels(ids, qs)
    p = paired([a_scores[q] for q in ids], [b_scores[q] for q in ids], resamples=an.resamples, seed=an.seed,
                     method=an.method, alpha=alpha, margin=margin, clusters=labels, rule=an.rule, scale=scale)
    return ids, p.to_dict()


def cluster_of(ids: list[str], qs: list[Question]) -> list[str | None] | None:
    """Each question's registered cluster (None for a question without one); None when no question of `ids`
    carries a cluster: then questions are resampled one by one."""
    by_id = {q.id: q for q in qs}
    if not any(by_id[q].cluster for q in ids):
        return None
    return [by_id[q].cluster or None for q in ids]


def cluster_labels(ids: list[str], qs: list[Question]) -> list | None:
    """The resampling unit of each question (judge.numbers.stats.rule.cluster_units): its registered cluster, or, for a
    question without one in a clustered set, the question itself; None when the set declares no cluster."""
    of = cluster_of(ids, qs)
    return None if of is None else cluster_units(of)[0]


def rubric_scale(exp: Experiment, h: Hypothesis, points: tuple[int, ...]) -> Scale:
    """The scale a hypothesis is decided on: the rubric's lowest and highest score, and K, the most samples either
    arm averages per question (a question's mean may be over fewer, when some were unscored)."""
    return Scale(min(points), max(points), max(exp.arm(h.a).samples, exp.arm(h.b).samples))


def compare(h: Hypothesis, exp: Experiment, questions: dict[str, Question], scores, cells,
            scale: Scale) -> dict[str, Any]:
    """One hypothesis decided on the judge's scores (under ``judge_error = "decide"`` with gold, judge.numbers.validity
    .decide_by_gold then puts the gold-corrected verdict in its place)."""
    an = exp.analysis
    a_scores, b_scores = scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {})
    wanted = [q for q in questions.values() if all(t in q.tags for t in h.subset)]
    cell = {(c["arm"], c["quant"]): c for c in cells}
    rates = {h.a: _unscored_rate(cell[(h.a, h.quant)]), h.b: _unscored_rate(cell[(h.b, h.quant)])}
    ids = [q.id for q in wanted if q.id in a_scores and q.id in b_scores]
    out: dict[str, Any] = {"id": h.id, "text": h.text, "a": h.a, "b": h.b, "quant": h.quant, "kind": h.kind,
                           "margin": h.margin, "alpha": h.alpha, "subset": list(h.subset),
                           "questions_in_subset": len(wanted), "paired_questions": ids, "unscored_rate": rates,
                           "result": None, "clusters": None, "clustered_se": None, "calibration": None,
                           "quant_notes": [], "length_notes": []}
    if len(ids) < 2:
        out.update(verdict="inconclusive", reason=f"only {len(ids)} question(s) scored in both arms")
        return out
    a, b = [a_scores[q] for q in ids], [b_scores[q] for q in ids]
    d = decision(a, b, kind=h.kind, margin=h.margin, alpha=h.alpha, scale=scale,
                       cluster_of=cluster_of(ids, wanted), settings=an)
    out.update(result=d.result.to_dict(), clusters=d.clusters, calibration=d.calibration.to_dict())
    if d.clusters is not None and d.result.units > 1:  # one unit: the clustered SE is undefined (deviations cancel)
        out["clustered_se"] = clustered_se([float(y - x) for x, y in zip(a, b, strict=False)],
                                                 [str(u) for u in cluster_labels(ids, wanted)])
    worst = max(rates.values())
    if worst > an.max_unscored:
        who = ", ".join(f"{k} {v:.0%}" for k, v in rates.items())
        out.update(verdict="inconclusive",
                   reason=f"unscored or failed answers ({who}) exceed the registered {an.max_unscored:.0%}; "
                          f"the statistic alone would say: {d.statistic.verdict}")
    else:
        out.update(verdict=d.verdict, reason=d.reason)
    return out


def subset_analyses(h: Hypothesis, exp: Experiment, questions: dict[str, Question], scores,
                    scale: Scale) -> list[dict[str, Any]]:
    """Secondary analyses by question tag, Bonferroni-adjusted over the tags of one hypothesis.

    Exploratory: they never change the registered verdict, and the report says so.
    """
    base = [q for q in questions.values() if all(t in q.tags for t in h.subset)]
    tags = sorted({t for q in base for t in q.tags} - set(h.subset))
    out = []
    for tag in tags:
        qs = [q for q in base if tag in q.tags]
        alpha = h.alpha / len(tags)
        ids, result = _paired_block(exp, scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {}), qs, alpha,
                                    h.margin, scale)
        verdict = "inconclusive" if result is None else decide(Paired(**result), h.kind, h.margin).verdict
        out.append({"id": f"{h.id} [{tag}]", "hypothesis": h.id, "tag": tag, "tests": len(tags),
                    "alpha_adjusted": alpha, "questions": len(qs), "paired_questions": ids, "result": result,
                    "verdict": verdict})
    return out


def quant_check(exp: Experiment, arms: list[str], scores, comparisons: list[dict]) -> dict[str, Any]:
    """Each arm's own score at each quant, and what that means for each comparison: a caution when the effect
    changes sign at another quant, or when the reference arm's own score moves between the quants, on the
    questions both comparisons paired (the hypothesis's subset), by at least half the effect."""
    means: dict[str, dict[str, float | None]] = {}
    for arm in arms:
        means[arm] = {}
        for q in exp.arm(arm).quants:
            s = scores.get((arm, q), {})
            means[arm][q] = float(sum(s.values()) / len(s)) if s else None
    for c in comparisons:
        if c["result"] is None:
            continue
        effect = c["result"]["diff"]
        for o in comparisons:
            if o is c or (o["a"], o["b"], o["subset"]) != (c["a"], c["b"], c["subset"]) or o["result"] is None:
                continue
            other = o["result"]["diff"]
            if effect * other < 0:
                c["quant_notes"].append(f"the effect changes sign at {o['quant']} ({other:+.3f})")
            common = set(c["paired_questions"]) & set(o["paired_questions"])
            if effect == 0 or not common:
                continue
            own, there = scores[(c["a"], c["quant"])], scores[(c["a"], o["quant"])]
            ma, mo = (float(sum(s[q] for q in common) / len(common)) for s in (own, there))
            if abs(mo - ma) >= abs(effect) / 2:
                c["quant_notes"].append(
                    f"{c['a']}'s own score moves {mo - ma:+.3f} from {c['quant']} to {o['quant']}, comparable to the "
                    f"effect {effect:+.3f}: quantisation is a rival explanation")
    return {"means": means}


def amendments(exp: Experiment, first: str | None) -> list[dict[str, Any]]:
    """Each amendment, and whether it was sealed before the first judgment of this run (`first`) existed."""
    from registration.seal import verify_amendments

    start = utc(first, "judgments.jsonl", "time") if first else None
    return [{"n": a["n"], "date": a["date"], "text": a["text"], "post_hoc": bool(a.get("post_hoc")),
             "before_first_judgment": start is None or utc(a["date"], exp.dir / "amendments.jsonl", "date") < start}
            for a in verify_amendments(exp.dir)]


def compute_numbers(exp: Experiment, questions: list[Question], run_dir: Path, run: dict[str, Any],
                    gold=None, earlier_intervals: bool = False, interval: str = "bca") -> dict[str, Any]:
    """`gold`: the run's gold scores (judge.gold.sources.gold_scores), when the experiment registers any: then the judge
    is measured against them and each decision gets its gold-corrected interval (judge.numbers.validity).
    `earlier_intervals`, `interval`: verify recomputing a folder whose judge_validity an earlier version wrote
    (judge.numbers.validity)."""
    raw = load_raw(run_dir)
    points = exp_scale(exp)
    refuse_off_scale(run_dir, points)
    answers, keys, pkeys, judgments = raw.answers, raw.keys, raw.pkeys, raw.judgments
    judge = run["judge"]["primary"]
    panel = run["judge"].get("panel", [judge])
    arms = run["arms"]
    wanted = set(run["question_ids"])
    qmap = {q.id: q for q in questions if q.id in wanted}
    contaminated = found(exp)

    def qs_for(h: Hypothesis) -> dict[str, Question]:  # a hypothesis's questions: under clean_only, the clean ones
        out = left_out(exp, contaminated, h)
        return {k: q for k, q in qmap.items() if k not in out} if out else qmap

    scores = per_question(keys, judgments, judge)
    cells = _cells(exp, arms, answers, keys, judgments, judge, scores, set(qmap), raw.retried_rows)
    hyps = [h for h in exp.hypotheses if h.a in arms and h.b in arms]
    by_judge = {name: scores if name == judge else per_question(keys, judgments, name) for name in panel}
    rule = exp.judge_panel_rule

    def decided_on(h: Hypothesis) -> dict:  # the scores that decide h under the registered panel rule
        return {**scores, **unrelated_scores(exp, h, by_judge)} if rule == "unrelated-mean" else scores

    gold_decides = gold is not None and exp.analysis.judge_error == "decide"

    def decide(h: Hypothesis, s: dict, alpha: float | None = None) -> dict[str, Any]:
        return compare(h if alpha is None else replace(h, alpha=alpha), exp, qs_for(h), s, cells,
                       rubric_scale(exp, h, points))

    comparisons = [decide(h, decided_on(h)) for h in hyps]
    judges = judges_section(exp, panel, answers, keys, pkeys, judgments, hyps)
    for h, c in zip(hyps, comparisons, strict=True):
        wanted_ids = [q.id for q in qs_for(h).values() if all(t in q.tags for t in h.subset)]
        c["self_preference"] = sp = self_preference(h, exp, by_judge, wanted_ids, rubric_scale(exp, h, points),
                                                    {q.id: q.cluster for q in qmap.values()})
        if (by_panel := panel_verdict(rule, c, sp)) is not None:
            c["verdict"], c["reason"] = by_panel[0], f"{by_panel[1]}; {judge} alone: {c['reason']}"
        style_check(c, h, exp.analysis.style, decided_on(h), answers)
    retests = retest_section(
        raw.retests, judgments, points, exp.analysis.seed,
        lambda swap: {h.id: decide(h, per_question(keys, swapped(judgments, judge, swap), judge))["verdict"]
                      for h in hyps},
        judge, {c["id"]: c["verdict"] for c in comparisons} if rule == "primary"
        else {h.id: decide(h, scores)["verdict"] for h in hyps})  # the primary judge's own decisions, compared alike
    if retests is not None:
        judges["retest"] = retests
    def judge_only_at(i: int, alpha: float) -> dict[str, Any]:
        return decide(hyps[i], decided_on(hyps[i]), alpha=alpha)

    # the family steps down on the verdicts that decide: under "decide", the gold-corrected intervals at each level
    family = (validity.decide_family(exp.analysis.family, hyps, comparisons, judge_only_at, gold, keys, scores, qmap,
                                     earlier_intervals)
              if gold_decides else apply_family(exp.analysis.family, comparisons, judge_only_at))
    checked = {} if gold is None else {"judge_validity": validity.apply(exp, gold, keys, judgments, panel, judge, hyps,
                                                                        qmap, scores, comparisons,
                                                                        earlier_intervals, interval)}
    return {
        "schema": Numbers.VERSION,
        "experiment": exp.name,
        "judge": judge,
        "questions": len(qmap),
        "raw_sha256": raw_sha256(run_dir),
        "cells": cells,
        "comparisons": comparisons,
        "subsets": [s for h in hyps for s in subset_analyses(h, exp, qs_for(h), scores, rubric_scale(exp, h, points))],
        "quant_check": quant_check(exp, arms, scores, comparisons),
        "judge_totals": _judge_totals(judgments),
        "amendments": amendments(exp, raw.first_judgment),
        "judges": judges,
        "family": family,
        "panel_rule": rule,
        "stability": stability_section(exp, arms, keys, judgments, judge, qmap, points),
        **checked,
        **contamination_section(exp, contaminated, hyps, qmap, comparisons, lambda h, qs: _paired_block(
            exp, scores.get((h.a, h.quant), {}), scores.get((h.b, h.quant), {}), qs, h.alpha, h.margin,
            rubric_scale(exp, h, points))),
    }


def swapped(judgments: list[Judgment], judge: str, scores: dict[str, int]) -> list[Judgment]:
    """The judgments with `judge`'s scored single verdicts of the labels in `scores` given those scores instead."""
    return [replace(j, score=scores[j.label]) if j.judge == judge and j.kind == "single" and j.status == "scored"
            and j.label in scores else j for j in judgments]


def judges_section(exp: Experiment, panel: list[str], answers, keys, pkeys, judgments,
                   hyps: list[Hypothesis]) -> dict[str, Any]:
    """Per-judge means, agreement between judges, length bias, and pairwise position consistency."""
    by_label = {k.label: k for k in keys}
    text = {a.row: a.text for a in answers}
    scale = exp_scale(exp)
    per_judge: dict[str, dict[str, int]] = {j: {} for j in panel}
    out: dict[str, Any] = {"panel": panel, "means": {}, "length_bias": {}, "pairwise": {}}
    for name in panel:
        points = []
        for j in judgments:
            if j.judge == name and j.kind == "single" and j.status == "scored" and j.label in by_label:
                k = by_label[j.label]
                per_judge[name][j.label] = j.score
                points.append((k.arm, k.quant, len((text.get(k.row) or "").split()), j.score))
        means: dict[str, list[int]] = defaultdict(list)
        for arm, quant, _, score in points:
            means[f"{arm}/{quant}"].append(score)
        out["means"][name] = {cell: sum(v) / len(v) for cell, v in sorted(means.items())}
        out["length_bias"][name] = length_bias(points, [(h.id, h.a, h.b, h.quant) for h in hyps])
        if pkeys:
            out["pairwise"][name] = summarise(hyps, pkeys, judgments, name)
    out["agreement"] = agreement({j: s for j, s in per_judge.items() if s}, scale, exp.analysis.seed)
    return out


def _judge_totals(judgments: list[Judgment]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for j in judgments:
        t = out.setdefault(f"{j.judge}/{j.rubric}", {"scored": 0, "unscored": 0, "error": 0, "repaired": 0})
        t[j.status] += 1
        t["repaired"] += bool(j.repaired)
    return out


def write_numbers(numbers: dict[str, Any], path: Path) -> None:
    write_text(path, Numbers.from_dict(numbers, path).text())


def undecided(numbers: dict[str, Any], max_unscored: float) -> list[str]:
    """One line per registered decision left inconclusive because unscored or failed answers exceed the
    registered `max_unscored`: a registered check that failed, so `judge run` exits 1 and says which."""
    out = []
    for c in numbers["comparisons"]:
        rates = c["unscored_rate"]
        if c["verdict"] == "inconclusive" and max(rates.values()) > max_unscored:
            who = ", ".join(f"{arm} {rate:.0%}" for arm, rate in rates.items())
            out.append(f"{c['id']} decided nothing: unscored or failed answers ({who}) exceed the registered "
                       f"max_unscored of {max_unscored:.0%}")
    return out
