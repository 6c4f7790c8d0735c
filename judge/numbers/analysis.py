"""numbers.json: every number the report prints, derived only from the raw files, built as its contract
(core.records.Numbers) section by section.

Scores are averaged over a question's samples first, then over questions. Unscored and errored
answers are counted, never scored; a comparison whose arms are too often unscored is
inconclusive (principle 1, docs/principles.md). Every count is of the final state: each key's current record
under the retry rule (core.jsonl), so an error retried into an answer is not an error.
judge.verify.checks recomputes all of this by a separate path.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

from core import jsonl
from core.atomic import write_text
from core.errors import BadInput
from core.records import (
    Amendment,
    Comparison,
    JudgesSection,
    Judgment,
    Numbers,
    PairwiseRow,
    RunInfo,
    judgment_kind,
)
from registration.prereg import Experiment, Hypothesis
from registration.questions import Question
from registration.vocabulary import PASS_HAT_K

from ..judging.pairwise import summarise
from ..results.files import RETESTS, load_raw, raw_sha256, utc
from . import validity
from .agreement import agreement, length_bias
from .bias_checks import apply_family, retest_section, self_preference, style_check
from .cells import cells as count_cells
from .cells import exp_scale, judge_totals, per_question
from .comparisons import compare, decided_scale, paired_block, quant_check, rubric_scale, subset_analyses
from .contamination import contamination_section, found, left_out
from .panel_rules import PANEL_RULES
from .registered_comparisons import registered_comparisons
from .stability import pass_hat_k_scores, stability_section


def refuse_off_scale(run_dir: Path, points: tuple[int, ...]) -> None:
    """A single answer's scored verdict (judgments.jsonl, retests.jsonl) whose score is not a point of the registered
    rubric's scale is bad input naming file, line and field: the registered parser gives none, so the file was
    edited, and no statistic is computed on it."""
    for path in (run_dir / "judgments.jsonl", run_dir / RETESTS):
        for no, r in jsonl.read(path):
            if judgment_kind(r) == "single" and r.get("status") == "scored" and r.get("score") not in points:
                raise BadInput(path, f"reads {r.get('score')!r}, which is not a point of the rubric's scale "
                               f"{list(points)}", line=no, field="score")


def late_amendments(numbers: Numbers) -> list[Amendment]:
    """Amendments written after judging began that do not say so: they cannot govern this run."""
    return [a for a in numbers.amendments if not a.before_first_judgment and not a.post_hoc]


def amendments(exp: Experiment, first: str | None) -> list[Amendment]:
    """Each amendment, and whether it was sealed before the first judgment of this run (`first`) existed."""
    from registration.seal import verify_amendments

    start = utc(first, "judgments.jsonl", "time") if first else None
    return [Amendment(n=a["n"], date=a["date"], text=a["text"], post_hoc=bool(a.get("post_hoc")),
                      before_first_judgment=start is None
                      or utc(a["date"], exp.dir / "amendments.jsonl", "date") < start)
            for a in verify_amendments(exp.dir)]


def compute_numbers(exp: Experiment, questions: list[Question], run_dir: Path, run: RunInfo,
                    gold=None, earlier_intervals: bool = False, interval: str = "bca") -> Numbers:
    """`gold`: the run's gold scores (judge.gold.sources.gold_scores), when the experiment registers any: then the judge
    is measured against them and each decision gets its gold-corrected interval (judge.numbers.validity).
    `earlier_intervals`, `interval`: verify recomputing a folder whose judge_validity an earlier version wrote
    (judge.numbers.validity)."""
    raw = load_raw(run_dir)
    points = exp_scale(exp)
    refuse_off_scale(run_dir, points)
    answers, keys, pkeys, judgments = raw.answers, raw.keys, raw.pkeys, raw.judgments
    judge = run.judge.primary
    panel = run.judge.panel or [judge]
    arms = run.arms
    wanted = set(run.question_ids)
    qmap = {q.id: q for q in questions if q.id in wanted}
    contaminated = found(exp)

    def qs_for(h: Hypothesis) -> dict[str, Question]:  # a hypothesis's questions: under clean_only, the clean ones
        out = left_out(exp, contaminated, h)
        return {k: q for k, q in qmap.items() if k not in out} if out else qmap

    scores = per_question(keys, judgments, judge)
    cells = count_cells(exp, arms, answers, keys, judgments, judge, scores, set(qmap), raw.retried_rows)
    hyps = [h for h in exp.hypotheses if h.a in arms and h.b in arms]
    by_judge = {name: scores if name == judge else per_question(keys, judgments, name) for name in panel}
    rule = PANEL_RULES[exp.judge_panel_rule]

    def decided_on(h: Hypothesis) -> dict:  # the scores that decide h under the registered panel rule
        return rule.decided_on(exp, h, scores, by_judge)

    gold_decides = gold is not None and exp.analysis.judge_error == "decide"

    def statistic(h: Hypothesis, s: dict, judged: list[Judgment]) -> dict:  # each question's value h is decided on
        return pass_hat_k_scores(exp, keys, judged, judge) if h.statistic == PASS_HAT_K else s

    def decide(h: Hypothesis, s: dict, alpha: float | None = None, judged: list[Judgment] = judgments) -> Comparison:
        return compare(h if alpha is None else replace(h, alpha=alpha), exp, qs_for(h), statistic(h, s, judged), cells,
                       rubric_scale(exp, h, points))

    judges = judges_section(exp, panel, answers, keys, pkeys, judgments, hyps)
    comparisons = []
    for h in hyps:
        c = decide(h, decided_on(h))
        wanted_ids = [q.id for q in qs_for(h).values() if all(t in q.tags for t in h.subset)]
        sp = self_preference(h, exp, by_judge, wanted_ids, rubric_scale(exp, h, points),
                             {q.id: q.cluster for q in qmap.values()})
        c = replace(c, self_preference=sp)
        if (by_panel := rule.verdict(c, sp)) is not None:
            c = replace(c, verdict=by_panel[0], reason=f"{by_panel[1]}; {judge} alone: {c.reason}")
        comparisons.append(style_check(c, h, exp.analysis.style, decided_on(h), answers))
    retests = retest_section(
        raw.retests, judgments, points, exp.analysis.seed,
        lambda swap: {h.id: decide(h, per_question(keys, swapped(judgments, judge, swap), judge),
                                   judged=swapped(judgments, judge, swap)).verdict for h in hyps},
        judge, {c.id: c.verdict for c in comparisons} if rule.primary_alone
        else {h.id: decide(h, scores).verdict for h in hyps})  # the primary judge's own decisions, compared alike
    if retests is not None:
        judges = replace(judges, retest=retests)

    def judge_only_at(i: int, alpha: float) -> Comparison:
        return decide(hyps[i], decided_on(hyps[i]), alpha=alpha)

    # the family steps down on the verdicts that decide: under "decide", the gold-corrected intervals at each level
    family, comparisons = (
        validity.decide_family(exp.analysis.family, hyps, comparisons, judge_only_at, gold, keys, scores, qmap,
                               earlier_intervals)
        if gold_decides else apply_family(exp.analysis.family, comparisons, judge_only_at))
    checked = None
    if gold is not None:
        checked, comparisons = validity.apply(exp, gold, keys, judgments, panel, judge, hyps, qmap, scores,
                                              comparisons, earlier_intervals, interval)
    subsets = [s for h in hyps for s in subset_analyses(h, exp, qs_for(h), statistic(h, scores, judgments),
                                                        rubric_scale(exp, h, points))]
    by_quant, comparisons = quant_check(exp, arms, scores, comparisons)
    return Numbers(
        schema=Numbers.VERSION,
        experiment=exp.name,
        judge=judge,
        questions=len(qmap),
        raw_sha256=raw_sha256(run_dir),
        cells=cells,
        comparisons=comparisons,
        subsets=subsets,
        quant_check=by_quant,
        judge_totals=judge_totals(judgments),
        amendments=amendments(exp, raw.first_judgment),
        judges=judges,
        family=family,
        panel_rule=rule.name,
        stability=stability_section(exp, arms, keys, judgments, judge, qmap, points),
        judge_validity=checked,
        run_comparisons=registered_comparisons(exp, run_dir, arms, judge, run.judge.rubric, points, qmap,
                                               scores, cells),
        contamination=contamination_section(exp, contaminated, hyps, qmap, comparisons, lambda h, qs: paired_block(
            exp, statistic(h, scores, judgments).get((h.a, h.quant), {}),
            statistic(h, scores, judgments).get((h.b, h.quant), {}), qs, h.alpha, h.margin,
            decided_scale(h, rubric_scale(exp, h, points)))),
    )


def swapped(judgments: list[Judgment], judge: str, scores: dict[str, int]) -> list[Judgment]:
    """The judgments with `judge`'s scored single verdicts of the labels in `scores` given those scores instead."""
    return [replace(j, score=scores[j.label]) if j.judge == judge and j.kind == "single" and j.status == "scored"
            and j.label in scores else j for j in judgments]


def judges_section(exp: Experiment, panel: list[str], answers, keys, pkeys, judgments,
                   hyps: list[Hypothesis]) -> JudgesSection:
    """Per-judge means, agreement between judges, length bias, and pairwise position consistency."""
    by_label = {k.label: k for k in keys}
    text = {a.row: a.text for a in answers}
    scale = exp_scale(exp)
    per_judge: dict[str, dict[str, int]] = {j: {} for j in panel}
    means_of, bias, pairwise = {}, {}, {}
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
        means_of[name] = {cell: sum(v) / len(v) for cell, v in sorted(means.items())}
        bias[name] = length_bias(points, [(h.id, h.a, h.b, h.quant) for h in hyps])
        if pkeys:
            pairwise[name] = [PairwiseRow(**row) for row in summarise(hyps, pkeys, judgments, name)]
    return JudgesSection(panel=panel, means=means_of, length_bias=bias, pairwise=pairwise,
                         agreement=agreement({j: s for j, s in per_judge.items() if s}, scale, exp.analysis.seed))


def write_numbers(numbers: Numbers, path: Path) -> None:
    """numbers.json, checked against its contract as it is written (as every read checks it)."""
    write_text(path, Numbers.from_dict(numbers.to_dict(), path).text())


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
